"""Pure-numpy embedding and synchrony functions against metrics.md §8 Ex3, Ex4, Ex5 and the NaN rules."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import tutormetrics.metrics.functional.embedding as emb_mod
import tutormetrics.metrics.functional.synchrony as sync_mod
from tutormetrics.metrics.functional.embedding import (
    EMBEDDING_COLUMNS,
    cosine,
    cosine_rows,
    embedding_similarity,
    embedding_similarity_batch,
    extrema_rule,
    extrema_vector,
    greedy_matching,
    greedy_matching_batch,
    masked_mean_pool,
    window_weighted_pool,
)
from tutormetrics.metrics.functional.synchrony import layerwise_synchrony, layerwise_synchrony_batch, synchrony_columns

# Ex3: 3-d toy tokens, no special tokens.
P3 = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
R3 = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]])

# Ex4: 2-d synchrony toy, L = 2. Prompt [CLS, x, SEP, PAD]; response [CLS, y, z, SEP].
HP4 = np.array(
    [[[1, 0], [0, 1], [1, 0], [9, 9]], [[1, 1], [1, 0], [0, 0], [9, 9]], [[0, 1], [0, 2], [0, 1], [9, 9]]],
    dtype=float,
)
HR4 = np.array(
    [[[1, 0], [1, 1], [0, 1], [1, 0]], [[1, 0], [2, 0], [0, 1], [1, 1]], [[1, 1], [0, 1], [0, 1], [0, 1]]],
    dtype=float,
)
MASK_P4 = np.array([1, 1, 1, 0])
MASK_R4 = np.array([1, 1, 1, 1])
CONTENT_P4 = np.array([0, 1, 0, 0])
CONTENT_R4 = np.array([0, 1, 1, 0])

EX4 = {
    "default": dict(
        sync_l00=0.992278, sync_l01=1.0, sync_l02=0.970143, sync_min=0.970143, sync_mean=0.985071,
        sync_max=1.0, sync_mid=1.0, sync_last=0.970143,
    ),
    "exclude_special": dict(
        sync_l00=0.894427, sync_l01=0.894427, sync_l02=1.0, sync_min=0.894427, sync_mean=0.947214,
        sync_max=1.0, sync_mid=0.894427, sync_last=1.0,
    ),
}  # fmt: skip


def test_ex3_all_columns() -> None:
    out = embedding_similarity(P3.mean(0), R3.mean(0), extrema_vector(P3), extrema_vector(R3), P3, R3)
    expected = {
        "emb_mean_cos": 0.707107,
        "emb_extrema_cos": 0.816497,
        "emb_greedy": 0.471405,
        "emb_greedy_precision": 0.235702,
        "emb_greedy_recall": 0.707107,
        "emb_greedy_f1": 0.353553,
    }
    assert list(out) == list(EMBEDDING_COLUMNS)
    for col, val in expected.items():
        assert out[col] == pytest.approx(val, abs=1e-6), col


def test_ex3_extrema_vectors() -> None:
    np.testing.assert_array_equal(extrema_vector(P3), [1, 1, 0])
    np.testing.assert_array_equal(extrema_vector(R3), [1, 1, 1])


def test_extrema_tie_goes_positive_and_no_min_zero_quirk() -> None:
    np.testing.assert_array_equal(extrema_vector(np.array([[1.0, 0.0], [-1.0, 0.0]])), [1.0, 0.0])
    # nlg-eval returns 0 when min == 0; Liu's rule keeps the max.
    np.testing.assert_array_equal(extrema_rule(np.array([2.0]), np.array([0.0])), [2.0])
    np.testing.assert_array_equal(extrema_rule(np.array([0.5]), np.array([-0.6])), [-0.6])


def test_ex4_synchrony_both_poolings() -> None:
    for mode, (mp, mr) in {"default": (MASK_P4, MASK_R4), "exclude_special": (CONTENT_P4, CONTENT_R4)}.items():
        out = layerwise_synchrony(masked_mean_pool(HP4, mp), masked_mean_pool(HR4, mr))
        assert list(out) == synchrony_columns(2)
        for col, val in EX4[mode].items():
            assert out[col] == pytest.approx(val, abs=1e-6), (mode, col)


def test_ex4_pad_state_is_ignored() -> None:
    hp = HP4.copy()
    hp[:, 3] = -1e6  # a different PAD state must not matter
    a = masked_mean_pool(HP4, MASK_P4)
    b = masked_mean_pool(hp, MASK_P4)
    np.testing.assert_array_equal(a, b)


def test_ex5_window_weighted_pool_and_extrema() -> None:
    windows = [
        np.array([[1, 0], [1, 1], [0, 1], [0, 0]], dtype=float),
        np.array([[2, 0], [0, 2], [1, 1], [1, 1]], dtype=float),
        np.array([[0, 0], [3, 0], [0, 0]], dtype=float),
    ]
    sums = np.stack([w.sum(0) for w in windows])
    counts = np.array([len(w) for w in windows])
    pooled = window_weighted_pool(sums, counts)
    np.testing.assert_allclose(pooled, [0.818182, 0.545455], atol=1e-6)
    unweighted = np.mean([w.mean(0) for w in windows], axis=0)
    assert not np.allclose(pooled, unweighted)  # [0.833333, 0.5] is the wrong answer
    content = np.concatenate([w[1:-1] for w in windows])
    np.testing.assert_array_equal(extrema_vector(content), [3, 2])


def test_window_weighted_pool_single_window_equals_masked_mean() -> None:
    rng = np.random.default_rng(0)
    h = rng.normal(size=(5, 4))
    np.testing.assert_allclose(window_weighted_pool(h.sum(0)[None], np.array([5])), h.mean(0), rtol=1e-12)


def test_self_similarity_is_one() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 16))
    out = embedding_similarity(x.mean(0), x.mean(0), extrema_vector(x), extrema_vector(x), x, x)
    for col in EMBEDDING_COLUMNS:
        assert out[col] == pytest.approx(1.0, abs=1e-12), col


def test_single_token_is_valid() -> None:
    x = np.array([[0.3, -0.2, 0.9]])
    p, r = greedy_matching(x, x)
    assert p == pytest.approx(1.0) and r == pytest.approx(1.0)


@pytest.mark.parametrize("side", ["prompt", "response"])
def test_empty_side_gives_nan_everywhere(side: str) -> None:
    empty = np.zeros((0, 3))
    nan_vec = np.full(3, np.nan)
    p_tok, r_tok = (empty, R3) if side == "prompt" else (P3, empty)
    p_pool = nan_vec if side == "prompt" else P3.mean(0)
    r_pool = nan_vec if side == "response" else R3.mean(0)
    out = embedding_similarity(p_pool, r_pool, extrema_vector(p_tok), extrema_vector(r_tok), p_tok, r_tok)
    assert all(math.isnan(v) for v in out.values()), out
    sync = layerwise_synchrony(np.full((3, 3), np.nan), np.ones((3, 3)))
    assert all(math.isnan(v) for v in sync.values()), sync


def test_zero_norm_is_nan_not_zero() -> None:
    assert math.isnan(cosine(np.zeros(3), np.ones(3)))
    assert math.isnan(cosine(np.array([]), np.array([])))
    # Ex3 under the nlg-eval extrema rule: v_p = [0,0,0] → NaN, where sklearn would say 0.
    assert math.isnan(cosine(np.zeros(3), np.array([1.0, 0.0, 0.0])))
    p, r = greedy_matching(np.zeros((1, 3)), P3)
    assert math.isnan(p) and math.isnan(r)
    # One NaN layer leaves the others and the nan-aware summaries defined.
    pp = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    rr = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    out = layerwise_synchrony(pp, rr)
    assert math.isnan(out["sync_l01"]) and out["sync_min"] == pytest.approx(math.sqrt(0.5))
    assert out["sync_mid"] != out["sync_mid"]  # mid is block 1 for L = 2: NaN


def test_f1_nan_when_p_plus_r_zero() -> None:
    out = embedding_similarity_batch(
        np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 2)),
        [np.array([[1.0, 0.0], [-1.0, 0.0]])], [np.array([[0.0, 1.0]])],
    )  # fmt: skip
    assert out["emb_greedy"][0] == 0.0 and not np.signbit(out["emb_greedy"][0])
    assert math.isnan(out["emb_greedy_f1"][0])


def test_cosine_rows_clamps_negative_zero() -> None:
    out = cosine_rows(np.array([[1.0, 0.0]]), np.array([[-0.0, 1.0]]))
    assert out[0] == 0.0 and not np.signbit(out[0])


def test_greedy_batch_matches_pairwise() -> None:
    rng = np.random.default_rng(2)
    texts = [rng.normal(size=(n, 8)).astype(np.float32) for n in (3, 1, 5, 2, 4)]
    texts.append(np.zeros((0, 8), dtype=np.float32))
    pairs = [(0, 1), (0, 2), (3, 4), (0, 5), (5, 2), (3, 0), (0, 0)]
    prompts = [texts[a] for a, _ in pairs]
    resps = [texts[b] for _, b in pairs]
    prec, rec = greedy_matching_batch(resps, prompts, [a for a, _ in pairs])
    for k, (a, b) in enumerate(pairs):
        ep, er = greedy_matching(texts[b], texts[a])
        np.testing.assert_allclose([prec[k], rec[k]], [ep, er], atol=1e-6, equal_nan=True)
    # Default keys (object identity) group the same way.
    prec2, rec2 = greedy_matching_batch(resps, prompts)
    np.testing.assert_array_equal(prec, prec2)
    np.testing.assert_array_equal(rec, rec2)


def test_synchrony_batch_mid_and_last_conventions() -> None:
    rng = np.random.default_rng(3)
    for L, mid in [(6, 3), (12, 6), (2, 1), (1, 1), (5, 3)]:
        p = rng.normal(size=(2, L + 1, 4))
        r = rng.normal(size=(2, L + 1, 4))
        out = layerwise_synchrony_batch(p, r)
        assert list(out) == synchrony_columns(L)
        np.testing.assert_array_equal(out["sync_mid"], out[f"sync_l{mid:02d}"])
        np.testing.assert_array_equal(out["sync_last"], out[f"sync_l{L:02d}"])
        blocks = np.stack([out[f"sync_l{i:02d}"] for i in range(1, L + 1)], axis=1)
        np.testing.assert_allclose(out["sync_mean"], blocks.mean(1))
        np.testing.assert_allclose(out["sync_min"], blocks.min(1))


def test_synchrony_columns_two_digit() -> None:
    cols = synchrony_columns(12)
    assert cols[0] == "sync_l00" and cols[12] == "sync_l12" and cols[-1] == "sync_last"


@pytest.mark.parametrize("module", [emb_mod, sync_mod])
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0  # a module without examples would pass vacuously
