"""Every public function that takes a table takes polars, pandas and pyarrow frames alike, and refuses anything
else with one ``TypeError`` naming the function, the parameter and what it accepts (issue 35;
``docs/guide/python.md#data-frames``).

The inventory is walked here from the packages' exports: a new public function with a frame parameter fails
:func:`test_every_frame_parameter_is_declared` until it is decorated with ``frame_inputs``, and
:func:`test_every_frame_function_has_a_case` until it has a case below.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from tutormetrics.frames import frame_params, to_polars

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

#: The packages whose exports are the public Python API.
PACKAGES = (
    "tutormetrics", "tutormetrics.engine", "tutormetrics.validity", "tutormetrics.psychometrics", "tutormetrics.stats",
    "tutormetrics.metrics", "tutormetrics.dialogue", "tutormetrics.runs", "tutormetrics.report",
    "tutormetrics.datasets",
)  # fmt: skip


def _mentions_frame(func: Callable[..., Any], annotation: object) -> bool:
    """Whether a parameter's annotation names a DataFrame, directly or through an alias (``RatingsLike``)."""
    if annotation is inspect.Parameter.empty:
        return False
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if "DataFrame" in text or "LazyFrame" in text:
        return True
    try:
        resolved = eval(text, inspect.unwrap(func).__globals__)
    except (NameError, AttributeError, TypeError, SyntaxError):  # a name imported only for type checking
        return False
    return "DataFrame" in repr(resolved)


def _public_callables() -> dict[str, Callable[..., Any]]:
    """``package.name`` (or ``package.Class.method``) → every exported function and public method."""
    found: dict[str, Callable[..., Any]] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):  # a submodule of the export's name, imported since (ppi_table): the export
                obj = getattr(importlib.import_module(f"{package}.{module._EXPORTS[name]}"), name)
            if inspect.isclass(obj):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("tutormetrics"):
                        continue
                    for attr, value in vars(klass).items():
                        if attr.startswith("_") and attr not in ("__init__", "__call__"):
                            continue
                        if attr == "__init__" and dataclasses.is_dataclass(klass):
                            continue  # a result's fields: frames the package built (docs/guide/python.md#data-frames)
                        func = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
                        if inspect.isfunction(func):
                            found.setdefault(f"{package}.{name}.{attr}", func)
            elif inspect.isfunction(obj):
                found[f"{package}.{name}"] = obj
    return found


def _frame_parameters() -> dict[str, list[str]]:
    """Each public callable with frame parameters → their names."""
    out: dict[str, list[str]] = {}
    for key, func in _public_callables().items():
        names = [n for n, p in inspect.signature(func).parameters.items() if _mentions_frame(func, p.annotation)]
        if names:
            out[key] = names
    return out


INVENTORY = _frame_parameters()


def test_the_inventory_finds_the_known_functions() -> None:
    for key in ("tutormetrics.validity.correlate_with_targets", "tutormetrics.psychometrics.agreement_table",
                "tutormetrics.psychometrics.Ratings.clean", "tutormetrics.stats.compare_groups",
                "tutormetrics.engine.ScoreBatch.score_frame"):
        assert key in INVENTORY, key
    assert INVENTORY["tutormetrics.validity.validate_metrics"] == ["metrics", "ratings", "theta", "fit_tables"]


@pytest.mark.parametrize("key", sorted(INVENTORY))
def test_every_frame_parameter_is_declared(key: str) -> None:
    """A public function's frame parameters all go through ``frame_inputs`` (a new one must be decorated)."""
    declared = {p.name for p in frame_params(_public_callables()[key])}
    missing = [n for n in INVENTORY[key] if n not in declared]
    assert not missing, f"{key}: {missing} take a frame but are not in its @frame_inputs(...)"


# --- the cases: a small valid call of every function, with polars frames ------------------------------------------


def _ratings() -> tuple[pl.DataFrame, pl.DataFrame]:
    from tutormetrics.psychometrics import simulate_mfrm

    return simulate_mfrm(n_items=24, seed=1, gamma=[0.4, 0.3, 0.5, 0.2, 0.6])


