"""Grouped cross-validated predictive validity of the metrics together (``docs/commands/predict.md``).

Per target: grouped K folds (:mod:`tutormetrics.validity.folds`); in every training fold, missing values
→ training median, standardise (training mean and SD, ddof 0), fit a fixed model (L2 logistic, ridge or
gradient boosting); predict the test fold. Models compared: ``all`` metrics (plus controls),
``best_single`` (the metric with the largest training |ρ|, chosen afresh in each fold), ``control``,
an optional ``judge`` and ``drop:<family>``. Measures are computed once on the pooled out-of-sample
predictions, with percentile intervals from a cluster bootstrap over groups, paired across models
(:mod:`tutormetrics.validity.predict_measures`). ``features="embedding"``/``"both"`` add the encoder's
representation, reduced inside each training fold (:mod:`tutormetrics.validity.representation`), with the model
``metrics`` and the difference ``all-metrics`` (``docs/commands/predict.md#representation-features``);
``decision="ordinal"`` labels by thresholds tuned by inner grouped CV (:mod:`tutormetrics.validity.decision_rules`).

scikit-learn is imported only inside the fitting functions.

Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=60); y = (x + rng.normal(size=60) > 0).astype(float)
    >>> frame = pl.DataFrame({"exchange_id": [str(i) for i in range(60)], "g": [str(i // 3) for i in range(60)],
    ...                       "m1": x, "m2": rng.normal(size=60), "y": y})
    >>> res = predict_frame(frame, targets=["y"], features=["m1", "m2"], group_col="g", options=PredictOptions(ci="none"))
    >>> res.table.filter(pl.col("model") == "best_single")["selected"][0]
    'm1;m1;m1;m1;m1'
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.progress import Log, NoProgress, Progress, quiet
from tutormetrics.stats.bootstrap import single_threaded_blas
from tutormetrics.validity import decision_rules
from tutormetrics.validity import predict_measures as pm
from tutormetrics.validity.folds import group_codes, group_folds
from tutormetrics.validity.predict_options import PredictOptions
from tutormetrics.validity.representation import FoldReducer

TABLE_COLUMNS: tuple[str, ...] = (
    "target", "kind", "model", "measure", "estimate", "ci_low", "ci_high", "n", "n_groups", "folds",
    "n_features", "selected", "reason",
)  # fmt: skip
MEASURES: dict[str, tuple[str, ...]] = {
    "binary": ("rho", "auc", "macro_f1", "accuracy", "brier", "log_loss"),
    "ordinal": ("rho", "macro_f1", "accuracy", "macro_f1_lenient", "accuracy_lenient", "auc_lenient", "log_loss"),
    "continuous": ("rho", "pearson_r", "r2", "rmse"),
}
#: Measures that need level probabilities (not reported for ``judge`` or ``ridge`` on class targets).
PROBABILITY_MEASURES = frozenset({"brier", "log_loss"})
LABEL_MEASURES = frozenset({"macro_f1", "accuracy", "macro_f1_lenient", "accuracy_lenient"})

#: Bootstrap elements (resamples × rows) per chunk.
_CHUNK = 1 << 21


@dataclass
class PredictResult:
    """``table`` (PRED, one row per target × model × measure), ``predictions`` (OOS rows) and, with
    ``decision="ordinal"``, ``thresholds`` (target, model, fold, ``t_1``, ``t_2``: the cuts each fold used)."""

    table: pl.DataFrame
    predictions: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    thresholds: pl.DataFrame | None = None


# --------------------------------------------------------------------------------------------------
# One fold
# --------------------------------------------------------------------------------------------------


@dataclass
class _FoldOut:
    score: np.ndarray
    label: np.ndarray | None  # level codes
    proba: np.ndarray | None  # (n_test, L)
    codes: list[str]


def _prepare(xtr: np.ndarray, xte: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Median-impute and standardise on the training rows; drop all-missing or constant columns.

    Returns ``(train, test, n_dropped)``.
    """
    if xtr.shape[1] == 0:
        return xtr, xte, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(xtr, axis=0)
    keep = np.isfinite(med)
    xtr, xte, med = xtr[:, keep], xte[:, keep], med[keep]
    xtr = np.where(np.isfinite(xtr), xtr, med)
    xte = np.where(np.isfinite(xte), xte, med)
    mean = xtr.mean(axis=0)
    sd = xtr.std(axis=0)
    ok = np.ptp(xtr, axis=0) > 0
    dropped = int((~keep).sum() + (~ok).sum())
    xtr, xte, mean, sd = xtr[:, ok], xte[:, ok], mean[ok], sd[ok]
    return (xtr - mean) / sd, (xte - mean) / sd, dropped


def _balanced(codes: np.ndarray) -> np.ndarray:
    """``wᵢ = n / (L · n_k)`` over the L levels present."""
    present, inv, counts = np.unique(codes, return_inverse=True, return_counts=True)
    return (codes.size / (present.size * counts))[inv]


def _omp_limit() -> contextlib.AbstractContextManager[object]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    return threadpool_limits(limits=n, user_api="openmp")


