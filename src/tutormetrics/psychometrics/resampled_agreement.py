"""Agreement measures of every resample of a criterion, from the shared draws of
:mod:`tutormetrics.stats.cluster_resample` (``docs/guide/judges.md#resamples``).

Per criterion the units are numbered as in :func:`~tutormetrics.psychometrics.agreement.split_criteria`
and each one lies in a cluster (:class:`UnitClusters`). A *pair* is two arrays of category codes per unit
(−1: not rated); its resampled Q×Q tables ``Tᵇ = Σᵢ wᵇᵢ·e(yᵢ)e(ŷᵢ)ᵀ`` come from the cluster sums of the
cells, and κ, α, AC1, macro-F1, accuracy and the mean difference are functions of them (stacked,
:func:`table_measures`).

Example:
    >>> clusters = unit_clusters(["e1", "e2", "e3", "e4"])
    >>> y, yhat = np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0])
    >>> draws = ClusterDraws(clusters.n_clusters, 5, seed=0, criterion=0)
    >>> resampled_tables(clusters, draws, [(y, yhat)], 2).shape
    (5, 1, 2, 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from tutormetrics.errors import InputSchemaError
from tutormetrics.psychometrics.pairwise_agreement import cohen_kappa, gwet_ac, krippendorff_alpha
from tutormetrics.stats.cluster_resample import ClusterDraws, cluster_codes, resampled_sums

__all__ = [
    "MEASURES",
    "UnitClusters",
    "macro_f1_stacked",
    "pair_clusters",
    "resampled_tables",
    "table_measures",
    "unit_clusters",
]

#: The measures of one pair that are functions of its Q×Q table (``--differences`` contrasts all five).
MEASURES = ("accuracy", "macro_f1", "cohen_kappa", "krippendorff_alpha", "gwet_ac1")


class UnitClusters(NamedTuple):
    """Per unit of a criterion, the code of its cluster (clusters sorted as text); ``clustered``: the
    clusters come from a cluster column (else every unit is its own cluster)."""

    codes: np.ndarray
    n_clusters: int
    clustered: bool


def unit_clusters(ids: Sequence[object], labels: Mapping[str, str] | None = None, *, source: str = "ratings") -> UnitClusters:
    """The clusters of the units ``ids``: their labels in ``labels`` (id as text → label), or the ids
    themselves as text. A unit without a label stops the run (exit 2) naming the count and the first id.

    Args:
        ids: The unit ids.
        labels: Id as text → cluster label; ``None``: each unit its own cluster.
        source: The table's name in the error.

    Example:
        >>> unit_clusters([1, 2, 10], {"1": "d1", "2": "d1", "10": "d2"})
        UnitClusters(codes=array([0, 0, 1]), n_clusters=2, clustered=True)
    """
    text = [str(i) for i in ids]
    if labels is None:
        codes, names = cluster_codes(text)
        return UnitClusters(codes, len(names), False)
    missing = [i for i in text if i not in labels]
    if missing:
        raise InputSchemaError(
            f"{source}: {len(missing):,} rated exchange(s) have no cluster label, e.g. {missing[0]!r}",
            hint="the cluster column must label every rated exchange (join the table that holds it)",
        )
    codes, names = cluster_codes([labels[i] for i in text])
    return UnitClusters(codes, len(names), True)


def pair_clusters(clusters: UnitClusters, mask: np.ndarray) -> int:
    """Distinct clusters among the units selected by ``mask``.

    >>> pair_clusters(UnitClusters(np.array([0, 0, 1]), 2, True), np.array([True, True, False]))
    1
    """
    return int(np.unique(clusters.codes[np.asarray(mask, dtype=bool)]).size)


def resampled_tables(
    clusters: UnitClusters, draws: ClusterDraws, pairs: Sequence[tuple[np.ndarray, np.ndarray]], q: int
) -> np.ndarray:
    """(B, R, Q, Q) tables of the R pairs (rows: the first array's codes) in every resample of ``draws``.

    Args:
        clusters: The units' clusters.
        draws: The shared cluster draws (B resamples).
        pairs: R pairs of code arrays per unit (−1: no rating).
        q: Number of categories Q.
    """
    g, qq = clusters.n_clusters, q * q
    blocks = []
    for a_codes, b_codes in pairs:
        a, b = np.asarray(a_codes), np.asarray(b_codes)
        both = (a >= 0) & (b >= 0)
        flat = clusters.codes[both] * qq + a[both] * q + b[both]
        blocks.append(np.bincount(flat, minlength=g * qq).reshape(g, qq).astype(np.float64))
    sums = resampled_sums(draws, np.hstack(blocks) if blocks else np.zeros((g, 0)))
    return sums.reshape(draws.n_resamples, len(pairs), q, q)


def macro_f1_stacked(tables: np.ndarray) -> np.ndarray:
    """Macro-F1 of stacked tables (..., Q, Q) over the labels present in y or ŷ; NaN for an empty table.

    >>> macro_f1_stacked(np.array([[[2, 0], [1, 1]], [[0, 0], [0, 0]]])).tolist()
    [0.7333333333333334, nan]
    """
    t = np.asarray(tables, dtype=np.float64)
    tp = np.diagonal(t, axis1=-2, axis2=-1)
    margin = t.sum(-1) + t.sum(-2)
    present = margin > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(present, 2 * tp / np.where(present, margin, 1.0), 0.0).sum(-1) / present.sum(-1)
    return np.where(present.any(-1), f1, np.nan)


def table_measures(tables: np.ndarray, values: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The five :data:`MEASURES` of stacked tables (..., Q, Q) and, with the category ``values``, the mean
    difference column − row (judge − reference): ``Σ T_kl (v_l − v_k) / Σ T``.

    >>> m = table_measures(np.array([[3.0, 1.0], [0.0, 2.0]]), np.array([0.0, 1.0]))
    >>> round(float(m["cohen_kappa"]), 4), round(float(m["mean_diff"]), 4)
    (0.6667, 0.1667)
    """
    t = np.asarray(tables, dtype=np.float64)
    total = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "accuracy": np.trace(t, axis1=-2, axis2=-1) / total,
            "macro_f1": macro_f1_stacked(t),
            "cohen_kappa": cohen_kappa(t),
            "krippendorff_alpha": krippendorff_alpha(t),
            "gwet_ac1": gwet_ac(t),
        }
        if values is not None:
            v = np.asarray(values, dtype=np.float64)
            out["mean_diff"] = (t * (v[None, :] - v[:, None])).sum(axis=(-2, -1)) / total
    return out