def _metrics() -> pl.DataFrame:
    ids = [f"ex{i:02d}" for i in range(24)]
    return pl.DataFrame({"exchange_id": ids, "resp_words": [float((i * 7) % 11) for i in range(24)],
                         "jaccard_1": [float((i * 5) % 7) / 7 for i in range(24)]})


def _targets() -> pl.DataFrame:
    return pl.DataFrame({"exchange_id": [f"ex{i:02d}" for i in range(24)], "y": [float(i % 4) for i in range(24)]})


def _table() -> pl.DataFrame:
    from tutormetrics.validity import correlate_with_targets

    table = correlate_with_targets(_metrics(), [_targets()], ci="none").table
    missing = [c for c in table.columns if table[c].null_count() or (table[c].dtype.is_float() and table[c].is_nan().any())]
    return table.drop(missing)  # pandas has NaN for both; it reads back as null (docs/guide/python.md#data-frames)


def _dialogues() -> pl.DataFrame:
    rows = [(f"c{c}", t, "student" if t % 2 else "tutor", f"Why is {c + t} odd? Tell me more about {t}.")
            for c in range(3) for t in range(1, 5)]
    return pl.DataFrame(rows, schema=["conversation_id", "turn", "role", "text"], orient="row")


def _paired() -> pl.DataFrame:
    n = 12
    return pl.DataFrame({"conversation_id": [str(i) for i in range(n)] * 2, "tutor": ["A"] * n + ["B"] * n,
                         "len": [float(i) for i in range(n)] + [float(i) + 0.5 + (i % 3) for i in range(n)]})


def _judged() -> tuple[pl.DataFrame, pl.DataFrame]:
    long, _ = _ratings()
    judge = long.filter(pl.col("rater") == "r1").with_columns(pl.lit("J").alias("rater"))
    human = long.filter((pl.col("rater") == "r2") & (pl.col("exchange_id") < "ex12"))
    return judge, human


