"""Decision rules for macro-F1 (``docs/commands/predict.md#decision-rules``): the ordinal decoding.

A class target's levels are ordered, and every model gives one score per row that follows them (``p_top`` for two
levels, the expected score ``Σ p_k v_k`` for three, the ridge prediction for ``--model ridge``). ``--decision
ordinal`` labels a row by thresholds on that score, ``label = #{j : score > t_j}``, instead of the most probable
level. The L − 1 thresholds maximise the exact macro-F1 of the **inner** out-of-fold scores of the training rows
(inner grouped CV inside each training fold, :func:`tune_thresholds`), so they never see the test fold.
Class-balanced weights (``--class-weight balanced``) are the other rule; they change the fit, not the decoding.

Example:
    >>> import numpy as np
    >>> score = np.array([0.1, 0.2, 0.45, 0.5, 0.8, 0.9])
    >>> t = tune_thresholds(score, np.array([0, 0, 1, 1, 2, 2]), 3)
    >>> t.tolist(), decode(score, t).tolist()
    ([0.325, 0.65], [0, 0, 1, 1, 2, 2])
"""

from __future__ import annotations

import numpy as np

#: Candidate thresholds per search: the midpoints between distinct scores, thinned evenly beyond this many.
MAX_CANDIDATES = 400


def decode(score: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Level code of each score: the number of thresholds strictly below it (a score equal to ``t_j`` stays below).

    >>> decode(np.array([0.2, 0.5, 0.7, 0.9]), np.array([0.5, 0.8])).tolist()
    [0, 0, 1, 2]
    """
    return np.searchsorted(np.asarray(thresholds, dtype=np.float64), score, side="left").astype(np.intp)


def candidates(score: np.ndarray) -> np.ndarray:
    """``−inf``, the midpoints between consecutive distinct scores (at most :data:`MAX_CANDIDATES`, evenly
    thinned), ``+inf``: every distinct labelling of the sorted scores by one cut (up to the thinning).

    >>> candidates(np.array([0.0, 1.0, 1.0, 3.0])).tolist()
    [-inf, 0.5, 2.0, inf]
    """
    u = np.unique(score[np.isfinite(score)])
    mids = (u[1:] + u[:-1]) / 2.0
    if mids.size > MAX_CANDIDATES:
        mids = mids[np.unique(np.linspace(0, mids.size - 1, MAX_CANDIDATES).round().astype(np.intp))]
    return np.concatenate([[-np.inf], mids, [np.inf]])


def tune_thresholds(score: np.ndarray, codes: np.ndarray, n_levels: int) -> np.ndarray:
    """The ``n_levels − 1`` ascending thresholds on ``score`` with the largest exact macro-F1 of :func:`decode`.

    Macro-F1 = mean over the levels of ``2·TP_k / (n_k + pred_k)``; every level must occur in ``codes``. The counts
    of every cut come from cumulative class counts over the candidates (:func:`candidates`), so the search is exact
    over them: one pass for 2 levels, all pairs ``t_1 ≤ t_2`` for 3. A tie keeps the first pair (smallest ``t_1``,
    then smallest ``t_2``).

    Args:
        score: One score per row (the inner out-of-fold scores of the training rows).
        codes: The rows' level codes ``0 … n_levels − 1``.
        n_levels: 2 or 3.

    >>> tune_thresholds(np.array([0.0, 0.25, 0.75, 1.0]), np.array([0, 0, 1, 1]), 2).tolist()
    [0.5]
    """
    codes = np.asarray(codes, dtype=np.intp)
    if n_levels not in (2, 3):
        raise ValueError(f"ordinal decoding needs 2 or 3 levels, got {n_levels}")
    n_k = np.bincount(codes, minlength=n_levels).astype(np.float64)
    if np.any(n_k == 0):
        raise ValueError("every level must occur in the tuning rows")
    cand = candidates(score)
    # below[k, i] = rows of level k with score <= cand[i]
    below = np.stack([np.searchsorted(np.sort(score[codes == k]), cand, side="right") for k in range(n_levels)]).astype(np.float64)
    total = below.sum(axis=0)
    n = float(codes.size)
    if n_levels == 2:
        f0 = 2 * below[0] / (n_k[0] + total)
        f1 = 2 * (n_k[1] - below[1]) / (n_k[1] + n - total)
        return cand[[int(np.argmax((f0 + f1) / 2))]]
    i, j = np.triu_indices(cand.size)
    f0 = 2 * below[0, i] / (n_k[0] + total[i])
    f1 = 2 * (below[1, j] - below[1, i]) / (n_k[1] + total[j] - total[i])
    f2 = 2 * (n_k[2] - below[2, j]) / (n_k[2] + n - total[j])
    best = int(np.argmax((f0 + f1 + f2) / 3))
    return cand[[i[best], j[best]]]