def _fit_fold(
    xtr: np.ndarray, ytr: np.ndarray, xte: np.ndarray, kind: str, levels: np.ndarray, opts: PredictOptions
) -> _FoldOut:
    """Fit on the training rows (``ytr``: level codes for class targets, values for continuous) and predict."""
    xtr, xte, dropped = _prepare(xtr, xte)
    codes = ["constant_in_fold"] * dropped
    n_te = xte.shape[0]
    no_features = xtr.shape[1] == 0
    if no_features:
        codes.append("no_features_in_fold")
    if kind == "continuous":
        if no_features:
            return _FoldOut(np.full(n_te, float(np.mean(ytr))), None, None, codes)
        return _FoldOut(_regress(xtr, ytr, xte, opts.model), None, None, codes)
    n_levels = levels.size
    weights = _balanced(ytr) if opts.class_weight == "balanced" else np.ones(ytr.size)
    present = np.unique(ytr)
    if opts.model == "ridge":
        values = levels[ytr]
        if no_features:
            pred = np.full(n_te, float(np.average(values, weights=weights)))
        else:
            from sklearn.linear_model import Ridge

            pred = Ridge(alpha=1.0).fit(xtr, values, sample_weight=weights).predict(xte)
        dist = np.abs(pred[:, None] - levels[None, :])
        # nearest level; a tie goes to the higher one (the last minimum)
        label = n_levels - 1 - np.argmin(dist[:, ::-1], axis=1)
        return _FoldOut(pred, label, None, codes)
    proba = np.zeros((n_te, n_levels))
    if present.size == 1:
        codes.append("one_class_in_fold")
        proba[:, present[0]] = 1.0
    else:
        if present.size < n_levels:
            codes.append("class_missing_in_fold")
        if no_features:
            share = np.bincount(ytr, weights=weights, minlength=n_levels)
            proba[:] = share / share.sum()
        else:
            p, converged = _classify(xtr, ytr, xte, opts)
            proba[:, present] = p
            if not converged:
                codes.append("not_converged_in_fold")
    label = np.argmax(proba, axis=1)  # the lower level on an exact tie
    score = proba[:, -1] if kind == "binary" else proba @ levels
    return _FoldOut(score, label, proba, codes)


def _regress(xtr: np.ndarray, ytr: np.ndarray, xte: np.ndarray, model: str) -> np.ndarray:
    if model == "hgb":
        from sklearn.ensemble import HistGradientBoostingRegressor

        with _omp_limit():
            return HistGradientBoostingRegressor(random_state=0, early_stopping=False).fit(xtr, ytr).predict(xte)
    from sklearn.linear_model import Ridge

    return Ridge(alpha=1.0).fit(xtr, ytr).predict(xte)


def _classify(xtr: np.ndarray, ytr: np.ndarray, xte: np.ndarray, opts: PredictOptions) -> tuple[np.ndarray, bool]:
    """Probabilities of the training classes (ascending) and whether the solver converged."""
    cw = "balanced" if opts.class_weight == "balanced" else None
    if opts.model == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        with _omp_limit():
            clf = HistGradientBoostingClassifier(random_state=0, early_stopping=False, class_weight=cw).fit(xtr, ytr)
        return clf.predict_proba(xte), True
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=1.0, l1_ratio=0.0, solver="newton-cholesky", tol=1e-8, max_iter=100, class_weight=cw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(xtr, ytr)
    return clf.predict_proba(xte), bool(np.max(clf.n_iter_) < clf.max_iter)


# --------------------------------------------------------------------------------------------------
# Best single metric, chosen on the training rows
# --------------------------------------------------------------------------------------------------


def train_rho(x: np.ndarray, y: np.ndarray, ctrl: np.ndarray | None, n_min: int) -> np.ndarray:
    """Spearman ρ (or partial ρ given ``ctrl``) of each column of ``x`` with ``y`` over complete pairs.

    NaN where fewer than ``n_min`` pairs or a side is constant.

    Args:
        x: Feature columns of the training rows (n, p).
        y: The target per training row (n,).
        ctrl: Control columns (n, k); ``None``: raw ρ.
        n_min: Fewest complete pairs for a ρ.

    >>> x = np.array([[1.0, 4], [2, 3], [3, 2], [4, 1], [5, 5]])
    >>> train_rho(x, np.array([1.0, 2, 3, 4, 5]), None, 3).round(2).tolist()
    [1.0, 0.0]
    """
    from tutormetrics.stats.partial import partial_spearman

    n, p = x.shape
    out = np.full(p, np.nan)
    if ctrl is not None:
        base = np.all(np.isfinite(ctrl), axis=1)
        for j in range(p):
            m = base & np.isfinite(x[:, j])
            if m.sum() >= n_min and np.ptp(x[m, j]) > 0 and np.ptp(y[m]) > 0:
                out[j] = partial_spearman(x[m, j], y[m], ctrl[m])[0]
        return out
    fin = np.isfinite(x)
    full = fin.all(axis=0)
    if full.any() and n >= n_min and np.ptp(y) > 0:
        r = stats.rankdata(x[:, full], axis=0)
        r -= r.mean(axis=0)
        ry = stats.rankdata(y)
        ry -= ry.mean()
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (ry @ r) / np.sqrt((r * r).sum(axis=0) * (ry @ ry))
        rho[np.ptp(x[:, full], axis=0) == 0] = np.nan
        out[full] = rho
    for j in np.flatnonzero(~full):
        m = fin[:, j]
        if m.sum() >= n_min and np.ptp(x[m, j]) > 0 and np.ptp(y[m]) > 0:
            out[j] = stats.spearmanr(x[m, j], y[m]).statistic
    return out


