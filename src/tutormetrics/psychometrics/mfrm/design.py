"""The MFRM design shared by the MML and the Bayesian fits: priors, the zero-sum basis, quadrature,
partial-credit probabilities, and the ratings → categories → cells preparation (``statistics.md`` §2).

Example:
    >>> zero_sum_basis(3).sum(axis=1).round(12).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.polynomial.hermite_e import hermegauss
from scipy import sparse
from scipy.special import logsumexp

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io import require_columns
from tutormetrics.psychometrics.ratings import RatingsLike, cleaned_long, ratings_table

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
    q_rater: np.ndarray
    q_group: np.ndarray
    q_steps: tuple[np.ndarray, ...]  # per criterion, Q_{M_j}

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
) -> Design:
    m_max = int(n_steps.max()) if n_steps.size else 1
    group = item_group[item] if item_group is not None else np.zeros_like(item)
    n_cov = 0 if item_cov is None else int(item_cov.shape[1])
    # a cell shares the linear predictor; with a covariate that requires the exchange itself
    key = (crit.astype(np.int64) * max(n_raters, 1) + rater) * max(n_groups, 1) + group
    if n_cov:
        key = key * n_items + item
    uniq, cell = np.unique(key, return_inverse=True)
    n_cells = uniq.shape[0]
    first = np.zeros(n_cells, dtype=np.int64)
    first[cell[::-1]] = np.arange(item.shape[0])[::-1]
    cell_j, cell_r, cell_g = crit[first], rater[first], group[first]
    cell_v = item_cov[item[first]] if n_cov else np.zeros((n_cells, 0))
    ncat = m_max + 1
    ones = np.ones(item.shape[0])
    counts_cat = sparse.csr_matrix((ones, (item, cat * n_cells + cell)), shape=(n_items, n_cells * ncat))
    counts_cat.sum_duplicates()
    counts_cell = sparse.csr_matrix((ones, (item, cell)), shape=(n_items, n_cells))
    counts_cell.sum_duplicates()
    cell_cat_total = np.bincount(cell * ncat + cat, minlength=n_cells * ncat).reshape(n_cells, ncat).astype(float)
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
        q_rater=zero_sum_basis(max(n_raters, 1)),
        q_group=zero_sum_basis(max(n_groups, 1)),
        q_steps=tuple(zero_sum_basis(max(int(m), 1)) for m in n_steps),
    )


def summary_report(result: Any, *, header: str, fit_line: str, spread: str) -> str:
    """The text report shared by the MML and the Bayesian results: data, fit, reliability, facets."""
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


def prepare_ratings(
    ratings: RatingsLike,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
    covariates: pl.DataFrame | None = None,
    covariate_cols: str | Sequence[str] | None = None,
    standardize_covariates: bool = True,
    groups: pl.DataFrame | None = None,
    group_col: str | None = None,
    model: str = "auto",
) -> PreparedRatings:
    """Validate the inputs, map scores to categories and collapse observations into cells.

    Exchanges and raters are coded in sorted order, criteria in order of appearance. ``ratings`` may be a
    :class:`~tutormetrics.psychometrics.ratings.Ratings` (cleaned once; pass its ``columns()``).
    """
    require_columns(ratings_table(ratings), [id_col, rater_col, criterion_col, score_col], source="ratings")
    df = (
        cleaned_long(ratings, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col)
        .filter(pl.col("_score").is_not_null())
        .rename({"_id": id_col, "_rater": rater_col, "_crit": criterion_col, "_score": score_col})
        .select(id_col, rater_col, criterion_col, score_col)
    )
    if df.height == 0:
        raise InputSchemaError("ratings: no non-missing scores")
    model = _resolve_model(df[score_col], model)
    score_levels, dropped = _score_levels(df, criterion_col, score_col, model)
    if dropped:
        warnings.warn(f"criteria with a single observed score were dropped: {dropped}", stacklevel=2)
        df = df.filter(~pl.col(criterion_col).cast(pl.String).is_in(dropped))
        if df.height == 0:
            raise InputSchemaError("ratings: every criterion has a single observed score; nothing to fit")
    crit_codes, crit_levels = _codes(df[criterion_col], sort=False)
    criteria = [str(c) for c in crit_levels.to_list()]
    item_codes, ids = _codes(df[id_col], sort=True)
    rater_codes, rater_levels = _codes(df[rater_col], sort=True)
    raters = [str(r) for r in rater_levels.to_list()]
    cat = _categories(crit_codes, df[score_col], criteria, score_levels)
    if model == "binary":
        n_steps = np.ones(len(criteria), dtype=np.int64)
    else:
        n_steps = np.array([len(score_levels[c]) - 1 for c in criteria], dtype=np.int64)
    cov_names, item_cov = _covariate_matrix(
        covariates, covariate_cols, id_col=id_col, ids=ids, standardize=standardize_covariates
    )
    item_group, group_levels = _group_codes(groups, group_col, id_col=id_col, ids=ids)
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
    standardize: bool,
) -> tuple[list[str], np.ndarray | None]:
    """The covariate names and the (exchanges × covariates) matrix in the order of ``ids``, z-scored
    over the rated exchanges when ``standardize``; ``([], None)`` without covariates. Default columns:
    every numeric column but the id."""
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
    if standardize:
        sd = item_cov.std(axis=0)
        if np.any(sd == 0):
            raise InputSchemaError("covariates: a covariate is constant over the rated exchanges")
        item_cov = (item_cov - item_cov.mean(axis=0)) / sd
    return cov_names, item_cov


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
    return item_group, [str(g) for g in levels.to_list()]
