"""Grouped K-fold assignment fixed by the design note (``docs/design/predictive.md#folds``).

Groups are the distinct labels sorted as text; they are taken in order of size descending (equal sizes
in descending label order) and each goes to the fold with the fewest rows so far (ties: lowest fold).
This is scikit-learn 1.9's ``GroupKFold(n_splits=K)`` without shuffling, computed here so that the
result does not depend on the release or on an unstable sort.

Example (the worked example of docs/design/predictive.md#folds):
    >>> labels = ["d1"] * 4 + ["d2"] * 4 + ["d3"] * 3 + ["d4"] * 3 + ["d5"] * 3 + ["d6"] * 3
    >>> group_folds(labels, 3).tolist()
    [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2, 2, 2, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def group_codes(labels: Sequence[object] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct labels as text, code of each row)``; codes index the sorted labels.

    >>> group_codes(["b", "a", "b"])[1].tolist()
    [1, 0, 1]
    """
    text = np.asarray([str(v) for v in labels], dtype=str)
    uniq, codes = np.unique(text, return_inverse=True)
    return uniq, codes.astype(np.intp).ravel()


def group_folds(labels: Sequence[object] | np.ndarray, n_folds: int) -> np.ndarray:
    """Fold index (0…K−1) of every row: largest groups first into the lightest fold.

    ``order = argsort(sizes, kind="stable")[::-1]`` over the labels sorted as text gives sizes
    descending and, among equal sizes, labels descending. Needs at least ``n_folds`` groups.
    """
    if n_folds < 2:
        raise ValueError("n_folds must be at least 2")
    _, codes = group_codes(labels)
    sizes = np.bincount(codes)
    if sizes.size < n_folds:
        raise ValueError(f"{sizes.size} groups cannot fill {n_folds} folds")
    order = np.argsort(sizes, kind="stable")[::-1]
    load = np.zeros(n_folds, dtype=np.int64)
    fold_of_group = np.empty(sizes.size, dtype=np.intp)
    for g in order:
        f = int(np.argmin(load))  # fewest rows so far; the lowest index on a tie
        fold_of_group[g] = f
        load[f] += sizes[g]
    return fold_of_group[codes]
