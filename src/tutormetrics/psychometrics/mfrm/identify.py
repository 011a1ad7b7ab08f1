"""Can the explanatory terms be told apart? The rank of the exchange-level design, checked before any fit
(``docs/design/effects.md#identifiability``).

Every criterion j has its own ``b_j``, ``γ_j·`` and zero-sum ``β_j·``, all multiplying the same exchange-level
columns, so one check covers every criterion. The intercept (``b_j``) and the zero-sum group codes together span the
group indicators ``G``; with ``W = [V, X]`` (covariates as given — z-scoring is a shift and a scale — and the 0/1
topics) centred within the groups (overall, without groups) ``rank [G, W] = n_groups + rank W_c``, so only ``W_c``
(exchanges × (C + K)) goes through an SVD, whatever the number of groups. A null vector of ``W_c`` is a change of
the slopes (and of ``b`` or the group effects) that leaves every η unchanged: the terms where it is not zero are
named. One null vector is allowed: topics that together are constant within the groups (every exchange has one
topic) with a non-zero sum, the common level the zero-sum topic coding fixes by definition. The rater severities,
shared by the criteria, are checked against the same columns when the raters fall into sets with no exchange in
common (:func:`rater_sets`).

Example:
    >>> v = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 4.0], [3.0, 6.5]])
    >>> check_identified(v, ["x1", "x2"])
    >>> try:
    ...     check_identified(v[:, :1] @ np.array([[1.0, 2.0]]) + 3.0, ["x1", "x2"])
    ... except InputSchemaError as e:
    ...     print(e.args[0])
    explanatory terms: covariate 'x2' is a linear function of covariate 'x1': their effects cannot be told apart
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from tutormetrics.errors import InputSchemaError

__all__ = ["RANK_RTOL", "check_identified", "rater_sets", "term_columns"]

#: A singular value of the column-normalised design below ``RANK_RTOL`` × the largest counts as zero: two columns
#: are then "the same" when their correlation is within ``2·RANK_RTOL²`` (2e-8) of ±1 — exact dependence, or a
#: column derived from another and written with five or six significant digits (their effects' variance would
#: be inflated more than 10⁷-fold: the data cannot tell them apart either).
RANK_RTOL = 1e-4
#: A null vector's entry (relative to its largest) above this names the term.
SUPPORT_RTOL = 1e-3

_HINT = "drop one of them or merge them into one column: the fit would share their common effect between them arbitrarily"


def term_columns(
    item_cov: np.ndarray | None, cov_names: Sequence[str], item_topic: np.ndarray | None, topic_names: Sequence[str]
) -> tuple[np.ndarray, list[str]]:
    """The covariate and 0/1 topic columns (exchanges × (C + K)) and their labels (``covariate 'x'``, ``topic 't'``).

    Args:
        item_cov: Covariates (exchanges × C), as given or on the model scale; ``None``: none.
        cov_names: The covariate names.
        item_topic: Topic indicators (exchanges × K); ``None``: none.
        topic_names: The topic names.

    Example:
        >>> term_columns(np.ones((2, 1)), ["x"], None, [])[1]
        ["covariate 'x'"]
    """
    mats = [m for m in (item_cov, item_topic) if m is not None and m.shape[1]]
    n = mats[0].shape[0] if mats else 0
    cols = np.hstack(mats) if mats else np.zeros((n, 0))
    labels = [f"covariate {c!r}" for c in cov_names] + [f"topic {t!r}" for t in topic_names]
    return cols.astype(float), labels


def check_identified(
    item_cov: np.ndarray | None,
    cov_names: Sequence[str],
    item_topic: np.ndarray | None = None,
    topic_names: Sequence[str] = (),
    item_group: np.ndarray | None = None,
    group_levels: Sequence[str] = (),
    rated: tuple[np.ndarray, np.ndarray, int] | None = None,
) -> None:
    """Raise :class:`InputSchemaError` naming the terms when the covariates, topics and groups cannot be told apart.

    In order: every exchange its own group (group effects = θ; a group with a single exchange is warned about); two columns equal up to a linear rescaling, or a
    0/1 column that marks exactly one group; a covariate or topic constant within every group; any other linear
    dependence of the model's exchange-level columns (``docs/design/effects.md#identifiability``).

    Args:
        item_cov: Covariates (exchanges × C), as given (the messages' units) or on the model scale: the same
            check, as the intercept absorbs a shift; ``None``: none.
        cov_names: The covariate names.
        item_topic: Topic indicators (exchanges × K); ``None``: none.
        topic_names: The topic names.
        item_group: Group code per exchange (0 … n_groups − 1); ``None``: no group facet.
        group_levels: The group levels (sorted, as coded).
        rated: Exchange code and rater code per observation, and the number of raters; with two or more raters the
            rater severities are checked too (:func:`rater_sets`); ``None``: not checked.
    """
    n_groups = len(group_levels) if item_group is not None else 0
    cols, labels = term_columns(item_cov, cov_names, item_topic, topic_names)
    n_items = cols.shape[0] if cols.shape[1] else (0 if item_group is None else int(item_group.shape[0]))
    if n_groups > 1 and n_groups == n_items:
        raise InputSchemaError(
            f"groups: every exchange is its own group ({n_groups} groups for {n_items} exchanges): "
            "the group effects cannot be told apart from θ",
            hint="group by a column that several exchanges share (e.g. the tutor), or drop --groups",
        )
    if n_groups > 1:
        single = int(np.sum(np.bincount(item_group, minlength=n_groups) == 1))
        if single:
            warnings.warn(
                f"groups: {single} of {n_groups} groups have a single exchange; their group effects are told apart "
                "from that exchange's θ only by the priors",
                stacklevel=3,
            )
    if not cols.shape[1]:
        if n_groups > 1 and rated is not None and rated[2] > 1:
            _rater_check(cols, labels, item_group, n_groups, None, rater_sets(*rated, n_items=n_items))
        return
    group = item_group if n_groups > 1 else np.zeros(n_items, dtype=np.int64)
    _same_columns(cols, labels, len(cov_names))
    if n_groups > 1:
        _same_as_group(cols, labels, group, list(group_levels))
    allowed = _rank(cols, labels, group, max(n_groups, 1), len(cov_names))
    if rated is not None and rated[2] > 1:
        _rater_check(cols, labels, group, max(n_groups, 1), allowed, rater_sets(*rated, n_items=n_items))


def _centred(m: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``m`` minus its mean within each group (one group: the column mean)."""
    size = np.maximum(np.bincount(group, minlength=n_groups), 1).astype(float)
    means = np.stack([np.bincount(group, m[:, c], minlength=n_groups) for c in range(m.shape[1])], axis=1)
    return m - (means / size[:, None])[group]


def _same_columns(cols: np.ndarray, labels: list[str], n_cov: int) -> None:
    """Two columns with correlation ±1 (within the tolerance): the same variable entered twice. Two topics that
    are each other's complement are allowed (single-label topics with K = 2: the zero-sum coding separates them)."""
    z = cols - cols.mean(axis=0)
    z = z / np.linalg.norm(z, axis=0)  # no column is constant here (refused when read)
    corr = z.T @ z
    a_ix, b_ix = np.triu_indices(corr.shape[0], k=1)
    r = corr[a_ix, b_ix]
    same = (1.0 - np.abs(r) <= 2 * RANK_RTOL**2) & ~((a_ix >= n_cov) & (r < 0))
    for k in np.flatnonzero(same)[:1]:
        a, b = int(a_ix[k]), int(b_ix[k])
        how = "the same column as" if np.array_equal(cols[:, a], cols[:, b]) else "a linear function of"
        raise InputSchemaError(
            f"explanatory terms: {labels[b]} is {how} {labels[a]}: their effects cannot be told apart", hint=_HINT
        )


def _same_as_group(cols: np.ndarray, labels: list[str], group: np.ndarray, levels: list[str]) -> None:
    """A two-valued column whose one value marks exactly the exchanges of one group."""
    size = np.bincount(group, minlength=len(levels))
    for c, label in enumerate(labels):
        values = np.unique(cols[:, c])
        if values.size != 2:
            continue
        for v in values:
            members = group[cols[:, c] == v]
            g = int(members[0])
            if np.all(members == g) and members.size == size[g]:
                raise InputSchemaError(
                    f"explanatory terms: {label} marks exactly the exchanges of group {levels[g]!r}: "
                    "their effects cannot be told apart",
                    hint="drop the column, or drop --groups",
                )


def _rank(cols: np.ndarray, labels: list[str], group: np.ndarray, n_groups: int, n_cov: int) -> np.ndarray | None:
    """The null space ``N`` of ``[V, X]`` centred within the groups (columns normalised): a term constant within every
    group, then any dependence but one — topics that together are constant within the groups (single-label topics),
    which the zero-sum topic coding resolves (``N`` one vector with no covariate part and a non-zero sum over topics).
    Returns that vector (normalised coordinates), ``None`` without it."""
    wc = _centred(cols, group, n_groups)
    norm = np.linalg.norm(wc, axis=0)
    spread = np.linalg.norm(cols - cols.mean(axis=0), axis=0)
    flat = norm <= RANK_RTOL * spread
    if flat.any():  # constant overall is refused when the column is read
        raise InputSchemaError(
            f"explanatory terms: {labels[int(np.flatnonzero(flat)[0])]} is constant within every group: "
            "it cannot be told apart from the group effects",
            hint="drop it, or drop --groups",
        )
    unit = wc / norm
    if unit.shape[0] > unit.shape[1]:  # the same right singular vectors from the small R of unit = QR
        unit = np.linalg.qr(unit, mode="r")
    _, sv, vt = np.linalg.svd(unit, full_matrices=True)
    n_zero = unit.shape[1] - int(np.sum(sv > RANK_RTOL * max(float(sv.max()), 1.0)))
    if n_zero <= 0:
        return None
    null_unit = vt[unit.shape[1] - n_zero :].T  # (columns, nullity), normalised coordinates
    topic_sum = (null_unit[n_cov:] / norm[n_cov:, None]).sum(axis=0)  # Σ_k β_k of each null vector, raw units
    topic_size = (np.abs(null_unit[n_cov:]) / norm[n_cov:, None]).max(axis=0, initial=0.0)
    summed = np.abs(topic_sum) > SUPPORT_RTOL * np.maximum(topic_size, 1e-300)
    if n_zero == 1 and np.abs(null_unit[:n_cov, 0]).max(initial=0.0) <= SUPPORT_RTOL and summed[0]:
        return null_unit[:, 0]  # single-label topics: the zero-sum coding fixes their common level
    bad = null_unit
    if summed.any():  # the part of N the zero-sum coding does not fix: Σ_k β_k = 0
        _, _, wt = np.linalg.svd(topic_sum[None, :])
        bad = null_unit @ wt[1:].T if n_zero > 1 else null_unit
    weight = np.linalg.norm(bad, axis=1)
    named = [labels[i] for i in np.flatnonzero(weight > SUPPORT_RTOL * weight.max())]
    raw = bad / norm[:, None]
    offset = np.abs(cols @ raw).max()
    level = "the group effects" if n_groups > 1 else "the intercept"
    with_level = f" and {level}" if offset > SUPPORT_RTOL * (np.abs(cols) @ np.abs(raw)).max() else ""
    few = cols.shape[0] - n_groups < cols.shape[1]
    counts = f"; {cols.shape[0]} exchanges for {cols.shape[1]} terms" if few else ""
    raise InputSchemaError(
        f"explanatory terms: {_join(named)} are linearly dependent (one is a linear combination of the others"
        f"{with_level}{counts}): "
        "their effects cannot be told apart",
        hint=_HINT,
    )


def rater_sets(item: np.ndarray, rater: np.ndarray, n_raters: int, *, n_items: int) -> tuple[int, np.ndarray]:
    """The sets of raters linked through the exchanges they rated (connected components of the exchange–rater graph):
    their number and the set of each exchange.

    Args:
        item: Exchange code per observation.
        rater: Rater code per observation.
        n_raters: Number of raters.
        n_items: Number of exchanges.

    Example:
        >>> rater_sets(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2]), 3, n_items=3)
        (2, array([0, 0, 1], dtype=int32))
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    edges = coo_matrix((np.ones(item.shape[0]), (item, n_items + rater)), shape=(n_items + n_raters,) * 2)
    n, label = connected_components(edges, directed=False)
    _, item_set = np.unique(label[:n_items], return_inverse=True)
    return int(item_set.max()) + 1 if n_items else n, item_set.astype(np.int32)


#: With groups, the covariates and topics are checked against the rater sets up to this many sets (a dense
#: exchanges × sets regression); the groups themselves are checked for any number (a graph).
MAX_DENSE_SETS = 64


def _rater_check(
    cols: np.ndarray, labels: list[str], group: np.ndarray, n_groups: int, allowed: np.ndarray | None,
    sets: tuple[int, np.ndarray],
) -> None:
    """Raters in two or more sets that rate disjoint exchanges: a shift of one set's severity is undone by an
    exchange-level term that tells the sets apart (a combination of set indicators in the span of the groups,
    covariates and topics, beyond the constant): ``dim(span[G, W] ∩ span D) = c + rank W − rank P⊥W > 1``, with c the
    components of the group–set graph and P⊥ the residual on groups + sets."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m, item_set = sets
    if m < 2:
        return
    text = f"raters: the raters form {m} sets that rate disjoint exchanges, and"
    hint = "link the sets (have some exchanges rated by raters of two sets), or drop those terms"
    if n_groups > 1:
        edges = coo_matrix((np.ones(group.shape[0]), (group, n_groups + item_set)), shape=(n_groups + m,) * 2)
        if connected_components(edges, directed=False)[0] > 1:
            raise InputSchemaError(
                f"{text} each set rates whole groups: the rater severities cannot be told apart from the group effects",
                hint=hint,
            )
    if not cols.shape[1] or (n_groups > 1 and m > MAX_DENSE_SETS):
        return
    wc = _centred(cols, group, n_groups)
    norm = np.linalg.norm(wc, axis=0)
    if n_groups > 1:
        dc = _centred(np.eye(m)[item_set], group, n_groups)
        resid = wc - dc @ np.linalg.lstsq(dc, wc, rcond=None)[0]
    else:
        resid = _centred(cols, item_set, m)
    unit = resid / norm
    if unit.shape[0] > unit.shape[1]:
        unit = np.linalg.qr(unit, mode="r")
    _, sv, vt = np.linalg.svd(unit, full_matrices=True)
    n_zero = unit.shape[1] - int(np.sum(sv > RANK_RTOL))
    null = vt[unit.shape[1] - n_zero :].T
    if allowed is not None:  # the single-label direction is null here too; it says nothing about the raters
        a = allowed / np.linalg.norm(allowed)
        null = null - np.outer(a, a @ null)
    weight = np.linalg.norm(null, axis=1) if null.size else np.zeros(unit.shape[1])
    if weight.max(initial=0.0) <= SUPPORT_RTOL:
        return
    named = [labels[i] for i in np.flatnonzero(weight > SUPPORT_RTOL * weight.max())]
    raise InputSchemaError(
        f"{text} {_join(named)} {'tells' if len(named) == 1 else 'tell'} the sets apart: the rater severities cannot be "
        "told apart from their effects",
        hint=hint,
    )


def _join(names: list[str], most: int = 6) -> str:
    """``a``, ``a and b``, ``a, b and c``; past ``most`` names the rest as a count.

    Example:
        >>> _join(["a", "b", "c"]), _join(list("abcdefgh"), most=3)
        ('a, b and c', 'a, b, c and 5 more')
    """
    if len(names) > most:
        names = [*names[:most], f"{len(names) - most} more"]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