def best_column(rho: np.ndarray) -> int:
    """Index of the largest |ρ| (the first on a tie); −1 when none is defined."""
    a = np.abs(rho)
    if not np.any(np.isfinite(a)):
        return -1
    return int(np.argmax(np.where(np.isfinite(a), a, -1.0)))


# --------------------------------------------------------------------------------------------------
# One target
# --------------------------------------------------------------------------------------------------


@dataclass
class _Target:
    name: str
    index: int
    ids: np.ndarray
    groups: np.ndarray  # labels as text
    y: np.ndarray
    x: np.ndarray  # features F
    c: np.ndarray  # controls C
    judge: np.ndarray | None
    rows: np.ndarray | None = None  # the frame rows of the target (keys of the representation's fold reductions)
    representation: FoldReducer | None = None


@dataclass
class _ModelOut:
    name: str
    n_features: int | None
    score: np.ndarray
    label: np.ndarray | None
    proba: np.ndarray | None
    fold: np.ndarray
    codes: dict[str, int] = field(default_factory=dict)
    selected: str = ""
    rows: np.ndarray | None = None  # judge: the rows it covers
    thresholds: list[np.ndarray | None] = field(default_factory=list)  # --decision ordinal: each fold's cuts


@dataclass(frozen=True)
class _Spec:
    """A model's columns: metric indices (``None``: the best single metric of each fold) and the representation."""

    cols: list[int] | None
    representation: bool = False


def _model_specs(features: list[str], families: Mapping[str, str], n_ctrl: int, opts: PredictOptions) -> list[tuple[str, _Spec]]:
    """The models in fit order: ``all``, ``best_single``, ``metrics`` (when the representation is used), ``control``,
    ``drop:<family>`` (``docs/commands/predict.md#representation-features``)."""
    every = list(range(len(features)))
    rep = opts.features != "metrics"
    specs = [("all", _Spec([] if opts.features == "embedding" else every, rep)), ("best_single", _Spec(None))]
    if rep:
        specs.append(("metrics", _Spec(every)))
    if n_ctrl:
        specs.append(("control", _Spec([])))
    if opts.importance == "drop":
        fams = list(dict.fromkeys(families.get(f, f) for f in features))
        for fam in fams:
            specs.append((f"drop:{fam}", _Spec([j for j, f in enumerate(features) if families.get(f, f) != fam], rep)))
    return specs


def _fit_rows(t: _Target, train: np.ndarray, test: np.ndarray, spec: _Spec, cols: list[int], yfit: np.ndarray, kind: str,
              levels: np.ndarray, opts: PredictOptions) -> _FoldOut:  # fmt: skip
    """Fit the model of ``cols`` (+ the representation's components, + controls) on the row indices ``train`` and
    predict ``test``; the components are fitted on ``train`` only (:class:`FoldReducer`)."""
    xtr = [t.x[np.ix_(train, cols)]]
    xte = [t.x[np.ix_(test, cols)]]
    if spec.representation:
        assert t.representation is not None and t.rows is not None
        ztr, zte = t.representation.reduce(t.rows[train], t.rows[test])
        xtr.append(ztr)
        xte.append(zte)
    xtr.append(t.c[train])
    xte.append(t.c[test])
    return _fit_fold(np.concatenate(xtr, axis=1), yfit[train], np.concatenate(xte, axis=1), kind, levels, opts)


def _inner_thresholds(t: _Target, train: np.ndarray, spec: _Spec, cols: list[int], yfit: np.ndarray, kind: str,
                      levels: np.ndarray, opts: PredictOptions) -> np.ndarray | None:  # fmt: skip
    """``--decision ordinal``: the cuts that maximise macro-F1 of the inner out-of-fold scores of the training rows
    ``train`` (grouped K folds of their groups, the same model refitted in each); ``None`` when a level is missing
    from them or they hold fewer groups than folds (``docs/commands/predict.md#decision-rules``)."""
    codes = yfit[train]
    groups = t.groups[train]
    if np.unique(codes).size < levels.size or np.unique(groups.astype(str)).size < opts.folds:
        return None
    inner = group_folds(groups, opts.folds)
    oof = np.empty(train.size)
    for g in range(opts.folds):
        out = _fit_rows(t, train[inner != g], train[inner == g], spec, cols, yfit, kind, levels, opts)
        oof[inner == g] = out.score
    return decision_rules.tune_thresholds(oof, codes, levels.size)


