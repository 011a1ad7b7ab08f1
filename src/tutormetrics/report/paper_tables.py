"""Paper tables for every table command: ``-o x.md`` and ``-o x.tex`` (``docs/guide/paper.md#tables``).

The format comes from the extension (``.csv``, ``.parquet``, ``.jsonl``, ``.md``, ``.markdown``, ``.tex``).
A *layout* maps one command's CSV to the columns a paper shows (rows follow the CSV; ``a [l, h]`` is one
cell); the numbers follow :func:`~tutormetrics.report.tables.number_text`'s rules. ``md`` is a GitHub pipe
table, a blank line and pandoc's ``Table: <caption>``; ``tex`` is a ``table`` float with ``\\caption``,
``\\label{tab:<stem>}`` and a booktabs ``tabular`` (text columns ``l``, numbers ``r``). User text (headers,
names, levels, contrasts, reason codes, captions) is escaped; numbers are not. Data tables (``score -o``,
``theta -o``, ``aggregate -o``, ``--totals-out``, ``--units-out``) refuse ``.md``/``.tex``:
:func:`write_data_table`.

Example:
    >>> t = pl.DataFrame({"criterion": ["i1"], "rater": ["r1"], "n": [249], "endorsed": [70], "rate": [0.2811],
    ...                   "top_score": [1.0]})
    >>> print(render_paper_table(t, "md", kind="per_rater"))
    | criterion | rater | n | endorsed | rate | top score |
    |---|---|---|---|---|---|
    | i1 | r1 | 249 | 70 | 0.281 | 1 |
    <BLANKLINE>
    Table: Endorsement per criterion and rater: ratings at the top score of the rater's non-missing ratings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.errors import ConfigError
from tutormetrics.io.tables import write_table
from tutormetrics.report.paper import paper_table
from tutormetrics.report.tables import number_text, render_rows, write_text

__all__ = [
    "PAPER_KINDS", "paper_format", "render_paper_table", "table_kind", "without_negative_zero", "write_data_table",
    "write_paper_table",
]  # fmt: skip

_FORMATS = {".md": "md", ".markdown": "md", ".tex": "tex", ".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl"}


@dataclass(frozen=True)
class Column:
    """One column of a layout: its header (md symbols; tex gets them as math), how a CSV row fills it, and
    whether it holds numbers (right-aligned, written as produced) or user text (left-aligned, escaped)."""

    header: str
    cell: Callable[[Mapping[str, Any]], str]
    numeric: bool = True


Layout = tuple[list[Column], str]


def _num(col: str, rule: str = "3") -> Callable[[Mapping[str, Any]], str]:
    return lambda r: number_text(r.get(col), rule)


def _text(col: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda r: "" if r.get(col) is None else str(r.get(col))


def _interval(est: str, lo: str, hi: str) -> Callable[[Mapping[str, Any]], str]:
    """``est [lo, hi]``; the estimate alone without an interval; empty without an estimate."""

    def cell(r: Mapping[str, Any]) -> str:
        e, low, high = number_text(r.get(est)), number_text(r.get(lo)), number_text(r.get(hi))
        return f"{e} [{low}, {high}]" if e and low and high else e

    return cell


def _with_se(est: str, se: str) -> Callable[[Mapping[str, Any]], str]:
    def cell(r: Mapping[str, Any]) -> str:
        e, s = number_text(r.get(est)), number_text(r.get(se))
        return f"{e} ({s})" if e and s else e

    return cell


def _n_range(table: pl.DataFrame, col: str = "n") -> str:
    if col not in table.columns or table[col].drop_nulls().len() == 0:
        return ""
    lo, hi = int(table[col].min()), int(table[col].max())  # type: ignore[arg-type]
    return f"n = {lo:,}" if lo == hi else f"n = {lo:,}–{hi:,}"


def _first(table: pl.DataFrame, col: str, default: Any = None) -> Any:
    if col not in table.columns:
        return default
    values = table[col].drop_nulls()
    return values[0] if values.len() else default


# ---------------------------------------------------------------------------------------------- layouts


def _validate_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    """``validate -o``: the ρ matrix, one column per target, ρ with its stars."""
    target = pl.col("target").cast(pl.String)
    if "control" in table.columns:
        ctrl = pl.col("control").fill_null("")
        target = pl.when(ctrl == "").then(target).otherwise(target + " | " + ctrl.str.replace_all(",", ", "))
    long = table.with_columns(target.alias("_target"))
    targets = long["_target"].unique(maintain_order=True).to_list()
    rows: dict[str, dict[str, Any]] = {}
    for r in long.iter_rows(named=True):
        rows.setdefault(str(r["metric"]), {"metric": r["metric"]})[r["_target"]] = number_text(r.get("rho")) + (r.get("stars") or "")
    columns = [Column("metric", _text("metric"), numeric=False)]
    columns += [Column(str(t), lambda r, t=t: r.get(t, "")) for t in targets]
    adjust = _first(table, "adjust", "")
    caption = (f"Spearman ρ between each metric and each target ({_n_range(table)}); stars: p_adj"
               f"{f' ({adjust})' if adjust else ''} < .05, .01, .001.")  # fmt: skip
    return columns, list(rows.values()), caption


def _facets_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    method = str(context.get("method", "mml")).lower()
    draws = context.get("n_draws", 4000)
    columns = [Column("facet", _text("facet"), False), Column("level", _text("level"), False),
               Column("estimate [94% interval]", _interval("estimate", "lower", "upper")), Column("SE", _num("se"))]  # fmt: skip
    ref = _first(table.filter(pl.col("facet") == "baseline_probability") if "facet" in table.columns else table, "reference", "")
    if method == "nuts":
        what = "posterior mean [94% HDI] and posterior SD (NUTS)"
        base = "baseline probabilities as posterior means"
    else:
        what = "mode [94% Wald interval] and SE (MML)"
        base = f"baseline probabilities as the mean [94% HDI] and SD over {draws} MML draws from N(mode, H^-1), seed {context.get('seed', 0)}"
    caption = f"Facet estimates of the many-facet Rasch model: {what}; {base}" + (f" at {ref}." if ref else ".")
    return columns, table.to_dicts(), caption


def _effects_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    columns = [
        Column("effect", _text("effect"), False), Column("term", _text("term"), False),
        Column("criterion", _text("criterion"), False), Column("P_ref", _num("p_ref")),
        Column("ΔP [94% HDI]", _interval("delta_p_mean", "hdi_low", "hdi_high")), Column("P(ΔP > 0)", _num("p_gt_zero")),
        Column("HDI excludes 0", _num("hdi_excl_zero", "bool"), False), Column("reason", _text("reason"), False),
    ]  # fmt: skip
    ref = str(_first(table, "reference", "the reference point"))
    method = str(_first(table, "method", "mml"))
    draws = int(_first(table, "n_draws", 0) or 0)
    if method == "nuts":
        how = f"mean and 94% HDI over {draws} NUTS posterior draws"
    else:
        how = f"mean and 94% HDI over {draws} MML draws from N(mode, H^-1), seed {context.get('seed', 0)}"
    return columns, table.to_dicts(), f"ΔP at {ref}: {how}."


def _compare_models_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    def good_k(r: Mapping[str, Any]) -> str:
        v = r.get("share_k_ok")
        return "" if v is None else number_text(100 * float(v), "1")

    columns = [
        Column("model", _text("model"), False), Column("terms", _text("terms"), False),
        Column("elpd_loo (SE)", _with_se("elpd_loo", "se")), Column("p_loo", _num("p_loo")),
        Column("Δelpd vs ref (SE)", _with_se("delta_elpd_ref", "delta_elpd_ref_se")), Column("weight", _num("weight")),
        Column("good Pareto k (%)", good_k), Column("warning", _flag_or_text("warning"), False),
    ]  # fmt: skip
    ref = _first(table, "ref_model", "")
    points = _first(table, "n_points")
    caption = (f"Model comparison by PSIS-LOO{f' over {int(points):,} ratings' if points is not None else ''}, best first; "
               f"Δelpd against {ref} (> 0 = better); good Pareto k: the share of ratings with k below the threshold.")  # fmt: skip
    return columns, table.to_dicts(), caption


def _flag_or_text(col: str) -> Callable[[Mapping[str, Any]], str]:
    def cell(r: Mapping[str, Any]) -> str:
        v = r.get(col)
        return number_text(v, "bool") if isinstance(v, bool) else ("" if v is None else str(v))

    return cell


def _agree_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    columns = [
        Column("criterion", _text("criterion"), False), Column("units", _num("n_units", "int")),
        Column("raters", _num("n_raters", "int")), Column("exact", _num("exact")), Column("Fleiss κ", _num("fleiss_kappa")),
        Column("α [95% CI]", _interval("krippendorff_alpha", "alpha_ci_low", "alpha_ci_high")), Column("AC1", _num("gwet_ac1")),
        Column("κ [95% CI]", _interval("kappa", "kappa_ci_low", "kappa_ci_high")), Column("PABAK", _num("pabak")),
        Column("PI", _num("prevalence_index")), Column("BI", _num("bias_index")), Column("reason", _text("reason"), False),
    ]  # fmt: skip
    pair = ""
    if _first(table, "rater_b") is not None:
        pair = f"; two-rater columns (κ, PABAK, PI, BI): {_first(table, 'rater_a')} vs {_first(table, 'rater_b')}"
    caption = (f"Inter-rater agreement per criterion: exact agreement, Fleiss κ, Krippendorff's α (nominal) with a 95% "
               f"bootstrap CI, Gwet's AC1{pair}.")  # fmt: skip
    return columns, table.to_dicts(), caption


def _judge_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    def bowker(r: Mapping[str, Any]) -> str:
        chi2, df = number_text(r.get("bowker_chi2")), number_text(r.get("bowker_df"), "int")
        return f"{chi2} ({df})" if chi2 and df else chi2

    columns = [
        Column("judge", _text("judge"), False), Column("criterion", _text("criterion"), False),
        Column("reference", _text("reference"), False), Column("n", _num("n", "int")), Column("accuracy", _num("accuracy")),
        Column("κ [95% CI]", _interval("cohen_kappa", "kappa_ci_low", "kappa_ci_high")), Column("mean judge", _num("mean_judge")),
        Column("mean ref", _num("mean_ref")), Column("Δ mean [95% CI]", _interval("mean_diff", "diff_ci_low", "diff_ci_high")),
        Column("% max judge", _num("pct_max_judge", "1")), Column("% max ref", _num("pct_max_ref", "1")),
        Column("over", _num("over_rate")), Column("under", _num("under_rate")), Column("sign p", _num("sign_p", "p")),
        Column("Bowker χ² (df)", bowker), Column("Bowker p", _num("bowker_p", "p")), Column("reason", _text("reason"), False),
    ]  # fmt: skip
    caption = ("LLM judge against each human and the human majority: agreement, leniency (Δ mean = judge − reference, "
               "95% bootstrap CI; % of the scale's maximum), the sign test and Bowker's symmetry test; (all) pools the "
               "criteria, resampling units.")  # fmt: skip
    return columns, table.to_dicts(), caption


def _per_rater_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    columns = [Column("criterion", _text("criterion"), False), Column("rater", _text("rater"), False),
               Column("n", _num("n", "int")), Column("endorsed", _num("endorsed", "int")), Column("rate", _num("rate")),
               Column("top score", _num("top_score", "g"))]  # fmt: skip
    caption = "Endorsement per criterion and rater: ratings at the top score of the rater's non-missing ratings."
    return columns, table.to_dicts(), caption


def _compare_strata(table: pl.DataFrame) -> list[str]:
    cols = table.columns[: table.columns.index("metric")] if "metric" in table.columns else []
    return [c for c in cols if c not in ("dimension", "dimension_value")]


def _compare_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    def contrast(r: Mapping[str, Any]) -> str:
        if r.get("test") == "friedman":
            return f"Friedman (k = {number_text(r.get('k'), 'int')})"
        return f"{r.get('group_a')} vs {r.get('group_b')}"

    def effect(r: Mapping[str, Any]) -> str:
        if r.get("test") == "friedman":
            chi2, w = number_text(r.get("chi2")), number_text(r.get("kendall_w"))
            return f"χ² = {chi2}, W = {w}" if chi2 else ""
        return _interval("r_rb", "ci_low", "ci_high")(r)

    columns = [Column(c, _text(c), False) for c in _compare_strata(table)]
    if "dimension_value" in table.columns:
        columns.append(Column("dimension_value", _text("dimension_value"), False))
    columns += [
        Column("metric", _text("metric"), False), Column("contrast", contrast, False), Column("n", _num("n", "int")),
        Column("r_rb [95% CI]", effect), Column("p", _num("p", "p")), Column("p_adj", _num("p_adj", "p")),
        Column("mean diff [95% CI]", _interval("mean_diff", "diff_ci_low", "diff_ci_high")),
        Column("favoured", _text("favoured"), False), Column("violation", _num("violation", "bool"), False),
    ]  # fmt: skip
    adjust = _first(table, "adjust", "")
    caption = (f"Paired comparisons: rank-biserial r (95% CI; > 0 = the first group higher), Wilcoxon p and p_adj"
               f"{f' ({adjust})' if adjust else ''}, the paired mean difference with a 95% bootstrap CI; Friedman rows give "
               f"χ² and Kendall's W.")  # fmt: skip
    return columns, table.to_dicts(), caption


def _compare_summary_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    by = table.columns[: table.columns.index("n_cells")] if "n_cells" in table.columns else []

    def share(r: Mapping[str, Any]) -> str:
        k, n = number_text(r.get("n_ge_threshold"), "int"), number_text(r.get("n_cells"), "int")
        return f"{k}/{n}" if k and n else ""

    columns = [Column(c, _text(c), False) for c in by]
    columns += [
        Column("cells", _num("n_cells", "int")), Column("mean abs r", _num("mean_abs_r")), Column("max abs r", _num("max_abs_r")),
        Column("max cell", _text("max_cell"), False), Column("≥ threshold", share), Column("contrasts", _num("n_contrasts", "int")),
        Column("violations", _num("n_violations", "int")), Column("A higher", _num("n_a_higher", "int")),
        Column("B higher", _num("n_b_higher", "int")), Column("direction", _text("direction"), False),
    ]  # fmt: skip
    threshold = _first(table, "threshold")
    caption = ("Bias magnitudes per cell: mean and maximum |r_rb|, cells at or above the threshold"
               f"{f' ({number_text(threshold)})' if threshold is not None else ''}, and the contrasts each group wins.")  # fmt: skip
    return columns, table.to_dicts(), caption


def _variability_layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
    def f_test(r: Mapping[str, Any]) -> str:
        f, d1, d2 = number_text(r.get("f")), number_text(r.get("df1"), "int"), number_text(r.get("df2"), "int")
        return f"{f} ({d1}, {d2})" if f and d1 and d2 else f

    columns = [
        Column("group", _text("group"), False), Column("variable", _text("variable"), False), Column("form", _text("form"), False),
        Column("McGraw–Wong", _text("mcgraw_wong"), False), Column("units", _num("n_units", "int")),
        Column("trials", _num("n_trials", "int")), Column("ICC [95% CI]", _interval("icc", "ci_low", "ci_high")),
        Column("F (df1, df2)", f_test), Column("p", _num("p", "p")), Column("SD within", _num("sd_within")),
    ]  # fmt: skip
    caption = "Consistency over repeated trials: the six ICC forms (Shrout & Fleiss; McGraw & Wong) with 95% CIs and F tests."
    return columns, table.to_dicts(), caption


_GENERIC_CAPTIONS = {
    "confusion": "Confusion counts: reference score (rows of the Q × Q table) against the judge's score, every level of the scale.",
    "predict": "Predictive validity: each measure of each model with its cross-validated interval.",
    "ppi": "Prediction-powered estimates: the judge's labels corrected by the human-labelled subset, with 95% CIs.",
}


def _generic_rule(name: str, dtype: pl.DataType) -> str:
    """The number rule of a column of a table shown whole (``--confusion``, ``predict``, ``ppi``)."""
    if dtype == pl.Boolean:
        return "bool"
    if dtype.is_integer() or name in ("n", "k", "rank", "folds", "count") or name.startswith(("n_", "df")):
        return "int"
    if name.startswith(("pct_", "share_")):
        return "1"
    if name in ("p", "p_adj", "p_value") or name.endswith(("_p", "_pvalue")):
        return "p"
    if name.endswith("_score") or name in ("score", "level", "levels"):
        return "g"
    return "3"


def _generic_layout(kind: str) -> Callable[[pl.DataFrame, Mapping[str, Any]], tuple[list[Column], list[dict], str]]:
    def layout(table: pl.DataFrame, context: Mapping[str, Any]) -> tuple[list[Column], list[dict], str]:
        names = [c for c in table.columns if c != "reason"] + (["reason"] if "reason" in table.columns else [])
        columns = []
        for name in names:
            dtype = table.schema[name]
            if dtype == pl.String or dtype == pl.Categorical or name == "reason":
                columns.append(Column(name, _text(name), False))
            else:
                columns.append(Column(name, _num(name, _generic_rule(name, dtype)), numeric=dtype != pl.Boolean))
        return columns, table.to_dicts(), _GENERIC_CAPTIONS[kind]

    return layout


_LAYOUTS: dict[str, Callable[[pl.DataFrame, Mapping[str, Any]], tuple[list[Column], list[dict], str]]] = {
    "validate": _validate_layout,
    "facets": _facets_layout,
    "effects": _effects_layout,
    "compare_models": _compare_models_layout,
    "agree": _agree_layout,
    "judge": _judge_layout,
    "per_rater": _per_rater_layout,
    "compare": _compare_layout,
    "compare_summary": _compare_summary_layout,
    "variability": _variability_layout,
    "confusion": _generic_layout("confusion"),
    "predict": _generic_layout("predict"),
    "ppi": _generic_layout("ppi"),
}
#: Every paper table kind (``summarize`` is written by :func:`tutormetrics.report.paper.paper_table`).
PAPER_KINDS: tuple[str, ...] = (*_LAYOUTS, "summarize")

#: A column that tells each kind apart, tried in this order.
_SIGNATURES = (
    ("effects", "delta_p_mean"), ("judge", "pct_max_judge"), ("per_rater", "top_score"), ("confusion", "judge_score"),
    ("compare_models", "elpd_loo"), ("compare_summary", "n_cells"), ("variability", "mcgraw_wong"), ("compare", "r_rb"),
    ("agree", "fleiss_kappa"), ("facets", "facet"), ("ppi", "n_unlabeled"), ("predict", "measure"), ("validate", "rho"),
    ("summarize", "variable"),
)  # fmt: skip


def table_kind(table: pl.DataFrame) -> str:
    """The paper-table kind of a command's table, told from its columns.

    Example:
        >>> table_kind(pl.DataFrame({"metric": ["a"], "target": ["t"], "rho": [0.1]}))
        'validate'
    """
    for kind, column in _SIGNATURES:
        if column in table.columns:
            return kind
    raise ConfigError("this table has no paper layout (.md/.tex)", hint="write it as .csv, .parquet or .jsonl")


# ---------------------------------------------------------------------------------------------- rendering


def _label(path: str | os.PathLike[str] | None) -> str:
    stem = Path(path).stem if path is not None else "table"
    return "tab:" + re.sub(r"[^A-Za-z0-9]", "-", stem)


def render_paper_table(
    table: pl.DataFrame,
    fmt: str,
    *,
    kind: str | None = None,
    caption: str | None = None,
    label: str = "tab:table",
    context: Mapping[str, Any] | None = None,
) -> str:
    """The ``md`` or ``tex`` text of a command's table in its layout (``docs/guide/paper.md#tables``).

    Args:
        table: the command's CSV table.
        fmt: ``md`` or ``tex``.
        kind: one of :data:`PAPER_KINDS`; default told from the columns (:func:`table_kind`).
        caption: the caption (default: the layout's, naming the table, n and the conventions).
        label: the tex ``\\label``.
        context: what the table does not hold but its caption names: ``seed`` (MML draws), ``method`` and
            ``n_draws`` (facets); for ``summarize`` the arguments of
            :func:`~tutormetrics.report.paper.paper_table` (``group_label``, ``variables``, ``transpose``, ``total``).
    """
    kind = kind or table_kind(table)
    ctx = dict(context or {})
    if kind == "summarize":
        return paper_table(table, fmt, ctx.get("group_label", "group"), variables=ctx.get("variables"),
                           diagnostics=bool(ctx.get("diagnostics", False)), transpose=bool(ctx.get("transpose", False)),
                           total=ctx.get("total"), caption=caption, label=label)  # fmt: skip
    if kind not in _LAYOUTS:
        raise ConfigError(f"unknown paper table kind {kind!r}", hint=f"one of {', '.join(_LAYOUTS)}")
    columns, rows, default_caption = _LAYOUTS[kind](table, ctx)
    body = [[c.cell(r) for c in columns] for r in rows]
    return render_rows([c.header for c in columns], body, [c.numeric for c in columns], fmt,
                       caption=default_caption if caption is None else caption, label=label)  # fmt: skip


def paper_format(path: str | os.PathLike[str]) -> str:
    """``md``, ``tex``, ``csv``, ``parquet`` or ``jsonl`` from the extension; anything else is exit 2.

    Example:
        >>> paper_format("t.markdown"), paper_format("t.PARQUET")
        ('md', 'parquet')
    """
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        raise ConfigError(f"{path}: cannot tell the table format from the extension {suffix or '(none)'!r}",
                          hint="name the file .csv, .parquet, .jsonl, .md or .tex")  # fmt: skip
    return _FORMATS[suffix]


def without_negative_zero(table: pl.DataFrame) -> pl.DataFrame:
    """Every float column with −0.0 written as 0.0 (CSV and stderr never show a negative zero).

    Example:
        >>> without_negative_zero(pl.DataFrame({"x": [-0.0, -1.5]}))["x"].to_list()
        [0.0, -1.5]
    """
    floats = [c for c, dt in table.schema.items() if dt.is_float()]
    zero = [pl.when(pl.col(c) == 0).then(pl.lit(0.0, dtype=table.schema[c])).otherwise(pl.col(c)).alias(c) for c in floats]
    return table.with_columns(zero) if floats else table


def write_paper_table(
    table: pl.DataFrame,
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    caption: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> Path:
    """Write a paper table by ``path``'s extension: ``.md``/``.tex`` in its layout with ``caption`` (default
    the layout's), ``.csv``/``.parquet``/``.jsonl`` as data (−0.0 written as 0.0). See :func:`render_paper_table`.

    Args:
        table: The command's table.
        path: The output file; its extension picks the format.
        kind: One of :data:`PAPER_KINDS`; ``None``: told from the columns.
        caption: The caption; ``None``: the layout's.
        context: What the caption names beyond the table (see :func:`render_paper_table`).
    """
    fmt = paper_format(path)
    if fmt in ("csv", "parquet", "jsonl"):
        return write_table(without_negative_zero(table), path, fmt)
    text = render_paper_table(table, fmt, kind=kind, caption=caption, label=_label(path), context=context)
    return write_text(text, path)


def write_data_table(table: pl.DataFrame, path: str | os.PathLike[str], *, what: str = "this table") -> Path:
    """Write a data table (``score -o``, ``theta -o``, ``aggregate -o``, ``--totals-out``, ``--units-out``):
    ``.csv``, ``.parquet`` or ``.jsonl``; ``.md``/``.tex`` is exit 2.

    Args:
        table: The table.
        path: The output file (``.csv``, ``.parquet`` or ``.jsonl``).
        what: The option that names it, for the error.

    Example:
        >>> write_data_table(pl.DataFrame({"a": [1]}), "t.md", what="score -o")
        Traceback (most recent call last):
        ...
        tutormetrics.errors.ConfigError: t.md: score -o is a data table, written as .csv, .parquet or .jsonl (not .md)
          hint: paper tables (.md/.tex) come from summarize, validate, theta --facets/--effects, agree, compare, variability, predict and ppi
    """
    fmt = paper_format(path)
    if fmt in ("md", "tex"):
        raise ConfigError(f"{path}: {what} is a data table, written as .csv, .parquet or .jsonl (not .{fmt})",
                          hint="paper tables (.md/.tex) come from summarize, validate, theta --facets/--effects, agree, compare, "
                               "variability, predict and ppi")  # fmt: skip
    return write_table(without_negative_zero(table), path, fmt)
