"""Out-of-sample measures under integer row weights (``docs/design/predictive.md#measures``, ``docs/design/predictive.md#cluster-bootstrap``).

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
        """From drawn group indices ``idx`` (c, G): weight = times drawn.

        Args:
            idx: Drawn group indices (c, G).
            group: Group code per row (n,).
            n_groups: Number of groups G.
        """
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

    def padded(self) -> np.ndarray:
        """Integer group weights (c, G + 1) with a zero column at index G (the pad of :class:`SortedScore`)."""
        if "padded" not in self._cache:
            c, g = self.counts.shape
            out = np.zeros((c, g + 1), dtype=np.int64)
            out[:, :g] = self.counts
            self._cache["padded"] = out
        return self._cache["padded"]

    def per_group(self, key: object, per_group: np.ndarray) -> np.ndarray:
        """``counts @ per_group`` for a (G, k) table fixed across resamples (sums by group), cached by ``key``."""
        if key not in self._cache:
            self._cache[key] = self.counts @ per_group
        return self._cache[key]

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
    """Weighted Spearman ρ per resample (NaN when a side is constant).

    Args:
        w: Row weights of the resamples.
        plan_s: Rank plan of the scores.
        plan_y: Rank plan of the labels.
    """
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
    """Weighted ROC AUC of the score for ``positive`` (ties count ½); NaN without both classes.

    Args:
        w: Row weights of the resamples.
        positive: Which rows are positive (bool, n).
        plan_s: Rank plan of the scores.
    """
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
    """Weighted confusion counts (c, L, L): ``[b, true, predicted]``.

    Args:
        w: Row weights of the resamples.
        y: True label code per row (0..L−1).
        pred: Predicted label code per row (0..L−1).
        n_labels: Number of labels L.
    """
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
    """Weighted Pearson r (values centred on their full-sample means first, for accuracy).

    Args:
        w: Row weights of the resamples.
        y: Labels per row.
        s: Scores per row.
    """
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
    """``1 − Σw(y − ŷ)² / Σw(y − ȳ_w)²``; NaN when y is constant.

    Args:
        w: Row weights of the resamples.
        y: Labels per row.
        s: Predictions ŷ per row.
    """
    yc = y - y.mean()
    n = w.total()
    sums = w.sum(np.column_stack(((y - s) ** 2, yc, yc * yc)))
    ss_tot = sums[:, 2] - sums[:, 1] ** 2 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - sums[:, 0] / ss_tot
    out[~(ss_tot > 1e-12 * max(1.0, float(np.max(np.abs(yc))) ** 2) * n)] = np.nan
    return out


def rmse(w: Weights, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Weighted root mean squared error ``sqrt(Σw(y − s)² / Σw)`` per resample.

    Args:
        w: Row weights of the resamples.
        y: Labels per row.
        s: Predictions per row.
    """
    return np.sqrt(weighted_mean(w, (y - s) ** 2))


# --------------------------------------------------------------------------------------------------
# One fixed order per score: rank sums of every resample from cumulative weights
# --------------------------------------------------------------------------------------------------