def _cross_fit(t: _Target, folds: np.ndarray, kind: str, levels: np.ndarray, spec: _Spec, opts: PredictOptions,
               progress: Progress, name: str) -> _ModelOut:  # fmt: skip
    n = t.y.size
    n_levels = levels.size
    score = np.empty(n)
    label = np.zeros(n, dtype=np.intp) if kind != "continuous" else None
    proba = np.zeros((n, n_levels)) if kind != "continuous" and opts.model != "ridge" else None
    yfit = np.searchsorted(levels, t.y) if kind != "continuous" else t.y
    codes: dict[str, int] = {}
    chosen: list[str] = []
    cuts: list[np.ndarray | None] = []
    for f in range(opts.folds):
        progress.detail(f"{t.name}: model {name}, fold {f + 1}/{opts.folds}")
        te = np.flatnonzero(folds == f)
        tr = np.flatnonzero(folds != f)
        if spec.cols is None:
            rho = train_rho(t.x[tr], t.y[tr], t.c[tr] if t.c.shape[1] else None, opts.n_min)
            j = best_column(rho)
            if j < 0:
                codes["no_candidate_in_fold"] = codes.get("no_candidate_in_fold", 0) + 1
                cols: list[int] = []
                chosen.append("")
            else:
                cols = [j]
                chosen.append(str(j))
        else:
            cols = spec.cols
        out = _fit_rows(t, tr, te, spec, cols, yfit, kind, levels, opts)
        score[te] = out.score
        if label is not None and out.label is not None:
            label[te] = out.label
        if opts.decision == "ordinal" and label is not None:
            cut = _inner_thresholds(t, tr, spec, cols, yfit, kind, levels, opts)
            cuts.append(cut)
            if cut is None:
                codes["no_thresholds_in_fold"] = codes.get("no_thresholds_in_fold", 0) + 1
            else:
                label[te] = decision_rules.decode(out.score, cut)
        if proba is not None and out.proba is not None:
            proba[te] = out.proba
        seen: set[str] = set()
        for code in out.codes:
            if code == "constant_in_fold":
                codes[code] = codes.get(code, 0) + 1  # (fold, column) pairs
            elif code not in seen:
                seen.add(code)
                codes[code] = codes.get(code, 0) + 1
        progress.update(1)
    return _ModelOut("", None, score, label, proba, folds, codes, ";".join(chosen), thresholds=cuts)


def _measure_fns(
    kind: str, y: np.ndarray, levels: np.ndarray, m: _ModelOut, rows: np.ndarray, off_scale: bool = False,
    shared: dict[str, Any] | None = None, group: np.ndarray | None = None,
) -> dict[str, Callable[[pm.Weights], np.ndarray]]:
    """Closures ``Weights → values`` for each measure the model has, on the rows ``rows``.

    ``group`` holds the group codes of ``rows`` (the weights' groups). Class targets: each score is
    sorted once (:class:`~tutormetrics.validity.predict_measures.SortedScore`) and ρ and the AUCs of every
    resample come from cumulative weights over that order; label and mean measures from sums by group.
    ``shared`` holds the continuous target's rank plan across models (so one resample block ranks it once).
    """
    yv = y[rows]
    s = m.score[rows]
    group = np.zeros(rows.size, dtype=np.intp) if group is None else group
    n_groups = int(group.max()) + 1 if group.size else 0
    order = MEASURES[kind]
    fns: dict[str, Callable[[pm.Weights], np.ndarray]] = {}
    shared = {} if shared is None else shared
    if kind == "continuous":
        plan_s = pm._plan(s)
        if "plan_y" not in shared:
            shared["plan_y"] = pm._plan(yv)
        plan_y = shared["plan_y"]
        fns["rho"] = lambda w: pm.spearman(w, plan_s, plan_y)
        fns["pearson_r"] = lambda w: pm.pearson(w, yv, s)
        fns["r2"] = lambda w: pm.r2(w, yv, s)
        fns["rmse"] = lambda w: pm.rmse(w, yv, s)
        return fns
    ycode = np.searchsorted(levels, yv)
    n_levels = levels.size
    top = n_levels - 1
    sorted_s = pm.SortedScore.of(s, group, ycode, n_levels)
    fns["rho"] = lambda w: pm.spearman_sorted(w, sorted_s)
    proba = m.proba[rows] if m.proba is not None else None
    nan = lambda w: np.full(w.counts.shape[0], np.nan)  # noqa: E731
    sizes = np.bincount(group, minlength=n_groups).astype(np.float64)[:, None]

    def mean_of(values: np.ndarray) -> Callable[[pm.Weights], np.ndarray]:
        table = pm.group_table(group, values, n_groups)

        def fn(w: pm.Weights) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                return w.per_group(id(table), table)[:, 0] / w.per_group(id(sizes), sizes)[:, 0]

        return fn

    def confusion_of(truth: np.ndarray, pred: np.ndarray, n_lab: int) -> Callable[[pm.Weights], np.ndarray]:
        """The weighted confusion counts ``(c, L, L)`` of ``truth`` × ``pred`` per resample, as a function of the weights.

        Args:
            truth: True label code per row (0..n_lab−1).
            pred: Predicted label code per row (0..n_lab−1).
            n_lab: Number of labels L.
        """
        onehot = np.zeros((truth.size, n_lab * n_lab))
        onehot[np.arange(truth.size), truth.astype(np.intp) * n_lab + pred.astype(np.intp)] = 1.0
        table = pm.group_table(group, onehot, n_groups)
        return lambda w: w.per_group(id(table), table).reshape(-1, n_lab, n_lab)

    if m.label is not None and not off_scale:
        lab = m.label[rows]
        exact = confusion_of(ycode, lab, n_levels)
        lenient = confusion_of((ycode > 0).astype(np.intp), (lab > 0).astype(np.intp), 2)
        f1 = lambda w: pm.macro_f1_from(exact(w))  # noqa: E731
        acc = lambda w: pm.accuracy_from(exact(w))  # noqa: E731
        f1_len = lambda w: pm.macro_f1_from(lenient(w))  # noqa: E731
        acc_len = lambda w: pm.accuracy_from(lenient(w))  # noqa: E731
    else:
        f1 = acc = f1_len = acc_len = nan
    if kind == "binary":
        is_top = np.arange(n_levels) == top
        fns["auc"] = lambda w: pm.auc_sorted(w, sorted_s, is_top)
        fns["macro_f1"], fns["accuracy"] = f1, acc
        if proba is not None:
            p_top = proba[:, top]
            hit = (ycode == top).astype(np.float64)
            fns["brier"] = mean_of((p_top - hit) ** 2)
    else:
        fns["macro_f1"], fns["accuracy"] = f1, acc
        fns["macro_f1_lenient"], fns["accuracy_lenient"] = f1_len, acc_len
        sorted_len = pm.SortedScore.of(1.0 - proba[:, 0], group, ycode, n_levels) if proba is not None else sorted_s
        above = np.arange(n_levels) > 0
        fns["auc_lenient"] = lambda w: pm.auc_sorted(w, sorted_len, above)
    if proba is not None:
        loss = -np.log(np.maximum(proba[np.arange(rows.size), ycode], pm.LOG_LOSS_FLOOR))
        fns["log_loss"] = mean_of(loss)
    return {k: fns[k] for k in order if k in fns}