def _case(key: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """``(callable, args, kwargs)``: a small valid call of ``key`` with polars frames."""
    from tutormetrics import engine, runs, stats, validity
    from tutormetrics import psychometrics as ps
    from tutormetrics.dialogue import score_dialogues
    from tutormetrics.psychometrics.ppi_table import ppi_table  # the package's attribute may be the module (see above)
    from tutormetrics.validity.predict_study import predict_study

    long, truth = _ratings()
    cov = truth.select("exchange_id", "v")
    cases: dict[str, Callable[[], tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]] = {
        "tutormetrics.engine.ScoreBatch.score_frame": lambda: (
            engine.ScoreBatch({"metrics": "length"}).score_frame,
            (pl.DataFrame({"prompt": ["Why?", "How?"], "response": ["Because it is.", "Like this, see?"]}),), {}),
        "tutormetrics.validity.ValidateOptions.clean_ratings": lambda: (
            validity.ValidateOptions().clean_ratings, (long,), {"id_col": "exchange_id", "source": "ratings"}),
        "tutormetrics.validity.correlate_with_targets": lambda: (
            validity.correlate_with_targets, (_metrics(), [_targets()]), {"ci": "none"}),
        "tutormetrics.validity.estimate_theta_targets": lambda: (validity.estimate_theta_targets, (long,), {}),
        "tutormetrics.validity.join_targets": lambda: (
            validity.join_targets, (_metrics(), _targets(), _targets().rename({"y": "z"})), {}),
        "tutormetrics.validity.plot_heatmap": lambda: (validity.plot_heatmap, (_table(),), {}),
        "tutormetrics.validity.predict_study": lambda: (
            predict_study, (_metrics().with_columns((pl.int_range(24) // 3).cast(pl.String).alias("conversation_id")),),
            {"group_col": "conversation_id", "ratings": long, "theta": [truth.select("exchange_id", "theta")],
             "options": validity.PredictOptions(folds=2, ci="none", n_min=3)}),
        "tutormetrics.validity.rho_matrix": lambda: (validity.rho_matrix, (_table(),), {}),
        "tutormetrics.validity.spearman_matrix": lambda: (
            validity.spearman_matrix, (_metrics().join(_targets(), on="exchange_id"), ["resp_words"], ["y"]),
            {"ci": "none"}),
        "tutormetrics.validity.validate_metrics": lambda: (
            validity.validate_metrics, (_metrics(),),
            {"ratings": long, "theta": [truth.select("exchange_id", "theta")],
             "options": validity.ValidateOptions(estimate_theta=False, ci="none")}),
        "tutormetrics.psychometrics.Ratings.clean": lambda: (ps.Ratings.clean, (long,), {}),
        "tutormetrics.psychometrics.agreement_study": lambda: (
            ps.agreement_study, (ps.Ratings.clean(long),),
            {"metrics": _metrics().with_columns((pl.int_range(24) // 3).cast(pl.String).alias("conversation_id")),
             "options": ps.AgreeOptions(cluster_col="conversation_id", n_resamples=50)}),
        "tutormetrics.psychometrics.agreement_table": lambda: (ps.agreement_table, (long,), {"n_resamples": 50}),
        "tutormetrics.psychometrics.judge_table": lambda: (
            ps.judge_table, (long.with_columns(pl.col("rater").replace({"r1": "J"})), "J"), {"n_resamples": 50}),
        "tutormetrics.psychometrics.ppi_table": lambda: (ppi_table, _judged(), {}),
        "tutormetrics.psychometrics.ppi_plan_table": lambda: (ps.ppi_plan_table, _judged(), {"half_width": 0.2}),
        "tutormetrics.psychometrics.fit_mfrm": lambda: (ps.fit_mfrm, (long,), {"covariates": cov}),
        "tutormetrics.psychometrics.fit_theta": lambda: (ps.fit_theta, (long,), {}),
        "tutormetrics.psychometrics.ratings_to_targets": lambda: (ps.ratings_to_targets, (long,), {}),
        "tutormetrics.psychometrics.theta_study": lambda: (
            ps.theta_study, (ps.Ratings.clean(long),), {"covariates": cov}),
        "tutormetrics.psychometrics.wide_ratings_to_targets": lambda: (
            ps.wide_ratings_to_targets, (long.pivot("criterion", index=["exchange_id", "rater"], values="score"),),
            {"rater_col": "rater"}),
        "tutormetrics.stats.aggregate_rates": lambda: (
            stats.aggregate_rates, (pl.DataFrame({"q": ["q1"] * 4 + ["q2"] * 2, "lab": [1, 0, 1, -1, 0, 1]}),),
            {"options": stats.AggregateOptions(by=["q"], na=[-1.0])}),
        "tutormetrics.stats.compare_groups": lambda: (
            stats.compare_groups, (_paired(),), {"group_col": "tutor", "block_col": "conversation_id",
                                                 "n_resamples": 0}),
        "tutormetrics.stats.compare_study": lambda: (
            stats.compare_study, (_paired(),), {"options": stats.CompareOptions(n_resamples=0)}),
        "tutormetrics.stats.trial_variability": lambda: (
            stats.trial_variability,
            (pl.DataFrame({"item": [1, 1, 2, 2, 3, 3], "trial": [1, 2] * 3, "total": [10., 11., 14., 14., 8., 9.]}),),
            {}),
        "tutormetrics.dialogue.score_dialogues": lambda: (score_dialogues, (_dialogues(),), {"metrics": "length"}),
        "tutormetrics.runs.dialogue_ratings_key": lambda: (
            runs.dialogue_ratings_key, (pl.DataFrame({"conversation_id": ["c1"], "score": [1]}), "exchange_id", "r.csv"),
            {}),
    }  # fmt: skip
    return cases[key]() if key in cases else (None, (), {})  # type: ignore[return-value]


def test_every_frame_function_has_a_case() -> None:
    """A new public function with a frame parameter needs a case above (so that the tests below call it)."""
    missing = [key for key in INVENTORY if _case(key)[0] is None]
    assert not missing, f"add a case for {missing}"


def _as(kind: str, value: Any) -> Any:
    """``value`` with every polars frame in it as a frame of ``kind`` (the frames round-trip exactly)."""
    if isinstance(value, pl.DataFrame):
        out = value.to_pandas() if kind == "pandas" else value.to_arrow() if kind == "pyarrow" else value.lazy()
        assert to_polars(out).equals(value), "a case's frame must round-trip exactly"
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(_as(kind, v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """A comparable picture of a result: frames as their schema and rows, arrays as lists, NaN as a marker."""
    if isinstance(value, pl.DataFrame):
        return ("frame", str(value.schema), _plain(value.to_dict(as_series=False)))
    if isinstance(value, pl.Series):
        return ("series", str(value.dtype), _plain(value.to_list()))
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), _plain(value.tolist()))
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if type(value).__name__ == "Figure":  # a heatmap: its cells and labels
        axes = value.axes[0]
        return [_plain(np.asarray(axes.images[0].get_array())), [t.get_text() for t in axes.texts],
                [t.get_text() for t in axes.get_xticklabels()], [t.get_text() for t in axes.get_yticklabels()]]
    return value


def _close(value: Any) -> None:
    if type(value).__name__ == "Figure":
        import matplotlib.pyplot as plt

        plt.close(value)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("kind", ["pandas", "pyarrow", "lazy"])
@pytest.mark.parametrize("key", sorted(INVENTORY))
def test_pandas_and_pyarrow_frames_give_the_polars_result(key: str, kind: str) -> None:
    if key.endswith("plot_heatmap"):
        pytest.importorskip("matplotlib")
    func, args, kwargs = _case(key)
    expected = func(*args, **kwargs)
    func, args, kwargs = _case(key)
    got = func(*_as(kind, args), **{k: _as(kind, v) for k, v in kwargs.items()})
    assert _plain(got) == _plain(expected)
    _close(got)
    _close(expected)


def _bad_calls() -> list[tuple[str, str, str]]:
    return [(key, name, bad) for key, names in sorted(INVENTORY.items()) for name in names for bad in ("list", "array")]


@pytest.mark.parametrize(("key", "name", "bad"), _bad_calls())
def test_anything_else_is_a_clear_type_error(key: str, name: str, bad: str) -> None:
    """A list or an array where a frame goes: ``TypeError: <function>: <param> must be a polars, pandas or
    pyarrow data frame…, got list`` before any work."""
    func, args, kwargs = _case(key)
    param = next(p for p in frame_params(func) if p.name == name)
    value: Any = [1, 2] if bad == "list" else np.array([1, 2])
    if bad == "list" and list in param.also:
        pytest.skip(f"{key}: {name} takes a list (of Conversation)")
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.arguments[name] = (value,) if param.star else value
    where = rf"{re.escape(inspect.unwrap(getattr(func, '__func__', func)).__qualname__)}: {name}(\[0\])? must be (a|a list of) polars, pandas or pyarrow data frame"
    with pytest.raises(TypeError, match=where) as caught:
        func(*bound.args, **bound.kwargs)
    assert caught.value.args[0].endswith(("got list", "got numpy.ndarray", "got int"))
    assert "\n" not in caught.value.args[0]


def test_a_pandas_index_with_a_name_is_a_column() -> None:
    frame = pd.DataFrame({"exchange_id": ["a", "b"], "x": [1.0, 2.0]})
    assert to_polars(frame.set_index("exchange_id")).columns == ["exchange_id", "x"]
    assert to_polars(frame.iloc[1:]).columns == ["exchange_id", "x"]  # an unnamed index is not a column
    assert to_polars(pa.record_batch({"x": [1]})).columns == ["x"]


def test_a_single_frame_where_a_list_goes_is_named() -> None:
    from tutormetrics.validity import correlate_with_targets

    with pytest.raises(TypeError, match=r"correlate_with_targets: targets must be a list of polars, pandas or "
                                        r"pyarrow data frames, got pandas.DataFrame"):
        correlate_with_targets(_metrics(), _targets().to_pandas())


def test_the_guide_validates_from_pandas_frames() -> None:
    """The ``docs/guide/python.md#data-frames`` example runs: pandas in, polars out."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "python.md").read_text(encoding="utf8")
    section = guide.split("## Data frames", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/guide/python.md", "exec"), namespace)  # the guide's own example
    assert isinstance(namespace["metrics"], pd.DataFrame) and isinstance(namespace["ratings"], pd.DataFrame)
    table = namespace["study"].validity.table
    assert isinstance(table, pl.DataFrame) and table.height > 0
    assert isinstance(table.to_pandas(), pd.DataFrame)
