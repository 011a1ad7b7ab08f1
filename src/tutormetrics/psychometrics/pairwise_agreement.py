"""Agreement of two raters from a Q×Q table of counts (rows: rater A, columns: rater B), with agreement
weights ``w`` (identity = nominal), following ``docs/statistics.md#two-rater-agreement``. With ``p`` the joint proportions,
``r``/``c`` the margins and ``π = (r + c)/2``:

* ``PA = Σ w∘p``; each chance-corrected coefficient is ``(PA − p_e)/(1 − p_e)`` with
  Cohen ``p_e = Σ w∘(r cᵀ)``, Scott ``p_e = Σ w∘(π πᵀ)``, Gwet ``p_e = Σw/(Q(Q−1)) · Σ π_k(1−π_k)``;
* Krippendorff ``α = 1 − (Σ d∘o / N) / (Σ d∘(n nᵀ) / (N(N−1)))`` with ``o = t + tᵀ``,
  ``n`` its row sums, ``N = Σo`` and ``d = 1 − w``. Quadratic weights on the score values give
  Krippendorff's *interval* α, reported as ``alpha_quadratic`` (``docs/design/raters.md#many-raters`` renamed it from
  ``alpha_ordinal``, which now holds the many-rater ordinal α).

The functions accept stacked tables of shape ``(..., Q, Q)`` and return shape ``(...)``, which keeps the
bootstrap over units vectorised (:func:`bootstrap_tables`). Any number of raters:
:mod:`tutormetrics.psychometrics.multirater_agreement`; the per-criterion table of both:
:mod:`tutormetrics.psychometrics.agreement`.

Example:
    >>> t = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    >>> round(float(cohen_kappa(t)), 7), round(float(gwet_ac(t)), 7)
    (0.7964094, 0.8493305)
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from tutormetrics.errors import ConfigError
from tutormetrics.psychometrics.kappa_paradox import paradox_indices

__all__ = [
    "bootstrap_tables",
    "cohen_kappa",
    "contingency_table",
    "gwet_ac",
    "krippendorff_alpha",
    "pair_statistics",
    "percent_agreement",
    "scott_pi",
    "weights_matrix",
]

WeightKind = Literal["identity", "linear", "quadratic"]


def weights_matrix(q: int, kind: WeightKind = "identity", values: np.ndarray | None = None) -> np.ndarray:
    """Agreement weights: identity ``1[k=l]``, linear ``1 − |k−l|/(Q−1)``, quadratic ``1 − (k−l)²/(Q−1)²``.

    ``values`` (the category scores, e.g. 0/0.5/1) replace the ranks ``k`` when given.

    Args:
        q: Number of categories Q.
        kind: ``identity``, ``linear`` or ``quadratic``.
        values: The category scores; ``None``: the ranks 0..Q−1.

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
    """Q×Q count table from two arrays of category codes ``0..Q−1`` (rows: ``a``).

    Args:
        a: Category codes of the first rater (rows).
        b: Category codes of the second rater (columns).
        q: Number of categories Q.
    """
    return np.bincount(np.asarray(a) * q + np.asarray(b), minlength=q * q).reshape(q, q).astype(float)


def pair_statistics(tables: np.ndarray, values: np.ndarray, ordinal: bool) -> dict[str, np.ndarray]:
    """The two-rater block of (stacked) tables: pa, prevalence, kappa, scott_pi, ac1, alpha_nominal, the
    κ-paradox indices and, when
    ``ordinal``, the quadratic-weight kappa, AC2 and alpha on the score ``values``.

    Args:
        tables: Q×Q count tables, stacked on leading axes.
        values: The Q category scores.
        ordinal: Also compute the quadratic-weight statistics (Q > 2).
    """
    q = tables.shape[-1]
    out = {
        "pa": percent_agreement(tables),
        "prevalence": (tables.sum(-1)[..., -1] + tables.sum(-2)[..., -1]) / (2 * tables.sum(axis=(-2, -1))),
        "kappa": cohen_kappa(tables),
        "scott_pi": scott_pi(tables),
        "ac1": gwet_ac(tables),
        "alpha_nominal": krippendorff_alpha(tables),
        **paradox_indices(tables),  # PABAK, prevalence and bias indices, p_pos, p_neg (docs/design/effects.md#two-rater-indices)
    }
    if ordinal:
        wq = weights_matrix(q, "quadratic", values)
        out["kappa_quadratic"] = cohen_kappa(tables, wq)
        out["ac2_quadratic"] = gwet_ac(tables, wq)
        out["alpha_quadratic"] = krippendorff_alpha(tables, wq)
    return out


def bootstrap_tables(table: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` bootstrap Q×Q tables of a table of n units.

    Resampling n units with replacement only matters through how many units land in each cell, and
    those cell counts are ``Multinomial(n, table/n)``; one draw per resample replaces n index draws.

    Args:
        table: The Q×Q count table of n units.
        n_resamples: Number of resampled tables.
        rng: The random generator.

    Example:
        >>> boot = bootstrap_tables(np.array([[5., 1.], [2., 2.]]), 4, np.random.default_rng(0))
        >>> boot.shape, boot.sum(axis=(1, 2)).tolist()
        ((4, 2, 2), [10.0, 10.0, 10.0, 10.0])
    """
    t = np.asarray(table, dtype=float)
    n = round(float(t.sum()))
    draws = rng.multinomial(n, t.ravel() / n, size=n_resamples)
    return draws.reshape(n_resamples, *t.shape).astype(float)