def _evaluate(
    sets: list[tuple[str, dict[str, Callable[[pm.Weights], np.ndarray]]]],
    group: np.ndarray,
    rng: np.random.Generator | None,
    n_resamples: int,
) -> dict[str, dict[str, tuple[float, np.ndarray | None]]]:
    """Estimate and bootstrap values of every measure of every model on one set of rows (paired draws)."""
    n_groups = int(group.max()) + 1
    ones = pm.Weights.ones(group)
    out: dict[str, dict[str, tuple[float, np.ndarray | None]]] = {}
    for name, fns in sets:
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = {k: (float(f(ones)[0]), None) for k, f in fns.items()}
    if rng is None:
        return out
    draws: dict[tuple[str, str], list[np.ndarray]] = {(m, k): [] for m, fns in sets for k in fns}
    step = max(1, min(n_resamples, _CHUNK // max(1, group.size)))
    for start in range(0, n_resamples, step):
        c = min(step, n_resamples - start)
        w = pm.Weights.draws(rng.integers(0, n_groups, size=(c, n_groups)), group, n_groups)
        for name, fns in sets:
            for k, f in fns.items():
                with np.errstate(invalid="ignore", divide="ignore"):
                    draws[(name, k)].append(f(w))
    for name, fns in sets:
        for k in fns:
            out[name][k] = (out[name][k][0], np.concatenate(draws[(name, k)]))
    return out


def _interval(d: np.ndarray | None, level: float) -> tuple[float, float, int]:
    """Percentile interval over the finite resamples, and how many were dropped."""
    if d is None:
        return float("nan"), float("nan"), 0
    fin = d[np.isfinite(d)]
    dropped = d.size - fin.size
    if fin.size < 2:
        return float("nan"), float("nan"), dropped
    alpha = 1.0 - level
    lo, hi = np.quantile(fin, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi), dropped


def _model_codes(codes: Mapping[str, int]) -> list[str]:
    """``{"constant_in_fold": 2}`` → ``["constant_in_fold_2"]``, alphabetical."""
    return sorted(f"{key}_{v}" for key, v in codes.items() if v)


def _kind(n_levels: int) -> str:
    return "binary" if n_levels == 2 else "ordinal" if n_levels == 3 else "continuous"


def _target_reasons(t: _Target, levels: np.ndarray, n_groups: int, opts: PredictOptions) -> list[str]:
    """Why a target cannot be predicted at all: ``constant``, ``too_few`` rows, ``too_few_groups`` for the folds."""
    codes = []
    if levels.size < 2:
        codes.append("constant")
    if t.y.size < opts.n_min:
        codes.append("too_few")
    if n_groups < opts.folds:
        codes.append("too_few_groups")
    return codes


def _fit_models(
    t: _Target, features: list[str], families: Mapping[str, str], folds: np.ndarray, kind: str, levels: np.ndarray,
    opts: PredictOptions, progress: Progress,
) -> list[_ModelOut]:  # fmt: skip
    """Every model of :func:`_model_specs`, cross-fitted over the folds (one step of ``progress`` per fold fitted)."""
    n_ctrl = t.c.shape[1]
    models: list[_ModelOut] = []
    n_rep = 0 if t.representation is None else min(opts.components, t.representation.block.shape[1])
    for name, spec in _model_specs(features, families, n_ctrl, opts):
        with single_threaded_blas():  # small products: BLAS threads wait more than they work (16× on a busy 2-core box)
            m = _cross_fit(t, folds, kind, levels, spec, opts, progress, name)
        m.name = name
        if spec.cols is None:
            m.n_features = 1 + n_ctrl
            m.selected = ";".join(features[int(j)] if j else "" for j in m.selected.split(";"))
        else:
            m.n_features = len(spec.cols) + n_ctrl + (n_rep if spec.representation else 0)
        models.append(m)
    return models


@dataclass
class _JudgeOut:
    """The judge's measures (and ``all``'s on the judge's rows), the rows it covers and whether it leaves the scale."""

    results: dict[str, dict[str, tuple[float, np.ndarray | None]]] | None
    n: int
    n_groups: int
    codes: list[str]
    off_scale: bool


def _judge(
    t: _Target, all_model: _ModelOut, folds: np.ndarray, kind: str, levels: np.ndarray, opts: PredictOptions,
    resampled: bool,
) -> _JudgeOut:  # fmt: skip
    """The judge's scores as predictions, on the rows it scored (its own bootstrap stream when it missed some)."""
    assert t.judge is not None
    n = t.y.size
    judge_rows = np.flatnonzero(np.isfinite(t.judge))
    missing = n - judge_rows.size
    codes = [f"judge_missing_{missing}"] if missing else []
    jv = t.judge[judge_rows]
    jm = _ModelOut("judge", None, t.judge.copy(), None, None, folds)
    off_scale = False
    if kind != "continuous":
        off_scale = not np.all(np.isin(jv, levels))
        lab = np.zeros(n, dtype=np.intp)
        if not off_scale:
            lab[judge_rows] = np.searchsorted(levels, jv)
        jm.label = lab
    n_groups = np.unique(t.groups[judge_rows]).size
    if not judge_rows.size:
        return _JudgeOut(None, 0, n_groups, codes, off_scale)
    _, jg = group_codes(t.groups[judge_rows])
    seed = [opts.seed, t.index] if judge_rows.size == n else [opts.seed, t.index, 1]
    jrng = np.random.default_rng(seed) if resampled else None
    jshared: dict[str, Any] = {}
    jsets = [("judge", _measure_fns(kind, t.y, levels, jm, judge_rows, off_scale, jshared, jg)),
             ("all", _measure_fns(kind, t.y, levels, all_model, judge_rows, shared=jshared, group=jg))]  # fmt: skip
    with single_threaded_blas():
        results = _evaluate(jsets, jg, jrng, opts.n_resamples)
    return _JudgeOut(results, int(judge_rows.size), int(n_groups), codes, off_scale)


@dataclass
class _Rows:
    """The PRED rows of one target: every row carries the target, its kind, the folds and the target's reasons."""

    base: dict[str, Any]
    target_codes: list[str]
    level: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, model: str, measure: str, est: float, d: np.ndarray | None, nn: int, ng: int, nf: int | None,
             sel: str, codes: list[str], measure_codes: Sequence[str] = ()) -> None:  # fmt: skip
        """One row: the estimate, its percentile interval (``ci_dropped_<k>`` non-finite resamples) and reasons.

        Args:
            model: The ``model`` column (e.g. ``judge``, ``all-<model>``).
            measure: The ``measure`` column.
            est: The estimate.
            d: The resampled estimates; ``None``: no interval.
            nn: Rows of the estimate (``n``).
            ng: Groups of the estimate (``n_groups``).
            nf: Features of the model; ``None``: not a feature model.
            sel: The ``selected`` column (the features kept).
            codes: Reason codes of the row.
            measure_codes: Reason codes of the measure.
        """
        lo, hi, dropped = _interval(d, self.level) if np.isfinite(est) else (float("nan"), float("nan"), 0)
        extra = list(measure_codes)
        if not np.isfinite(est):
            extra.append("undefined")
        if dropped and np.isfinite(est):
            extra.append(f"ci_dropped_{dropped}")
        self.rows.append({**self.base, "model": model, "measure": measure, "estimate": est, "ci_low": lo, "ci_high": hi,
                          "n": nn, "n_groups": ng, "n_features": nf, "selected": sel,
                          "reason": ";".join([*self.target_codes, *codes, *extra])})  # fmt: skip


def _judge_rows(out: _Rows, kind: str, judge: _JudgeOut | None) -> None:
    for measure in MEASURES[kind]:
        if measure in PROBABILITY_MEASURES:
            continue
        if judge is None or judge.results is None:
            out.emit("judge", measure, float("nan"), None, 0, 0, None, "", judge.codes if judge else [])
            continue
        est, d = judge.results["judge"][measure]
        mc = ["judge_off_scale"] if judge.off_scale and measure in LABEL_MEASURES else []
        out.emit("judge", measure, est, d, judge.n, judge.n_groups, None, "", judge.codes, mc)


def _difference_rows(
    out: _Rows, kind: str, ordered: list[str], by_name: dict[str, _ModelOut], results: dict[str, Any],
    judge: _JudgeOut | None, n: int, n_groups: int,
) -> None:  # fmt: skip
    """``all-<other>`` rows: paired differences of every measure (the same resamples)."""
    for other in [o for o in ordered if o != "all"]:
        if other == "judge":
            if judge is None or judge.results is None:
                continue
            a, b = judge.results["all"], judge.results["judge"]
            codes = sorted(_model_codes(by_name["all"].codes) + judge.codes)
            nn, ng = judge.n, judge.n_groups
        else:
            a, b = results["all"], results[other]
            codes = sorted(set(_model_codes(by_name["all"].codes)) | set(_model_codes(by_name[other].codes)))
            nn, ng = n, n_groups
        for measure in MEASURES[kind]:
            if measure not in a or measure not in b:
                continue
            mc = ["judge_off_scale"] if other == "judge" and judge is not None and judge.off_scale and measure in LABEL_MEASURES else []
            est = a[measure][0] - b[measure][0]
            d = None if a[measure][1] is None else a[measure][1] - b[measure][1]
            out.emit(f"all-{other}", measure, est, d, nn, ng, None, "", codes, mc)


def _predict_target(
    t: _Target, features: list[str], families: Mapping[str, str], opts: PredictOptions, log: Log, progress: Progress,
    n_fits: int,
) -> tuple[list[dict[str, Any]], list[pl.DataFrame], list[dict[str, Any]]]:
    """The PRED rows, out-of-sample predictions and ordinal cuts of one target (``docs/commands/predict.md``); its
    ``n_fits`` folds count in ``progress`` whether fitted or not (a target that cannot be predicted)."""
    n = t.y.size
    levels = np.unique(t.y)
    uniq, gcode = group_codes(t.groups)
    n_groups = uniq.size
    target_codes = _target_reasons(t, levels, n_groups, opts)
    kind = _kind(levels.size) if levels.size >= 2 else ""
    base = {"target": t.name, "folds": opts.folds, "kind": kind}
    if target_codes:
        row = {**base, "model": "all", "measure": None, "estimate": None, "ci_low": None, "ci_high": None,
               "n": n, "n_groups": n_groups, "n_features": None, "selected": None, "reason": ";".join(target_codes)}  # fmt: skip
        progress.update(n_fits)
        return [row], [], []
    if kind != "continuous" and np.bincount(np.searchsorted(levels, t.y)).min() < opts.folds:
        target_codes.append("class_lt_folds")
    folds = group_folds(t.groups, opts.folds)
    models = _fit_models(t, features, families, folds, kind, levels, opts, progress)
    rng = np.random.default_rng([opts.seed, t.index]) if opts.ci != "none" else None
    shared: dict[str, Any] = {}
    sets = [(m.name, _measure_fns(kind, t.y, levels, m, np.arange(n), shared=shared, group=gcode)) for m in models]
    if rng is not None:
        progress.detail(f"{t.name}: intervals ({opts.n_resamples:,} resamples over {n_groups:,} groups)")
    with single_threaded_blas():
        results = _evaluate(sets, gcode, rng, opts.n_resamples)
    judge = _judge(t, models[0], folds, kind, levels, opts, rng is not None) if t.judge is not None else None
    out = _Rows(base, target_codes, opts.confidence_level)
    order = [m.name for m in models]
    ordered = order[:2] + [o for o in order if o == "metrics"] + (["control"] if t.c.shape[1] else []) + (
        ["judge"] if t.judge is not None else []) + [o for o in order if o.startswith("drop:")]  # fmt: skip
    by_name = {m.name: m for m in models}
    for name in ordered:
        if name == "judge":
            _judge_rows(out, kind, judge)
            continue
        m = by_name[name]
        for measure, (est, d) in results[name].items():
            out.emit(name, measure, est, d, n, n_groups, m.n_features, m.selected if name == "best_single" else "",
                     _model_codes(m.codes))  # fmt: skip
    _difference_rows(out, kind, ordered, by_name, results, judge, n, n_groups)
    cuts = [{"target": t.name, "model": m.name, "fold": f, "t_1": None if c is None else float(c[0]),
             "t_2": None if c is None or c.size < 2 else float(c[1])} for m in models for f, c in enumerate(m.thresholds)]  # fmt: skip
    return out.rows, _prediction_rows(t, models, levels, kind, folds), cuts


def _prediction_rows(t: _Target, models: list[_ModelOut], levels: np.ndarray, kind: str, folds: np.ndarray) -> list[pl.DataFrame]:
    out: list[pl.DataFrame] = []
    n = t.y.size
    for m in models:
        cols: dict[str, Any] = {
            "exchange_id": pl.Series(t.ids.astype(str), dtype=pl.String),
            "group": pl.Series(t.groups.astype(str), dtype=pl.String),
            "target": pl.Series([t.name] * n, dtype=pl.String),
            "model": pl.Series([m.name] * n, dtype=pl.String),
            "fold": pl.Series(folds.astype(np.int64)),
            "y": pl.Series(t.y, dtype=pl.Float64),
            "score": pl.Series(m.score, dtype=pl.Float64),
            "label": pl.Series(levels[m.label] if m.label is not None else [None] * n, dtype=pl.Float64),
        }
        for k in range(3):
            vals = m.proba[:, k] if m.proba is not None and k < levels.size else [None] * n
            cols[f"p_{k}"] = pl.Series(vals, dtype=pl.Float64)
        out.append(pl.DataFrame(cols))
    return out


# --------------------------------------------------------------------------------------------------
# Frame level
# --------------------------------------------------------------------------------------------------


def _numeric(frame: pl.DataFrame, cols: Sequence[str], role: str) -> np.ndarray:
    out = np.empty((frame.height, len(cols)))
    for j, col in enumerate(cols):
        s = frame.get_column(col)
        if not (s.dtype.is_numeric() or s.dtype == pl.Null):
            raise InputSchemaError(f"{role} column {col!r} is {s.dtype}, not numeric", hint=f"pick numeric {role} columns")
        out[:, j] = s.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    return out


def predict_frame(
    frame: pl.DataFrame,
    *,
    targets: Sequence[str],
    features: Sequence[str],
    group_col: str,
    controls: Sequence[str] = (),
    judge_cols: Mapping[str, str] | None = None,
    families: Mapping[str, str] | None = None,
    id_col: str = "exchange_id",
    options: PredictOptions | None = None,
    log: Log = quiet,
    representation: np.ndarray | None = None,
    progress: Progress | None = None,
) -> PredictResult:
    """Grouped K-fold predictions of every target from ``features`` (+ ``controls``) of ``frame``.

    ``frame`` holds the features, the controls, the group column, the target columns and any judge
    columns (``judge_cols``: target → column). ``families`` maps a feature to its family for
    ``importance="drop"`` (a feature not listed is its own family). ``representation``: the
    representation block, one row per frame row, for ``features="embedding"`` or ``"both"``
    (:mod:`tutormetrics.validity.representation`).

    Args:
        frame: Features, controls, group column, targets and judge columns, one row per unit.
        targets: The target columns.
        features: The feature columns.
        group_col: The group column the folds and resamples keep whole.
        controls: Control columns added to every model.
        judge_cols: Target → its judge column; ``None``: none.
        families: Feature → family for ``importance="drop"``; ``None``: each feature its own.
        id_col: The id column.
        options: Model, folds, resamples, seed, ...; ``None``: the defaults.
        log: Where the notes go.
        representation: The representation block, one row per frame row; ``None``: metrics only.
        progress: Where each fold fitted is counted (targets × models × folds) and the fold under way is named
            (:func:`~tutormetrics.progress.step_progress`); ``None``: nowhere.
    """
    opts = options or PredictOptions()
    opts.check()
    reducer = None
    if opts.features != "metrics":
        if representation is None or representation.shape[0] != frame.height:
            raise ConfigError(f"--features {opts.features} needs a representation block with one row per metrics row",
                              hint="pass --embeddings PATH written by `score --embeddings`")  # fmt: skip
        reducer = FoldReducer(np.asarray(representation, dtype=np.float64), opts.components)
    features, controls = list(features), list(controls)
    if not features:
        raise InputSchemaError("no feature column", hint="pass --metrics-cols or a metrics table with numeric metric columns")
    require_columns(frame, [group_col], source="metrics", option="--group-col", also=f"carry an input column with `score --keep {group_col}`")
    groups_all = frame.get_column(group_col).cast(pl.String)
    empty = groups_all.is_null() | (groups_all.str.strip_chars() == "")
    if empty.any():
        ids = frame.get_column(id_col).cast(pl.String).filter(empty).head(3).to_list() if id_col in frame.columns else []
        raise InputSchemaError(f"{int(empty.sum()):,} row(s) have an empty group label in {group_col!r}"
                               + (f", e.g. {', '.join(map(str, ids))}" if ids else ""),
                               hint="every row needs its dialogue label; fix the join that produced the table")  # fmt: skip
    groups_np = np.asarray(groups_all.to_list(), dtype=object)
    x = _numeric(frame, features, "metric")
    c = _numeric(frame, controls, "control") if controls else np.empty((frame.height, 0))
    ids = np.asarray(frame.get_column(id_col).cast(pl.String).to_list() if id_col in frame.columns else range(frame.height), dtype=object)
    judge_cols = dict(judge_cols or {})
    rows: list[dict[str, Any]] = []
    preds: list[pl.DataFrame] = []
    cuts: list[dict[str, Any]] = []
    steps = progress if progress is not None else NoProgress()
    n_fits = len(_model_specs(features, families or {}, len(controls), opts)) * opts.folds  # per target
    steps.set_total(n_fits * len(targets))
    for ti, name in enumerate(targets):
        y = _numeric(frame, [name], "target")[:, 0]
        sel = np.isfinite(y)
        jcol = judge_cols.get(name)
        judge = _numeric(frame, [jcol], "judge")[sel, 0] if jcol else None
        t = _Target(name, ti, ids[sel], groups_np[sel], y[sel], x[sel], c[sel], judge, np.flatnonzero(sel), reducer)
        log(f"      {name}: {int(sel.sum()):,} rows, {np.unique(t.groups.astype(str)).size:,} groups")
        r, p, k = _predict_target(t, features, families or {}, opts, log, steps, n_fits)
        rows.extend(r)
        preds.extend(p)
        cuts.extend(k)
    thresholds = None
    if opts.decision == "ordinal":
        schema = {"target": pl.String, "model": pl.String, "fold": pl.Int64, "t_1": pl.Float64, "t_2": pl.Float64}
        thresholds = pl.DataFrame(cuts, schema=schema, orient="row") if cuts else pl.DataFrame(schema=schema)
    return PredictResult(_table(rows), _pred_table(preds, id_col), thresholds=thresholds)


def _table(rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {
        "target": pl.String, "kind": pl.String, "model": pl.String, "measure": pl.String, "estimate": pl.Float64,
        "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64, "n_groups": pl.Int64, "folds": pl.Int64,
        "n_features": pl.Int64, "selected": pl.String, "reason": pl.String,
    }  # fmt: skip
    return pl.DataFrame([{k: r.get(k) for k in TABLE_COLUMNS} for r in rows], schema=schema, orient="row")


def _pred_table(parts: list[pl.DataFrame], id_col: str) -> pl.DataFrame:
    schema = {
        "exchange_id": pl.String, "group": pl.String, "target": pl.String, "model": pl.String, "fold": pl.Int64,
        "y": pl.Float64, "score": pl.Float64, "label": pl.Float64, "p_0": pl.Float64, "p_1": pl.Float64, "p_2": pl.Float64,
    }  # fmt: skip
    table = pl.concat(parts, how="vertical") if parts else pl.DataFrame(schema=schema)
    return table.rename({"exchange_id": id_col}) if id_col != "exchange_id" else table
