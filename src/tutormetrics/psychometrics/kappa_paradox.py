"""κ-paradox diagnostics of a two-rater table (``docs/design/effects.md#kappa-paradox``; Byrt, Bishop & Carlin 1993;
Cicchetti & Feinstein 1990), and the per-rater endorsement table (docs/design/effects.md#per-rater).

Rows of the table are rater A, columns rater B, positive = the top category. For Q = 2 with
a = both positive, b = A+ B−, c = A− B+, d = both negative, n = a + b + c + d:
``pabak = 2·PA − 1`` (Q ≥ 3: ``(Q·PA − 1)/(Q − 1)``), ``prevalence_index = (a − d)/n``,
``bias_index = (b − c)/n``, ``p_pos = 2a/(2a + b + c)``, ``p_neg = 2d/(2d + b + c)``. Byrt's identity:
``κ = (PABAK − PI² + BI²)/(1 − PI² + BI²)``.

Example:
    >>> out = paradox_indices(np.array([[10.0, 3.0], [7.0, 80.0]]))
    >>> {k: round(float(v), 7) for k, v in out.items()}
    {'pabak': 0.8, 'prevalence_index': 0.7, 'bias_index': 0.04, 'p_pos': 0.9411765, 'p_neg': 0.6666667}
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tutormetrics.psychometrics.level_scale import LevelScale, as_level_scale

__all__ = ["PARADOX_COLUMNS", "paradox_indices", "per_rater_table"]

PARADOX_COLUMNS: tuple[str, ...] = ("pabak", "prevalence_index", "bias_index", "p_pos", "p_neg")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def paradox_indices(tables: np.ndarray) -> dict[str, np.ndarray]:
    """The five indices of (…, Q, Q) count tables; for Q ≥ 3 only ``pabak`` (the others NaN), for Q = 1 all NaN.

    Example:
        >>> round(float(paradox_indices(np.array([[2.0, 4.0], [4.0, 90.0]]))["p_neg"]), 7)
        0.3333333
    """
    t = np.asarray(tables, dtype=float)
    q = t.shape[-1]
    n = t.sum(axis=(-2, -1))
    shape = t.shape[:-2]
    nan = np.full(shape, np.nan)
    if q < 2:
        return {k: nan.copy() for k in PARADOX_COLUMNS}
    pa = _ratio(np.trace(t, axis1=-2, axis2=-1), n)
    out = {"pabak": (q * pa - 1) / (q - 1)}
    if q > 2:
        out.update({k: nan.copy() for k in PARADOX_COLUMNS[1:]})
        return out
    a, b, c, d = t[..., 1, 1], t[..., 1, 0], t[..., 0, 1], t[..., 0, 0]
    out["prevalence_index"] = _ratio(a - d, n)
    out["bias_index"] = _ratio(b - c, n)
    out["p_pos"] = _ratio(2 * a, 2 * a + b + c)
    out["p_neg"] = _ratio(2 * d, 2 * d + b + c)
    return out


def per_rater_table(
    long: pl.DataFrame, *, levels: LevelScale | list[float] | None = None
) -> pl.DataFrame:
    """One row per criterion × rater: ``criterion, rater, n, endorsed, rate, top_score`` (``docs/design/effects.md#per-rater``).

    ``long`` has the cleaned columns ``_id, _rater, _crit, _score`` (missing scores dropped). Criteria in
    first-appearance order, raters sorted; ``top_score`` = max of ``levels`` when given, else the highest
    score of the criterion over all raters; ``endorsed`` = ratings equal to it; ``rate = endorsed/n``.
    ``levels`` may be a :class:`~tutormetrics.psychometrics.level_scale.LevelScale` (``--levels CRIT=L``,
    ``docs/guide/paper.md#scale``).

    Example:
        >>> df = pl.DataFrame({"_id": ["a", "b", "a", "b"], "_rater": ["A", "A", "B", "B"],
        ...                    "_crit": ["c"] * 4, "_score": [1.0, 1.0, 0.0, 1.0]})
        >>> per_rater_table(df)["rate"].to_list()
        [1.0, 0.5]
    """
    rows: list[dict] = []
    scale = as_level_scale(levels)
    for (crit,), sub in long.group_by("_crit", maintain_order=True):
        declared = scale.levels_for(str(crit))
        top = max(declared) if declared else float(sub["_score"].max())  # type: ignore[arg-type]
        for rater in sorted(sub["_rater"].unique().to_list()):
            s = sub.filter(pl.col("_rater") == rater)["_score"]
            n = s.len()
            endorsed = int((s == top).sum())
            rows.append({"criterion": str(crit), "rater": str(rater), "n": n, "endorsed": endorsed,
                         "rate": endorsed / n if n else float("nan"), "top_score": top})  # fmt: skip
    schema = {"criterion": pl.String, "rater": pl.String, "n": pl.Int64, "endorsed": pl.Int64, "rate": pl.Float64, "top_score": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
