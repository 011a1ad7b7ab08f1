"""Out-of-sample measures under integer row weights (``predictive.md`` §1.6–1.7).

A cluster-bootstrap resample is a weight per group (how often it was drawn); every row of a group gets
its group's weight. Average ranks ``W_below + (W_tied + 1)/2``, confusion counts and means under these
weights equal the measures on the expanded resample, so one weighted pass serves every resample and the
full sample is the case "all weights 1".

Measures (``y`` the target, ``s`` the score, ``ŷ`` the label, ``p`` the level probabilities):

- ``rho``: Pearson correlation of average ranks of ``s`` and ``y`` (Spearman);
- ``auc``: ``(Σ_pos w·r − W₊(W₊+1)/2) / (W₊W₋)`` with ``r`` the average rank of the score;
- ``macro_f1``: mean over the labels present of ``2TP / (2TP + FP + FN)``; ``accuracy``;
- lenient versions on ``1[code > 0]``; ``brier``, ``log_loss``; ``pearson_r``, ``r2``, ``rmse``.

Example:
    >>> y = np.array([0, 0, 1, 1]); s = np.array([0.1, 0.4, 0.35, 0.8])
    >>> w = Weights.ones(np.arange(4))
    >>> float(auc(w, y == 1, _plan(s))[0])
    0.75
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tutormetrics.stats.bootstrap import _rank_plan, _RankPlan, _weighted_centred_ranks

#: Probabilities below this count as this in ``log_loss``.
LOG_LOSS_FLOOR = 1e-15


@dataclass
class Weights:
    """Row weights of ``c`` resamples given per group: ``counts`` (c, G), ``group`` (n,) codes."""

    counts: np.ndarray
    group: np.ndarray
    _cache: dict[object, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def ones(cls, group: np.ndarray) -> Weights:
        g = int(group.max()) + 1 if group.size else 0
        return cls(np.ones((1, g)), group)

    @classmethod
    def draws(cls, idx: np.ndarray, group: np.ndarray, n_groups: int) -> Weights:
        """From drawn group indices ``idx`` (c, G): weight = times drawn."""
        c = idx.shape[0]
        flat = (idx + (np.arange(c) * n_groups)[:, None]).ravel()
        counts = np.bincount(flat, minlength=c * n_groups).reshape(c, n_groups).astype(np.float64)
        return cls(counts, group)

    def total(self) -> np.ndarray:
        """``N = Σ w`` per resample."""
        return self.counts @ np.bincount(self.group, minlength=self.counts.shape[1]).astype(np.float64)

    def sum(self, values: np.ndarray) -> np.ndarray:
        """``Σᵢ wᵢ vᵢ`` per resample for each column of ``values`` (n,) or (n, k): (c,) or (c, k)."""
        v = np.asarray(values, dtype=np.float64)
        flat = v.reshape(v.shape[0], -1)
        g = self.counts.shape[1]
        per_group = np.column_stack([np.bincount(self.group, weights=flat[:, j], minlength=g) for j in range(flat.shape[1])])
        out = self.counts @ per_group
        return out[:, 0] if v.ndim == 1 else out

    def rows(self) -> np.ndarray:
        """Integer row weights (c, n), computed once per resample block."""
        if "rows" not in self._cache:
            self._cache["rows"] = self.counts[:, self.group].astype(np.int64)
        return self._cache["rows"]

    def ranks(self, plan: _RankPlan) -> np.ndarray:
        """Twice the centred average ranks of ``plan``'s column under these weights, (c, n); cached per plan."""
        key = id(plan)
        if key not in self._cache:
            self._cache[key] = _weighted_centred_ranks(self.rows(), plan)[:, 0, :]
        return self._cache[key]


def _plan(values: np.ndarray) -> _RankPlan:
    return _rank_plan(np.asarray(values, dtype=np.float64).reshape(-1, 1))


def _ranks(w: Weights, plan: _RankPlan, rows: np.ndarray | None = None) -> np.ndarray:
    """Twice the centred average ranks ``2r − (N + 1)`` under the weights, (c, n)."""
    return w.ranks(plan)


