"""The MFRM design shared by the MML and the Bayesian fits: priors, the zero-sum basis, quadrature,
partial-credit probabilities, and the ratings → categories → cells preparation (``docs/statistics.md#many-facet-rasch-model-theta``).

Example:
    >>> zero_sum_basis(3).sum(axis=1).round(12).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.polynomial.hermite_e import hermegauss
from scipy import sparse
from scipy.special import logsumexp

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.tables import require_columns
from tutormetrics.psychometrics.mfrm.identify import check_identified
from tutormetrics.psychometrics.ratings import (
    Ratings,
    RatingsLike,
    cleaned_long,
    ratings_table,
    scale_filter,
)

#: Half-width multiplier of a central 94% normal interval (``norm.ppf(0.97)``).
Z94 = 1.880793608151251
#: Prior SD of the criterion difficulties ``b_j``.
SIGMA_B = 1.0
#: Scale of the zero-sum rater severities ``s``.
SIGMA_S = 1.0
#: Prior SD of the covariate slopes ``γ_j``.
SIGMA_GAMMA = 0.5
#: Scale of the zero-sum group effects ``β_j·``.
SIGMA_BETA = 0.5
#: Scale of the zero-sum step thresholds ``τ_j``.
SIGMA_TAU = 1.0
#: "Infinite" threshold sum of a category a criterion does not have; its logit is ``-ABSENT_CATEGORY``.
ABSENT_CATEGORY = 1e30
#: Where the baseline probabilities are evaluated.
REFERENCE_POINT = "theta = s = v = 0, beta at its zero-sum mean (0)"

ModelKind = Literal["auto", "binary", "partial_credit"]


def zero_sum_basis(k: int) -> np.ndarray:
    """Orthonormal Helmert map ``Q`` ((k−1)×k): ``QQᵀ = I``, rows sum to 0, ``QᵀQ = I − J/k``.

    ``x = Qᵀz`` turns ``k−1`` free numbers into a zero-sum vector; with ``z ~ N(0, σ²I)``,
    ``x ~ ZeroSumNormal(σ)``.

    Example:
        >>> q = zero_sum_basis(3)
        >>> np.allclose(q @ q.T, np.eye(2)), np.allclose(q.sum(1), 0)
        (True, True)
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    q = np.zeros((k - 1, k))
    for row in range(1, k):
        q[row - 1, :row] = 1.0 / math.sqrt(row * (row + 1))
        q[row - 1, row] = -row / math.sqrt(row * (row + 1))
    return q


#: Up to this many levels a zero-sum facet uses the dense Helmert matrix (today's numbers bit for bit); above
#: it, :class:`HelmertMap` applies the same map in O(k) memory and time, and the rater facet's SEs come from
#: the diagonal of the observed information (:func:`tutormetrics.psychometrics.mfrm.rater_se`).
DENSE_BASIS_MAX = 256


class DenseZeroSum:
    """:func:`zero_sum_basis` as a matrix: ``expand(z) = Qᵀz`` (k), ``reduce(v) = Qv`` (k−1)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.q = zero_sum_basis(k)

    def expand(self, z: np.ndarray) -> np.ndarray:
        return self.q.T @ z

    def reduce(self, v: np.ndarray) -> np.ndarray:
        return self.q @ v

    def dense(self) -> np.ndarray:
        return self.q


class HelmertMap(DenseZeroSum):
    """The Helmert map of :func:`zero_sum_basis` without the (k−1)×k matrix, O(k):
    ``(Qv)_{r−1} = (Σ_{c<r} v_c − r·v_r)/√(r(r+1))`` and ``(Qᵀz)_c = Σ_{r>c} a_{r−1} − c·a_{c−1}`` with
    ``a_{r−1} = z_{r−1}/√(r(r+1))`` (r = 1 … k−1).

    Example:
        >>> h, q = HelmertMap(5), zero_sum_basis(5)
        >>> z, v = np.arange(4.0), np.arange(5.0) ** 2
        >>> bool(np.allclose(h.expand(z), q.T @ z) and np.allclose(h.reduce(v), q @ v))
        True
    """

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError("k must be >= 1")
        self.k = k
        r = np.arange(1, k, dtype=float)
        self._norm = 1.0 / np.sqrt(r * (r + 1.0))
        self._r = r

    def expand(self, z: np.ndarray) -> np.ndarray:
        a = np.asarray(z, dtype=float) * self._norm
        x = np.zeros(self.k)
        x[:-1] = np.cumsum(a[::-1])[::-1]
        x[1:] -= self._r * a
        return x

    def reduce(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        return self._norm * (np.cumsum(v)[:-1] - self._r * v[1:])

    def dense(self) -> np.ndarray:
        return zero_sum_basis(self.k)


def zero_sum_map(k: int) -> DenseZeroSum:
    """The map of a zero-sum facet with ``k`` levels: dense up to :data:`DENSE_BASIS_MAX`, O(k) above."""
    return DenseZeroSum(k) if k <= DENSE_BASIS_MAX else HelmertMap(k)


def quadrature(n_nodes: int = 21) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``t`` and normalised weights ``w`` (Σw = 1) for ``E[f(θ)]``, θ ~ N(0, 1).

    Example:
        >>> t, w = quadrature(21)
        >>> round(float(w.sum()), 12), round(float(w @ t**2), 12)
        (1.0, 1.0)
    """
    t, w = hermegauss(n_nodes)
    return t, w / w.sum()


