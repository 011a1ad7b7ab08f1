"""Two-rater agreement per criterion: PA, Cohen κ, Scott π, Gwet AC1/AC2 and Krippendorff α.

Everything is computed from a Q×Q table of counts (rows: rater A, columns: rater B) with
agreement weights ``w`` (identity = nominal), following ``statistics.md`` §3. With ``p`` the
joint proportions, ``r``/``c`` the margins and ``π = (r + c)/2``:

* ``PA = Σ w∘p``; each chance-corrected coefficient is ``(PA − p_e)/(1 − p_e)`` with
  Cohen ``p_e = Σ w∘(r cᵀ)``, Scott ``p_e = Σ w∘(π πᵀ)``, Gwet ``p_e = Σw/(Q(Q−1)) · Σ π_k(1−π_k)``;
* Krippendorff ``α = 1 − (Σ d∘o / N) / (Σ d∘(n nᵀ) / (N(N−1)))`` with ``o = t + tᵀ``,
  ``n`` its row sums, ``N = Σo`` and ``d = 1 − w``. Quadratic weights give the interval α,
  which is what the table reports as ``alpha_ordinal`` (the spec's "α quadratic"; the
  ``krippendorff`` package's rank-based ``"ordinal"`` level differs slightly).

The pure functions accept stacked tables of shape ``(..., Q, Q)`` and return shape ``(...)``, which
keeps the bootstrap over units vectorised.

More than two raters: :func:`agreement_table` uses the pair given in ``raters`` or, by default, the
first two raters in sorted order, and says so in ``reason`` (``first_two_of_<k>_raters``).

Example:
    >>> t = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    >>> round(float(cohen_kappa(t)), 7), round(float(gwet_ac(t)), 7)
    (0.7964094, 0.8493305)
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io import require_columns

__all__ = [
    "weights_matrix",
    "percent_agreement",
    "cohen_kappa",
    "scott_pi",
    "gwet_ac",
    "krippendorff_alpha",
    "contingency_table",
    "agreement_table",
]

WeightKind = Literal["identity", "linear", "quadratic"]


def weights_matrix(q: int, kind: WeightKind = "identity", values: np.ndarray | None = None) -> np.ndarray:
    """Agreement weights: identity ``1[k=l]``, linear ``1 − |k−l|/(Q−1)``, quadratic ``1 − (k−l)²/(Q−1)²``.

    ``values`` (the category scores, e.g. 0/0.5/1) replace the ranks ``k`` when given.

    Example:
        >>> weights_matrix(3, "quadratic")[0].tolist()
        [1.0, 0.75, 0.0]
    """
    if kind not in ("identity", "linear", "quadratic"):
        raise ConfigError(f"unknown weights {kind!r}", hint="use identity, linear or quadratic")
    if kind == "identity" or q < 2:
        return np.eye(q)
    x = np.arange(q, dtype=float) if values is None else np.asarray(values, dtype=float)
    span = x.max() - x.min()
    diff = np.abs(x[:, None] - x[None, :]) / span
    return 1.0 - (diff if kind == "linear" else diff**2)


def _prep(table: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(table, dtype=float)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError("table must be square (..., Q, Q)")
    w = np.eye(t.shape[-1]) if weights is None else np.asarray(weights, dtype=float)
    return t, w


def _proportions(t: np.ndarray) -> np.ndarray:
    total = t.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return t / total


def _coef(pa: np.ndarray, pe: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (pa - pe) / (1.0 - pe)
    return np.where(np.isclose(pe, 1.0), np.nan, out)


def percent_agreement(table: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted percent agreement ``PA = Σ w∘p``.

    Example:
        >>> round(float(percent_agreement(np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]]))), 12)
        0.89
    """
    t, w = _prep(table, weights)
    return (w * _proportions(t)).sum(axis=(-2, -1))