def group_table(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group sums (G, k) of the columns of ``values`` (n,) or (n, k).

    Args:
        group: Group code per row (0..G−1).
        values: Values per row, (n,) or (n, k).
        n_groups: Number of groups G.
    """
    v = np.asarray(values, dtype=np.float64).reshape(group.size, -1)
    return np.column_stack([np.bincount(group, weights=v[:, j], minlength=n_groups) for j in range(v.shape[1])])


@dataclass(frozen=True)
class SortedScore:
    """A score sorted once, split by the target's labels, for rank sums under any group weights.

    A resample's weights are constant within a group, so in the fixed ascending order of the score the
    weight at position k is ``counts[b, group[k]]`` and the cumulative weight ``cs`` is one integer
    cumulative sum; nothing is re-sorted per resample. For a tie group t spanning sorted positions
    ``a…e``, ``2·r − 1 = cs[a−1] + cs[e]`` (average rank r), so per label l

        ``S_l = Σ_{i: label l} wᵢ (2rᵢ − 1)``,   ``Σ_t W_t³``  (tie correction of the rank variance)

    are exact integers (below 2⁵³ for N up to about 200,000 weighted rows). Fields: ``gpad`` (n + 1) group code per position after a leading pad (code G,
    weight 0); ``masks`` (n, L) label indicators in sorted order; ``label_rows`` (G, L) rows per group
    and label; ``singles`` (G,) rows per group not tied; ``tied`` positions in ties of ≥ 2 with their
    tie's padded bounds ``t_lo``/``t_hi``; ``tie_lo``/``tie_hi`` the bounds of each such tie.

    >>> sc = SortedScore.of(np.array([0.2, 0.1, 0.2, 0.5]), np.array([0, 0, 1, 1]), np.array([0, 1, 1, 0]), 2)
    >>> s, t3 = rank_sums(Weights.ones(np.array([0, 0, 1, 1])), sc)
    >>> s.tolist(), t3.tolist()   # 2r − 1 = 4, 1, 4, 7: label 0 → 4 + 7, label 1 → 1 + 4; ΣW³ = 1 + 8 + 1
    ([[11.0, 5.0]], [10.0])
    """

    gpad: np.ndarray
    masks: np.ndarray
    label_rows: np.ndarray
    singles: np.ndarray
    tied: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray
    tie_lo: np.ndarray
    tie_hi: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray, group: np.ndarray, labels: np.ndarray, n_labels: int) -> SortedScore:
        """``values`` (n,) finite scores, ``group`` (n,) codes 0…G−1, ``labels`` (n,) codes 0…L−1.

        Args:
            values: Finite scores per row (n,).
            group: Group code per row, 0…G−1.
            labels: Label code per row, 0…L−1.
            n_labels: Number of labels L.
        """
        v = np.asarray(values, dtype=np.float64)
        n = v.size
        n_groups = int(group.max()) + 1 if n else 0
        order = np.argsort(v, kind="stable")
        sv = v[order]
        new = np.ones(n, dtype=bool)
        new[1:] = sv[1:] != sv[:-1]
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], n)  # exclusive
        size = ends - starts
        multi = size > 1
        tie_of = np.repeat(np.arange(starts.size), size)
        tied = np.flatnonzero(multi[tie_of])
        # padded cumulative index: cs[:, a] is the weight before position a, cs[:, e] through position e − 1
        t_lo, t_hi = starts[tie_of[tied]], ends[tie_of[tied]]
        gs = group[order]
        lab = labels[order].astype(np.intp)
        masks = np.zeros((n, n_labels))
        masks[np.arange(n), lab] = 1.0
        single_rows = np.ones(n)
        single_rows[tied] = 0.0
        return cls(
            gpad=np.concatenate(([n_groups], gs)).astype(np.intp),
            masks=masks,
            label_rows=group_table(gs, masks, n_groups),
            singles=np.bincount(gs, weights=single_rows, minlength=n_groups),
            tied=tied,
            t_lo=t_lo,
            t_hi=t_hi,
            tie_lo=starts[multi],
            tie_hi=ends[multi],
        )


def rank_sums(w: Weights, sc: SortedScore) -> tuple[np.ndarray, np.ndarray]:
    """``S`` (c, L): ``Σ wᵢ (2rᵢ − 1)`` per label, and ``Σ_t W_t³`` (c,) over the score's tie groups.

    Per resample, one gather of its group weights into the fixed order, one integer cumulative sum and one product:
    ``S_l = Σ_{k∈l} w_k (2cs_k − w_k)`` for untied positions (``cs`` through k), with ``cs[a−1] + cs[e]``
    in place of ``2cs_k − w_k`` inside a tie; every term is an integer below 2⁵³, so the sums are exact.
    Cached per block and order.
    """
    key = ("rank_sums", id(sc))
    if key in w._cache:
        return w._cache[key]  # type: ignore[return-value]
    pad = w.padded()
    c = pad.shape[0]
    s = np.empty((c, sc.masks.shape[1]))
    t3 = np.zeros(c)
    for b in range(c):  # one resample at a time: 1-D arrays of n stay in cache (several times faster than 2-D blocks)
        ws = np.take(pad[b], sc.gpad)  # (n + 1,), position 0 the zero pad
        cs = np.cumsum(ws)
        body_w, body_cs = ws[1:], cs[1:]
        s[b] = np.multiply(body_w, body_cs, dtype=np.float64) @ sc.masks
        if sc.tied.size:
            # inside a tie, 2r − 1 = cs[a−1] + cs[e] instead of 2cs_k − w_k
            wt = body_w[sc.tied]
            fixed = cs[sc.t_lo] + cs[sc.t_hi] - 2 * body_cs[sc.tied] + wt
            s[b] += 0.5 * (np.multiply(wt, fixed, dtype=np.float64) @ sc.masks[sc.tied])
            tw = cs[sc.tie_hi] - cs[sc.tie_lo]
            t3[b] = float(np.sum(tw * tw * tw))
    s *= 2.0
    # − Σ_{k∈l} w_k² by groups (counts² · rows of label l per group); untied Σ w³ likewise
    counts = w.counts
    sq = counts * counts
    s -= sq @ sc.label_rows
    t3 += (sq * counts) @ sc.singles
    w._cache[key] = (s, t3)
    return s, t3


def spearman_sorted(w: Weights, sc: SortedScore) -> np.ndarray:
    """Weighted Spearman ρ of the score and a target with levels ``0…L−1`` (the labels of ``sc``).

    With twice-centred ranks ``R = 2r − (N + 1)``: ``ΣwR_sR_y = Σ_l Q_l (S_l − N·W_l)``, where the target's
    level l has ``Q_l = 2·W_below + W_l − N``; ``ΣwR² = (N³ − ΣW_t³)/3`` on each side. Equal, term by
    term, to :func:`spearman` (the same integers), without ranking any resample.
    """
    s, t3 = rank_sums(w, sc)
    wl = w.per_group(("label_rows", id(sc)), sc.label_rows)  # (c, L)
    n = wl.sum(axis=1)
    below = np.cumsum(wl, axis=1) - wl
    q = 2.0 * below + wl - n[:, None]
    num = np.einsum("cl,cl->c", q, s - n[:, None] * wl)
    n3 = n * n * n
    vs = (n3 - t3) / 3.0
    vy = (n3 - np.einsum("cl,cl->c", wl * wl, wl)) / 3.0
    den = np.sqrt(vs * vy)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    out[~(den > 0)] = np.nan
    return np.clip(out, -1.0, 1.0)


def auc_sorted(w: Weights, sc: SortedScore, positive: np.ndarray) -> np.ndarray:
    """Weighted ROC AUC of the score for the labels ``positive`` (bool, per label of ``sc``; ties ½).

    The rank-sum form of :func:`auc`: ``(Σ_pos w·r − W₊(W₊+1)/2) / (W₊W₋)`` with ``Σ_pos w·r = (S₊ + W₊)/2``.

    Args:
        w: Row weights of the resamples.
        sc: The sorted scores.
        positive: Which labels are positive (bool, per label of ``sc``).
    """
    s, _ = rank_sums(w, sc)
    wl = w.per_group(("label_rows", id(sc)), sc.label_rows)
    n = wl.sum(axis=1)
    w_pos = wl[:, positive].sum(axis=1)
    w_neg = n - w_pos
    rank_sum = (s[:, positive].sum(axis=1) + w_pos) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (rank_sum - w_pos * (w_pos + 1.0) / 2.0) / (w_pos * w_neg)
    out[~((w_pos > 0) & (w_neg > 0))] = np.nan
    return out