def spearman(w: Weights, plan_s: _RankPlan, plan_y: _RankPlan) -> np.ndarray:
    """Weighted Spearman ρ per resample (NaN when a side is constant)."""
    rows = w.rows()
    rs, ry = _ranks(w, plan_s, rows), _ranks(w, plan_y, rows)
    wf = rows.astype(np.float64)
    num = np.einsum("cn,cn->c", wf * rs, ry)
    den = np.sqrt(np.einsum("cn,cn->c", wf * rs, rs) * np.einsum("cn,cn->c", wf * ry, ry))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    out[~(den > 0)] = np.nan
    return np.clip(out, -1.0, 1.0)


def auc(w: Weights, positive: np.ndarray, plan_s: _RankPlan) -> np.ndarray:
    """Weighted ROC AUC of the score for ``positive`` (ties count ½); NaN without both classes."""
    rows = w.rows()
    n_tot = rows.sum(axis=1).astype(np.float64)
    r = (_ranks(w, plan_s, rows) + n_tot[:, None] + 1.0) / 2.0  # average ranks
    pos = positive.astype(np.float64)
    w_pos = w.sum(pos)
    w_neg = n_tot - w_pos
    rank_sum = np.einsum("cn,cn->c", rows * pos[None, :], r)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (rank_sum - w_pos * (w_pos + 1.0) / 2.0) / (w_pos * w_neg)
    out[~((w_pos > 0) & (w_neg > 0))] = np.nan
    return out


def confusion(w: Weights, y: np.ndarray, pred: np.ndarray, n_labels: int) -> np.ndarray:
    """Weighted confusion counts (c, L, L): ``[b, true, predicted]``."""
    cell = y.astype(np.intp) * n_labels + pred.astype(np.intp)
    onehot = np.zeros((y.size, n_labels * n_labels))
    onehot[np.arange(y.size), cell] = 1.0
    return w.sum(onehot).reshape(-1, n_labels, n_labels)


def macro_f1_from(table: np.ndarray) -> np.ndarray:
    """Macro F1 over the labels present in truth or prediction, per resample of (c, L, L) counts."""
    tp = np.einsum("cii->ci", table)
    row = table.sum(axis=2)
    col = table.sum(axis=1)
    den = row + col  # 2TP + FP + FN
    present = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(present, 2.0 * tp / np.where(present, den, 1.0), 0.0)
        return f1.sum(axis=1) / present.sum(axis=1)


def accuracy_from(table: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("cii->c", table) / table.sum(axis=(1, 2))


def weighted_mean(w: Weights, values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return w.sum(values) / w.total()


def pearson(w: Weights, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Weighted Pearson r (values centred on their full-sample means first, for accuracy)."""
    yc, sc = y - y.mean(), s - s.mean()
    n = w.total()
    sums = w.sum(np.column_stack((yc, sc, yc * yc, sc * sc, yc * sc)))
    my, ms = sums[:, 0] / n, sums[:, 1] / n
    vy = sums[:, 2] - n * my * my
    vs = sums[:, 3] - n * ms * ms
    cov = sums[:, 4] - n * my * ms
    with np.errstate(invalid="ignore", divide="ignore"):
        out = cov / np.sqrt(vy * vs)
    tiny = 1e-12 * max(1.0, float(np.max(np.abs(yc))) ** 2 + float(np.max(np.abs(sc))) ** 2)
    out[~((vy > tiny * n) & (vs > tiny * n))] = np.nan
    return np.clip(out, -1.0, 1.0)


def r2(w: Weights, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``1 − Σw(y − ŷ)² / Σw(y − ȳ_w)²``; NaN when y is constant."""
    yc = y - y.mean()
    n = w.total()
    sums = w.sum(np.column_stack(((y - s) ** 2, yc, yc * yc)))
    ss_tot = sums[:, 2] - sums[:, 1] ** 2 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - sums[:, 0] / ss_tot
    out[~(ss_tot > 1e-12 * max(1.0, float(np.max(np.abs(yc))) ** 2) * n)] = np.nan
    return out


def rmse(w: Weights, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.sqrt(weighted_mean(w, (y - s) ** 2))