def cohen_kappa(table: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Cohen's (weighted) κ, chance agreement ``p_e = Σ w∘(r cᵀ)``.

    Example:
        >>> round(float(cohen_kappa(np.array([[45, 5], [5, 45]]))), 3)
        0.8
    """
    t, w = _prep(table, weights)
    p = _proportions(t)
    r, c = p.sum(-1), p.sum(-2)
    pe = (w * (r[..., :, None] * c[..., None, :])).sum(axis=(-2, -1))
    return _coef((w * p).sum(axis=(-2, -1)), pe)


def scott_pi(table: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Scott's π (Fleiss' κ for two raters), ``p_e = Σ w∘(π πᵀ)`` with ``π = (r + c)/2``.

    Example:
        >>> round(float(scott_pi(np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]]))), 7)
        0.7962397
    """
    t, w = _prep(table, weights)
    p = _proportions(t)
    pi = (p.sum(-1) + p.sum(-2)) / 2
    pe = (w * (pi[..., :, None] * pi[..., None, :])).sum(axis=(-2, -1))
    return _coef((w * p).sum(axis=(-2, -1)), pe)


def gwet_ac(table: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Gwet's AC1 (identity weights) or AC2, ``p_e = Σw/(Q(Q−1)) · Σ_k π_k(1−π_k)``.

    Example:
        >>> round(float(gwet_ac(np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]]), weights_matrix(3, "quadratic"))), 3)
        0.94
    """
    t, w = _prep(table, weights)
    q = t.shape[-1]
    p = _proportions(t)
    if q < 2:
        return np.full(p.shape[:-2], np.nan)
    pi = (p.sum(-1) + p.sum(-2)) / 2
    pe = w.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum(-1)
    return _coef((w * p).sum(axis=(-2, -1)), pe)


def krippendorff_alpha(table: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's α from a two-rater table via the coincidence matrix ``o = t + tᵀ``.

    ``α = 1 − (Σ d∘o/N) / (Σ d∘(n nᵀ)/(N(N−1)))``, ``d = 1 − w``; identity weights give the nominal α,
    quadratic weights the interval α.

    Example:
        >>> round(float(krippendorff_alpha(np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]]))), 7)
        0.7972585
    """
    t, w = _prep(table, weights)
    d = 1.0 - w
    o = t + np.swapaxes(t, -1, -2)
    n = o.sum(-1)
    big_n = n.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_obs = (d * o).sum(axis=(-2, -1)) / big_n
        d_exp = (d * (n[..., :, None] * n[..., None, :])).sum(axis=(-2, -1)) / (big_n * (big_n - 1))
        out = 1.0 - d_obs / d_exp
    return np.where(d_exp > 0, out, np.nan)


def contingency_table(a: np.ndarray, b: np.ndarray, q: int) -> np.ndarray:
    """Q×Q count table from two arrays of category codes ``0..Q−1`` (rows: ``a``)."""
    return np.bincount(np.asarray(a) * q + np.asarray(b), minlength=q * q).reshape(q, q).astype(float)


def _statistics(tables: np.ndarray, values: np.ndarray, ordinal: bool) -> dict[str, np.ndarray]:
    q = tables.shape[-1]
    out = {
        "pa": percent_agreement(tables),
        "prevalence": (tables.sum(-1)[..., -1] + tables.sum(-2)[..., -1]) / (2 * tables.sum(axis=(-2, -1))),
        "kappa": cohen_kappa(tables),
        "scott_pi": scott_pi(tables),
        "ac1": gwet_ac(tables),
        "alpha_nominal": krippendorff_alpha(tables),
    }
    if ordinal:
        wq = weights_matrix(q, "quadratic", values)
        out["kappa_quadratic"] = cohen_kappa(tables, wq)
        out["ac2_quadratic"] = gwet_ac(tables, wq)
        out["alpha_ordinal"] = krippendorff_alpha(tables, wq)
    return out


_BASE = ["pa", "prevalence", "kappa", "scott_pi", "ac1", "alpha_nominal"]
_ORDINAL = ["kappa_quadratic", "ac2_quadratic", "alpha_ordinal"]