def partial_credit_probabilities(eta: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Category probabilities of the partial-credit model, ``P(y=k) ∝ exp(Σ_{h≤k}(η − τ_h))``.

    ``eta`` has any shape; ``tau`` holds the M step thresholds. Returns ``eta.shape + (M+1,)``.

    Example:
        >>> p = partial_credit_probabilities(np.array([-2.0, 0.0, 1.5]), np.array([-0.4, 0.4]))
        >>> np.allclose(p.sum(-1), 1.0)
        True
    """
    eta = np.asarray(eta, dtype=float)
    tau = np.asarray(tau, dtype=float)
    steps = eta[..., None] - tau
    logits = np.concatenate([np.zeros(eta.shape + (1,)), np.cumsum(steps, axis=-1)], axis=-1)
    return np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))


@dataclass(frozen=True)
class Design:
    n_items: int
    n_crit: int
    n_raters: int
    n_groups: int  # 0 = no group facet
    n_cov: int
    n_steps: np.ndarray  # (J,) M_j
    m_max: int
    cell_j: np.ndarray
    cell_r: np.ndarray
    cell_g: np.ndarray
    cell_v: np.ndarray  # (n_cells, C) covariate values of the cell's exchange (C may be 0)
    counts_cat: sparse.csr_matrix  # (I, (M+1)*n_cells) counts per category x cell (category-major)
    counts_cell: sparse.csr_matrix  # (I, n_cells)
    cell_cat_total: np.ndarray  # (n_cells, M+1) counts over exchanges
    n_obs: int
    q_rater: DenseZeroSum  # zero_sum_map(R): expand(z) = Qᵀz, reduce(v) = Qv
    q_group: np.ndarray
    q_steps: tuple[np.ndarray, ...]  # per criterion, Q_{M_j}
    # unique exact patterns (docs/design/effects.md#canonical-coding), in sorted order, with their multiplicities
    pat_counts_cat: sparse.csr_matrix  # (P, (M+1)*n_cells)
    pat_counts_cell: sparse.csr_matrix  # (P, n_cells)
    pat_weight: np.ndarray  # (P,)
    item_pattern: np.ndarray  # (I,) pattern of each exchange
    item_theta_rep: np.ndarray  # (I,) first pattern (sorted order) of the exchange's θ-key
    n_topics: int = 0
    cell_x: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (n_cells, K) topic indicators
    q_topic: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))

    @property
    def n_cells(self) -> int:
        return int(self.cell_j.shape[0])

    def sizes(self) -> dict[str, int]:
        """Number of free parameters per block (layout of the optimiser vector)."""
        return {
            "b": self.n_crit,
            "zs": max(self.n_raters - 1, 0),
            "gamma": self.n_crit * self.n_cov,
            "zbeta": self.n_crit * max(self.n_groups - 1, 0),
            "ztopic": self.n_crit * max(self.n_topics - 1, 0),
            "ztau": int(sum(max(int(m) - 1, 0) for m in self.n_steps)),
        }


def build_design(
    item: np.ndarray,
    crit: np.ndarray,
    rater: np.ndarray,
    cat: np.ndarray,
    *,
    n_items: int,
    n_crit: int,
    n_raters: int,
    n_steps: np.ndarray,
    item_group: np.ndarray | None,
    n_groups: int,
    item_cov: np.ndarray | None,
    item_topic: np.ndarray | None = None,
) -> Design:
    """Cells (criterion, rater, group and the exchange's covariate/topic values), the count matrices
    per exchange and per unique exact pattern, and the θ-key representatives (``docs/design/effects.md#canonical-coding``).

    Args:
        item: Exchange code per observation.
        crit: Criterion code per observation.
        rater: Rater code per observation.
        cat: Category per observation (0 lowest).
        n_items: Number of exchanges.
        n_crit: Number of criteria.
        n_raters: Number of raters.
        n_steps: Steps (categories − 1) per criterion.
        item_group: Group code per exchange; ``None``: one group.
        n_groups: Number of groups.
        item_cov: Covariates per exchange (exchanges × covariates); ``None``: none.
        item_topic: Topic indicators per exchange (exchanges × K); ``None``: none.
    """
    m_max = int(n_steps.max()) if n_steps.size else 1
    group = item_group[item] if item_group is not None else np.zeros_like(item)
    n_cov = 0 if item_cov is None else int(item_cov.shape[1])
    n_topics = 0 if item_topic is None else int(item_topic.shape[1])
    # a cell shares the linear predictor; with covariates or topics that needs the exchange's values,
    # coded by their sorted unique rows so the coding does not depend on the row order
    key = (crit.astype(np.int64) * max(n_raters, 1) + rater) * max(n_groups, 1) + group
    if n_cov or n_topics:
        exo = np.hstack([m for m in (item_cov, item_topic) if m is not None and m.shape[1]])
        uniq_exo, item_exo = np.unique(exo, axis=0, return_inverse=True)
        key = key * uniq_exo.shape[0] + item_exo.ravel()[item]
    uniq, cell = np.unique(key, return_inverse=True)
    n_cells = uniq.shape[0]
    first = np.zeros(n_cells, dtype=np.int64)
    first[cell[::-1]] = np.arange(item.shape[0])[::-1]
    cell_j, cell_r, cell_g = crit[first], rater[first], group[first]
    cell_v = item_cov[item[first]] if n_cov else np.zeros((n_cells, 0))
    cell_x = item_topic[item[first]] if n_topics else np.zeros((n_cells, 0))
    ncat = m_max + 1
    ones = np.ones(item.shape[0])
    counts_cat = sparse.csr_matrix((ones, (item, cat * n_cells + cell)), shape=(n_items, n_cells * ncat))
    counts_cat.sum_duplicates()
    counts_cell = sparse.csr_matrix((ones, (item, cell)), shape=(n_items, n_cells))
    counts_cell.sum_duplicates()
    cell_cat_total = np.bincount(cell * ncat + cat, minlength=n_cells * ncat).reshape(n_cells, ncat).astype(float)
    score_total = np.bincount(item, cat.astype(float), minlength=n_items).astype(np.int64)
    patterns = _patterns(counts_cat, counts_cell, score_total)
    return Design(
        n_items=n_items,
        n_crit=n_crit,
        n_raters=n_raters,
        n_groups=n_groups,
        n_cov=n_cov,
        n_steps=n_steps,
        m_max=m_max,
        cell_j=cell_j,
        cell_r=cell_r,
        cell_g=cell_g,
        cell_v=cell_v,
        counts_cat=counts_cat,
        counts_cell=counts_cell,
        cell_cat_total=cell_cat_total,
        n_obs=int(item.shape[0]),
        q_rater=zero_sum_map(max(n_raters, 1)),
        q_group=zero_sum_basis(max(n_groups, 1)),
        q_steps=tuple(zero_sum_basis(max(int(m), 1)) for m in n_steps),
        n_topics=n_topics,
        cell_x=cell_x,
        q_topic=zero_sum_basis(max(n_topics, 1)),
        **patterns,
    )


def _row_keys(m: sparse.csr_matrix) -> list[tuple[int, ...]]:
    """One hashable, sortable key per row of a canonical CSR matrix: its (column, count) pairs."""
    m.sort_indices()
    ind, dat, ptr = m.indices.tolist(), np.rint(m.data).astype(np.int64).tolist(), m.indptr.tolist()
    return [tuple(v for pair in zip(ind[a:b], dat[a:b], strict=True) for v in pair) for a, b in pairwise(ptr)]


def _patterns(counts_cat: sparse.csr_matrix, counts_cell: sparse.csr_matrix, score_total: np.ndarray) -> dict[str, Any]:
    """Unique exact patterns in sorted order (rows of ``counts_cat``), their multiplicities, the pattern of
    each exchange and, per exchange, the first pattern of its θ-key (its cells with counts, and T).

    Example:
        >>> cc = sparse.csr_matrix(np.array([[1.0, 0], [0, 1], [1, 0]]))
        >>> p = _patterns(cc, sparse.csr_matrix(np.ones((3, 1))), np.array([0, 1, 0]))
        >>> p["pat_weight"].tolist(), p["item_pattern"].tolist()
        ([2.0, 1.0], [0, 1, 0])
    """
    keys = _row_keys(counts_cat)
    uniq = sorted(set(keys))
    code = {k: n for n, k in enumerate(uniq)}
    item_pattern = np.fromiter((code[k] for k in keys), dtype=np.int64, count=len(keys))
    first = np.full(len(uniq), -1, dtype=np.int64)
    first[item_pattern[::-1]] = np.arange(len(keys))[::-1]
    weight = np.bincount(item_pattern, minlength=len(uniq)).astype(float)
    cell_keys = _row_keys(counts_cell)
    rep: dict[tuple, int] = {}
    for n in range(len(uniq)):  # patterns in sorted order: the first one seen is the representative
        i = int(first[n])
        rep.setdefault((cell_keys[i], int(score_total[i])), n)
    item_rep = np.fromiter(
        (rep[(cell_keys[i], int(score_total[i]))] for i in range(len(keys))), dtype=np.int64, count=len(keys)
    )
    return {
        "pat_counts_cat": counts_cat[first],
        "pat_counts_cell": counts_cell[first],
        "pat_weight": weight,
        "item_pattern": item_pattern,
        "item_theta_rep": item_rep,
    }


def short_number(v: float) -> str:
    """A number in facets tables and notes: 6 significant digits.

    >>> short_number(212.4), short_number(1 / 3)
    ('212.4', '0.333333')
    """
    return f"{v:.6g}"


def reference_text(
    cov_names: Sequence[str],
    cov_scales: Sequence[tuple[str, float, float]],
    topic_names: Sequence[str] = (),
    group_levels: Sequence[str] = (),
) -> str:
    """The reference point of baseline probabilities and effects (``docs/design/effects.md#reference-point``), in raw units.

    Args:
        cov_names: The covariate names.
        cov_scales: Per covariate (scale, mean, SD), as from :func:`scale_covariates`.
        topic_names: The topic names.
        group_levels: The group levels.

    Example:
        >>> reference_text(["flag", "len"], [("raw", 0.1, 0.3), ("z", 212.4, 85.7)], ["t1", "t2"])
        'theta=0; s=0 (mean rater); flag=0 (raw); len=212.4 (mean; z); topics=0'
    """
    parts = ["theta=0", "s=0 (mean rater)"]
    for name, (scale, mean, _sd) in zip(cov_names, cov_scales, strict=True):
        parts.append(f"{name}=0 (raw)" if scale == "raw" else f"{name}={short_number(mean)} (mean; z)")
    if topic_names:
        parts.append("topics=0")
    if len(group_levels) > 1:
        parts.append("groups=mean")
    return "; ".join(parts)


def covariate_reference(name: str, scale: tuple[str, float, float]) -> str:
    """The ``reference`` cell of a ``covariate:<name>`` facets row (``docs/design/effects.md#covariate-scale``).

    Example:
        >>> covariate_reference("len", ("z", 212.4, 85.7))
        'z: per 1 sd (mean 212.4, sd 85.7); len=212.4'
    """
    kind, mean, sd = scale
    if kind == "raw":
        return f"raw: per 1 unit; {name}=0"
    return f"z: per 1 sd (mean {short_number(mean)}, sd {short_number(sd)}); {name}={short_number(mean)}"


def summary_report(result: Any, *, header: str, fit_line: str, spread: str) -> str:
    """The text report shared by the MML and the Bayesian results: data, fit, reliability, facets.

    Args:
        result: The MML or Bayesian result.
        header: First line of the report.
        fit_line: The line on the fit (log-likelihood or sampler diagnostics).
        spread: Label of each facet's uncertainty column (e.g. ``se``, ``sd``).
    """
    lines = [
        header,
        f"  observations {result.n_obs}, exchanges {result.n_items}, criteria {len(result.criteria)}, "
        f"raters {len(result.raters)}" + (" (rater facet dropped)" if len(result.raters) <= 1 else ""),
        f"  {fit_line}",
        f"  EAP reliability {result.reliability:.3f}",
        f"  reference point for probabilities: {result.reference_point}",
    ]
    if result.covariate_names:
        lines.append(f"  covariates (z-scored unless stated otherwise): {', '.join(result.covariate_names)}")
    if result.dropped_criteria:
        lines.append(f"  dropped (single observed score): {', '.join(result.dropped_criteria)}")
    for row in result.facets_table().filter(pl.col("facet") != "baseline_probability").iter_rows(named=True):
        lines.append(
            f"  {row['facet']:<14} {row['level']:<28} {row['estimate']:8.3f}  {spread} {row['se']:.3f}"
            f"  [{row['lower']:.3f}, {row['upper']:.3f}]"
        )
    return "\n".join(lines)


def _codes(s: pl.Series, *, sort: bool) -> tuple[np.ndarray, pl.Series]:
    levels = s.unique(maintain_order=not sort)
    if sort:
        levels = levels.sort()
    codes = s.replace_strict(levels, pl.Series(np.arange(len(levels))), return_dtype=pl.Int64).to_numpy()
    return codes, levels


def _per_item_table(
    df: pl.DataFrame, id_col: str, ids: pl.Series, cols: list[str], what: str
) -> pl.DataFrame:
    require_columns(df, [id_col, *cols], source=what)
    if df[id_col].dtype != ids.dtype:
        try:
            df = df.with_columns(pl.col(id_col).cast(ids.dtype))
        except pl.exceptions.PolarsError as exc:
            raise InputSchemaError(f"{what}: column {id_col!r} cannot be matched to the ratings ids") from exc
    if df[id_col].is_duplicated().any():
        raise InputSchemaError(f"{what}: {id_col!r} has duplicated ids", hint="give one row per exchange")
    joined = pl.DataFrame({id_col: ids}).join(df.select([id_col, *cols]), on=id_col, how="left", maintain_order="left")
    missing = joined.select(pl.any_horizontal(pl.col(cols).is_null())).to_series()
    if missing.any():
        raise InputSchemaError(
            f"{what}: {int(missing.sum())} rated exchanges have no value in {cols}",
            hint="provide a value for every exchange in the ratings",
        )
    return joined


@dataclass(frozen=True)
class PreparedRatings:
    design: Design
    model: str
    ids: pl.Series
    criteria: list[str]
    raters: list[str]
    score_levels: dict[str, list[float]]
    dropped: list[str]
    cov_names: list[str]
    group_levels: list[str]
    crit_codes: np.ndarray
    cat: np.ndarray
    #: coding indices of the criteria in display (first-appearance) order; ``criteria`` is the coding (sorted) order
    display: list[int] = field(default_factory=list)
    #: per covariate: (scale ``raw``/``z``, mean, population SD) over the rated exchanges
    cov_scales: list[tuple[str, float, float]] = field(default_factory=list)
    #: raw covariate matrix (exchanges × covariates) in the order of ``ids``
    cov_raw: np.ndarray | None = None
    topic_names: list[str] = field(default_factory=list)
    item_topic: np.ndarray | None = None


def prepare_ratings(
    ratings: RatingsLike,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    covariates: pl.DataFrame | None = None,
    covariate_cols: str | Sequence[str] | None = None,
    standardize_covariates: bool | None = None,
    covariate_scale: str = "auto",
    groups: pl.DataFrame | None = None,
    group_col: str | None = None,
    topics: pl.DataFrame | None = None,
    topic_cols: str | Sequence[str] | None = None,
    model: str = "auto",
) -> PreparedRatings:
    """Validate the inputs, map scores to categories and collapse observations into cells.

    Canonical coding (``docs/design/effects.md#canonical-coding``): the cleaned table is sorted by (id, criterion, rater) as
    strings and exchanges, criteria and raters are coded in sorted order, so the design does not depend
    on the row order of any input; ``display`` keeps the criteria's first-appearance order for output.
    ``ratings`` may be a :class:`~tutormetrics.psychometrics.ratings.Ratings` (cleaned once; pass its ``columns()``).
    Covariates, topics, groups and rater sets that cannot be told apart raise here, before any fit
    (:func:`~tutormetrics.psychometrics.mfrm.identify.check_identified`, ``docs/design/effects.md#identifiability``).

    Args:
        ratings: Long ratings (a table, a path or a cleaned ``Ratings``).
        id_col: The exchange id column.
        rater_col: The rater column.
        criterion_col: The criterion column.
        score_col: The score column.
        covariates: Covariate table, one row per exchange.
        covariate_cols: Its covariate columns; ``None``: every numeric non-id column.
        standardize_covariates: Deprecated; True/False mean ``covariate_scale`` ``z``/``raw``.
        covariate_scale: ``auto`` (0/1 raw, others z), ``raw`` or ``z``.
        groups: Group table, one row per exchange.
        group_col: Its group column.
        topics: Topic table, one row per exchange.
        topic_cols: Its topic columns; ``None``: every 0/1 non-id column.
        model: ``auto`` (``binary`` when every score is 0/1, else ``partial_credit``), ``binary`` or ``partial_credit``.
    """
    covariate_scale = resolve_covariate_scale(covariate_scale, standardize_covariates)
    require_columns(ratings_table(ratings), [id_col, rater_col, criterion_col, score_col], source="ratings")
    df = (
        cleaned_long(ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col)
        .filter(pl.col("_score").is_not_null())
        .rename({"_id": id_col, "_rater": rater_col, "_crit": criterion_col, "_score": score_col})
        .select(id_col, rater_col, criterion_col, score_col)
    )
    if df.height == 0:
        raise InputSchemaError("ratings: no non-missing scores")
    if not isinstance(ratings, Ratings):  # a Ratings was checked when it was cleaned (--levels, --drop-out-of-scale)
        scale_filter(df[criterion_col].cast(pl.String), df[score_col], df[id_col],  # off the scale: an error
                     log=lambda m: warnings.warn(m.removeprefix("note: "), stacklevel=4))  # a rare category: noted
    shown = [str(c) for c in df[criterion_col].cast(pl.String).unique(maintain_order=True).to_list()]
    df = df.sort(
        [pl.col(id_col).cast(pl.String), pl.col(criterion_col).cast(pl.String), pl.col(rater_col).cast(pl.String)]
    )
    model = _resolve_model(df[score_col], model)
    score_levels, dropped = _score_levels(df, criterion_col, score_col, model)
    if dropped:
        warnings.warn(f"criteria with a single observed score were dropped: {dropped}", stacklevel=2)
        df = df.filter(~pl.col(criterion_col).cast(pl.String).is_in(dropped))
        if df.height == 0:
            raise InputSchemaError("ratings: every criterion has a single observed score; nothing to fit")
    crit_codes, crit_levels = _codes(df[criterion_col].cast(pl.String), sort=True)
    criteria = [str(c) for c in crit_levels.to_list()]
    display = [criteria.index(c) for c in shown if c in criteria]
    item_codes, ids = _codes(df[id_col], sort=True)
    rater_codes, rater_levels = _codes(df[rater_col], sort=True)
    raters = [str(r) for r in rater_levels.to_list()]
    cat = _categories(crit_codes, df[score_col], criteria, score_levels)
    if model == "binary":
        n_steps = np.ones(len(criteria), dtype=np.int64)
    else:
        n_steps = np.array([len(score_levels[c]) - 1 for c in criteria], dtype=np.int64)
    cov_names, cov_raw = _covariate_matrix(covariates, covariate_cols, id_col=id_col, ids=ids)
    item_cov, cov_scales = scale_covariates(cov_raw, cov_names, covariate_scale)
    item_group, group_levels = _group_codes(groups, group_col, id_col=id_col, ids=ids)
    topic_names, item_topic = topic_matrix(topics, topic_cols, id_col=id_col, ids=ids)
    # terms that cannot be told apart are refused before any fit (docs/design/effects.md#identifiability)
    check_identified(cov_raw, cov_names, item_topic, topic_names, item_group, group_levels,
                     rated=(item_codes, rater_codes, len(raters)))
    design = build_design(
        item_codes,
        crit_codes,
        rater_codes,
        cat,
        n_items=len(ids),
        n_crit=len(criteria),
        n_raters=len(raters),
        n_steps=n_steps,
        item_group=item_group,
        n_groups=len(group_levels),
        item_cov=item_cov,
        item_topic=item_topic,
    )
    return PreparedRatings(
        design=design,
        model=model,
        ids=ids,
        criteria=criteria,
        raters=raters,
        score_levels=score_levels,
        dropped=dropped,
        cov_names=cov_names,
        group_levels=group_levels,
        crit_codes=crit_codes,
        cat=cat,
        display=display,
        cov_scales=cov_scales,
        cov_raw=cov_raw,
        topic_names=topic_names,
        item_topic=item_topic,
    )


def _resolve_model(scores: pl.Series, model: str) -> str:
    """``auto`` → ``binary`` when every score is 0 or 1, else ``partial_credit``; ``binary`` needs 0/1.

    Example:
        >>> _resolve_model(pl.Series([0.0, 1.0, 0.5]), "auto")
        'partial_credit'
    """
    binary_scores = bool(scores.is_in([0.0, 1.0]).all())
    if model == "auto":
        return "binary" if binary_scores else "partial_credit"
    if model == "binary" and not binary_scores:
        raise ConfigError(
            "model='binary' needs scores 0/1",
            hint="use model='partial_credit' (or 'auto'), or pass a dichotomised score column (e.g. --score endorsed)",
        )
    return model


def _score_levels(
    df: pl.DataFrame, criterion_col: str, score_col: str, model: str
) -> tuple[dict[str, list[float]], list[str]]:
    """Per criterion (in order of appearance) its ordered categories — the distinct observed scores,
    or ``[0, 1]`` for the binary model — and the criteria with a single observed score (dropped).

    Example:
        >>> df = pl.DataFrame({"c": ["a", "a", "b", "b"], "s": [0.0, 2.0, 1.0, 1.0]})
        >>> _score_levels(df, "c", "s", "partial_credit")
        ({'a': [0.0, 2.0], 'b': [1.0]}, ['b'])
    """
    score_levels: dict[str, list[float]] = {}
    dropped: list[str] = []
    for crit in df[criterion_col].unique(maintain_order=True).to_list():
        distinct = sorted(set(df.filter(pl.col(criterion_col) == crit)[score_col].to_list()))
        score_levels[str(crit)] = [0.0, 1.0] if model == "binary" else distinct
        if len(distinct) < 2:
            dropped.append(str(crit))
    return score_levels, dropped


def _categories(
    crit_codes: np.ndarray, scores: pl.Series, criteria: list[str], score_levels: dict[str, list[float]]
) -> np.ndarray:
    """Category index of each score within its criterion's ordered levels (0/0.5/1 → 0/1/2).

    Example:
        >>> _categories(np.array([0, 0, 1]), pl.Series([0.5, 1.0, 2.0]), ["a", "b"], {"a": [0.5, 1.0], "b": [0.0, 2.0]})
        array([0, 1, 1])
    """
    map_df = pl.DataFrame(
        {
            "__j": [j for j, c in enumerate(criteria) for _ in score_levels[c]],
            "__score": [v for c in criteria for v in score_levels[c]],
            "__cat": [k for c in criteria for k in range(len(score_levels[c]))],
        },
        schema={"__j": pl.Int64, "__score": pl.Float64, "__cat": pl.Int64},
    )
    cat = (
        pl.DataFrame({"__j": crit_codes, "__score": scores})
        .join(map_df, on=["__j", "__score"], how="left", maintain_order="left")["__cat"]
        .to_numpy()
    )
    return cat.astype(np.int64)


def _covariate_matrix(
    covariates: pl.DataFrame | None,
    covariate_cols: str | Sequence[str] | None,
    *,
    id_col: str,
    ids: pl.Series,
) -> tuple[list[str], np.ndarray | None]:
    """The covariate names and the raw (exchanges × covariates) matrix in the order of ``ids``;
    ``([], None)`` without covariates. Default columns: every numeric column but the id. A covariate
    constant over the rated exchanges raises (on any scale)."""
    if covariates is None:
        return [], None
    if covariate_cols is None:
        cov_names = [c for c, dt in covariates.schema.items() if c != id_col and dt.is_numeric()]
    elif isinstance(covariate_cols, str):
        cov_names = [covariate_cols]
    else:
        cov_names = list(covariate_cols)
    if not cov_names:
        raise InputSchemaError("covariates: no numeric covariate column found", hint="name it with covariate_cols / --covariate-col")
    joined = _per_item_table(covariates, id_col, ids, cov_names, "covariates")
    try:
        item_cov = joined.select(pl.col(cov_names).cast(pl.Float64)).to_numpy()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"covariates: {cov_names} must be numeric") from exc
    const = [n for n, col in zip(cov_names, item_cov.T, strict=True) if np.all(col == col[0])]
    if const:
        raise InputSchemaError(f"covariates: {', '.join(const)} is constant over the rated exchanges", hint="drop it")
    return cov_names, item_cov


COVARIATE_SCALES: tuple[str, ...] = ("auto", "raw", "z")


def resolve_covariate_scale(scale: str, standardize: bool | None = None) -> str:
    """``auto``/``raw``/``z``; the deprecated ``standardize_covariates`` True/False means ``z``/``raw``.

    Example:
        >>> resolve_covariate_scale("auto", True)
        'z'
    """
    if standardize is not None:
        warnings.warn("standardize_covariates is deprecated; use covariate_scale='z' or 'raw'", DeprecationWarning, stacklevel=3)
        return "z" if standardize else "raw"
    if scale not in COVARIATE_SCALES:
        raise ConfigError(f"unknown covariate scale {scale!r}", hint="use auto, raw or z")
    return scale


def scale_covariates(
    raw: np.ndarray | None, names: list[str], scale: str
) -> tuple[np.ndarray | None, list[tuple[str, float, float]]]:
    """The covariates on the model scale (``docs/design/effects.md#covariate-scale``) and per column (scale, mean, population SD).

    ``auto``: a 0/1 column raw, any other z-scored; ``raw``: all as given; ``z``: all z-scored.

    Args:
        raw: Covariates per exchange (exchanges × columns); ``None``: none.
        names: The column names.
        scale: ``auto``, ``raw`` or ``z``.

    Example:
        >>> m, info = scale_covariates(np.array([[0.0, 1.0], [1.0, 3.0]]), ["f", "x"], "auto")
        >>> m.tolist(), [i[0] for i in info]
        ([[0.0, -1.0], [1.0, 1.0]], ['raw', 'z'])
    """
    if raw is None:
        return None, []
    out = raw.astype(float).copy()
    info: list[tuple[str, float, float]] = []
    for c in range(raw.shape[1]):
        col = raw[:, c]
        mean, sd = float(col.mean()), float(col.std())
        binary = bool(np.all((col == 0) | (col == 1)))
        use_z = scale == "z" or (scale == "auto" and not binary)
        if use_z:
            out[:, c] = (col - mean) / sd
        info.append(("z" if use_z else "raw", mean, sd))
    return out, info


def topic_matrix(
    topics: pl.DataFrame | None, topic_cols: str | Sequence[str] | None, *, id_col: str, ids: pl.Series
) -> tuple[list[str], np.ndarray | None]:
    """Multi-hot topic indicators (exchanges × K, in the order of ``ids``; ``docs/design/effects.md#topics``).

    Default columns: every non-id column whose values are all 0/1 (true/false accepted). At least two
    columns; each 0/1 without missing values and neither all 0 nor all 1.

    Args:
        topics: Topic table; ``None``: no topics.
        topic_cols: Its topic columns; ``None``: every 0/1 non-id column.
        id_col: Its exchange id column.
        ids: The exchange ids, in model order.

    Example:
        >>> t = pl.DataFrame({"id": ["a", "b"], "t1": [1, 0], "t2": [0, 1]})
        >>> topic_matrix(t, None, id_col="id", ids=pl.Series(["a", "b"]))[1].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    if topics is None:
        return [], None
    if topic_cols is None:
        names = [c for c in topics.columns if c != id_col and _is_binary_column(topics[c])]
    else:
        names = [topic_cols] if isinstance(topic_cols, str) else list(topic_cols)
    if len(names) < 2:
        raise InputSchemaError(
            f"topics: {len(names)} topic column(s) {names}; the zero-sum topic effects need at least 2",
            hint="name two or more 0/1 columns with --topic-col",
        )
    require_columns(topics, [id_col, *names], source="topics")
    for n in names:
        col = topics[n]
        if col.null_count():
            raise InputSchemaError(f"topics: column {n!r} has {col.null_count()} missing value(s)", hint="use 0 or 1")
        if not _is_binary_column(col):
            raise InputSchemaError(f"topics: column {n!r} has values other than 0/1", hint="topics are 0/1 indicators")
    joined = _per_item_table(topics.with_columns(pl.col(names).cast(pl.Float64)), id_col, ids, names, "topics")
    mat = joined.select(names).to_numpy().astype(float)
    for n, col in zip(names, mat.T, strict=True):
        if np.all(col == col[0]):
            raise InputSchemaError(
                f"topics: column {n!r} is all {int(col[0])} over the rated exchanges", hint="drop it: it has no contrast"
            )
    return names, mat


def _is_binary_column(col: pl.Series) -> bool:
    if col.dtype == pl.Boolean:
        return True
    if not col.dtype.is_numeric():
        return False
    vals = col.drop_nulls()
    return vals.len() > 0 and bool(vals.cast(pl.Float64).is_in([0.0, 1.0]).all())


def _group_codes(
    groups: pl.DataFrame | None, group_col: str | None, *, id_col: str, ids: pl.Series
) -> tuple[np.ndarray | None, list[str]]:
    """Group code of each exchange (in the order of ``ids``) and the sorted group levels; ``(None, [])``
    without groups. Without ``group_col`` the table must have exactly one column besides the id."""
    if groups is None:
        return None, []
    if group_col is None:
        others = [c for c in groups.columns if c != id_col]
        if len(others) != 1:
            raise InputSchemaError("groups: name the group column", hint=f"choose one of {others} with group_col / --group-col")
        group_col = others[0]
    joined = _per_item_table(groups, id_col, ids, [group_col], "groups")
    item_group, levels = _codes(joined[group_col].cast(pl.String), sort=True)
    if len(levels) < 2:  # no contrast: no group effect, and --effects would have no group rows
        raise InputSchemaError(
            f"groups: column {group_col!r} has one level ({levels[0]!r}) over the rated exchanges: no group contrast",
            hint="drop --groups, or choose a column with two or more levels (--group-col)",
        )
    return item_group, [str(g) for g in levels.to_list()]