def agreement_table(
    ratings: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    raters: tuple[str, str] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
    n_min: int = 10,
) -> pl.DataFrame:
    """Two-rater agreement per criterion from long ratings, with bootstrap CIs over units.

    Columns: ``criterion, n, pa, prevalence, kappa, scott_pi, ac1, alpha_nominal`` and, when a
    criterion has more than two categories, ``kappa_quadratic, ac2_quadratic, alpha_ordinal``
    (quadratic weights on the score values; NaN for binary criteria), then ``<stat>_ci_low`` /
    ``<stat>_ci_high`` (percentile bootstrap, ``n_resamples`` resamples of units), ``rater_a, rater_b``
    and ``reason``. ``n`` counts units rated by both raters; ``prevalence`` is the pooled share of
    the highest score. ``reason``: ``too_few`` (n < ``n_min``: NaN statistics), ``constant``
    (a single category in both raters: chance-corrected values NaN), ``first_two_of_<k>_raters``.

    Example:
        >>> df = pl.DataFrame({"exchange_id": [1, 1, 2, 2], "rater": ["a", "b"] * 2,
        ...                    "criterion": ["c"] * 4, "score": [1, 1, 0, 1]})
        >>> agreement_table(df, n_resamples=0, n_min=2)["pa"].to_list()
        [0.5]
    """
    require_columns(ratings, [id_col, rater_col, criterion_col, score_col], source="ratings")
    if not 0 < confidence_level < 1:
        raise ConfigError("confidence_level must be in (0, 1)")
    df = ratings.select([id_col, rater_col, criterion_col, score_col])
    try:
        df = df.with_columns(pl.col(score_col).cast(pl.Float64))
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"ratings: column {score_col!r} is not numeric") from exc
    df = df.filter(pl.col(score_col).is_not_null() & pl.col(score_col).is_not_nan())
    all_raters = sorted(df[rater_col].unique().cast(pl.String).to_list())
    if len(all_raters) < 2:
        raise InputSchemaError(
            f"agreement needs at least 2 raters per item; the ratings have {len(all_raters)} "
            f"({', '.join(all_raters) or 'none'}) in column {rater_col!r}",
            hint="use data with two ratings per exchange and criterion, or choose the rater column with --rater",
        )
    note = ""
    if raters is None:
        raters = (all_raters[0], all_raters[1])
        if len(all_raters) > 2:
            note = f"first_two_of_{len(all_raters)}_raters"
    else:
        missing = [r for r in raters if r not in all_raters]
        if missing or len(raters) != 2 or raters[0] == raters[1]:
            raise ConfigError(f"raters {raters!r} must be two distinct raters of {all_raters}")
    df = df.with_columns(pl.col(rater_col).cast(pl.String)).filter(pl.col(rater_col).is_in(list(raters)))
    dup = df.group_by([id_col, rater_col, criterion_col]).len().filter(pl.col("len") > 1)
    if dup.height:
        raise InputSchemaError(
            f"ratings: {dup.height} (item, rater, criterion) combinations have more than one score",
            hint="keep one score per item, rater and criterion",
        )
    wide = (
        df.filter(pl.col(rater_col) == raters[0])
        .select([id_col, criterion_col, pl.col(score_col).alias("__a")])
        .join(
            df.filter(pl.col(rater_col) == raters[1]).select([id_col, criterion_col, pl.col(score_col).alias("__b")]),
            on=[id_col, criterion_col],
            how="inner",
        )
    )
    criteria = df[criterion_col].unique(maintain_order=True).to_list()
    levels = {c: sorted(set(df.filter(pl.col(criterion_col) == c)[score_col].to_list())) for c in criteria}
    any_ordinal = any(len(v) > 2 for v in levels.values())
    stats_cols = _BASE + (_ORDINAL if any_ordinal else [])
    rng = np.random.default_rng(seed)
    alpha = 1 - confidence_level
    rows: list[dict] = []
    for crit in criteria:
        sub = wide.filter(pl.col(criterion_col) == crit)
        vals = np.array(levels[crit])
        q = len(vals)
        a = np.searchsorted(vals, sub["__a"].to_numpy())
        b = np.searchsorted(vals, sub["__b"].to_numpy())
        n = int(a.size)
        row: dict = {"criterion": crit, "n": n}
        reasons = []
        ordinal = q > 2
        if n < n_min:
            reasons.append("too_few")
            est = {k: np.nan for k in stats_cols}
            ci = {k: (np.nan, np.nan) for k in stats_cols}
        else:
            table = contingency_table(a, b, q)
            est = {k: float(v) for k, v in _statistics(table, vals, ordinal).items()}
            if q < 2 or np.count_nonzero(table.sum(0) + table.sum(1)) < 2:
                reasons.append("constant")
            ci = {}
            if n_resamples > 0:
                idx = rng.integers(0, n, size=(n_resamples, n))
                codes = a[idx] * q + b[idx] + (np.arange(n_resamples) * q * q)[:, None]
                tables = np.bincount(codes.ravel(), minlength=n_resamples * q * q).reshape(n_resamples, q, q).astype(float)
                boot = _statistics(tables, vals, ordinal)
                for k, v in boot.items():
                    finite = v[np.isfinite(v)]
                    if finite.size == 0:
                        ci[k] = (np.nan, np.nan)
                    else:
                        lo, hi = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
                        ci[k] = (float(lo), float(hi))
        for k in stats_cols:
            row[k] = est.get(k, np.nan)
        for k in stats_cols:
            lo, hi = ci.get(k, (np.nan, np.nan))
            row[f"{k}_ci_low"], row[f"{k}_ci_high"] = lo, hi
        row["rater_a"], row["rater_b"] = raters
        if note:
            reasons.append(note)
        row["reason"] = ";".join(reasons)
        rows.append(row)
    schema = {"criterion": pl.String, "n": pl.Int64}
    schema.update({k: pl.Float64 for k in stats_cols})
    schema.update({f"{k}_ci_{s}": pl.Float64 for k in stats_cols for s in ("low", "high")})
    schema.update({"rater_a": pl.String, "rater_b": pl.String, "reason": pl.String})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.DataFrame([{**r, "criterion": str(r["criterion"])} for r in rows], schema=schema, orient="row")
