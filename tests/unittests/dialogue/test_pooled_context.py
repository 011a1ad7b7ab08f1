"""A context's encoder values pooled over its turns equal metrics.md §6.2 for the text split at turn
boundaries: an independent re-computation with the raw Hugging Face model (tiny random BERT)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from tutormetrics.encoders.compose import pool_parts
from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.engine import Scorer

TURNS = [
    "the cat sat on the mat",
    "",  # an empty turn adds nothing
    " ".join(["why did the cat sit on the mat"] * 5),  # 40 pieces: two windows of the tiny model (30 content)
    "good question",
    "what is two plus four",
]
RESPONSE = "the cat sat because it is half of the number"
STUDENT = "what is two plus four"


def reference(model_dir, parts: list[str], response: str) -> dict[str, float]:
    """§6.2 by hand: every part cut into windows of max_seq_length − 2 word pieces, CLS/SEP each."""
    tok = AutoTokenizer.from_pretrained(f"{model_dir}/0_Transformer" if (model_dir / "0_Transformer").exists() else str(model_dir))
    model = AutoModel.from_pretrained(tok.name_or_path).eval()
    width = 32 - 2

    def encode(texts: list[str]):
        sums, counts, content_sums, n_content, tokens = 0.0, 0, 0.0, 0, []
        for text in texts:
            ids = tok(text, add_special_tokens=False)["input_ids"]
            for s in range(0, len(ids), width):
                window = [tok.cls_token_id, *ids[s : s + width], tok.sep_token_id]
                with torch.no_grad():
                    hs = model(torch.tensor([window]), output_hidden_states=True).hidden_states
                h = torch.stack(hs)[:, 0].double().numpy()  # (L+1, T, d)
                sums = sums + h.sum(axis=1)
                counts += len(window)
                content_sums = content_sums + h[:, 1:-1].sum(axis=1)
                n_content += len(window) - 2
                tokens.append(h[-1, 1:-1])
        tok_states = np.concatenate(tokens)
        return sums / counts, content_sums / n_content, tok_states

    p_pool, p_content, p_tok = encode(parts)
    r_pool, r_content, r_tok = encode([response])
    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    def ext(t):
        return np.where(t.max(0) >= np.abs(t.min(0)), t.max(0), t.min(0))
    def unit(t):
        return t / np.linalg.norm(t, axis=1, keepdims=True)
    sim = unit(r_tok) @ unit(p_tok).T
    precision, recall = sim.max(1).mean(), sim.max(0).mean()
    return {
        "emb_mean_cos": cos(p_pool[-1], r_pool[-1]),
        "emb_extrema_cos": cos(ext(p_tok), ext(r_tok)),
        "emb_greedy_precision": precision,
        "emb_greedy_recall": recall,
        "emb_greedy": (precision + recall) / 2,
        "emb_greedy_f1": 2 * precision * recall / (precision + recall),
        **{f"sync_l{k:02d}": cos(p_pool[k], r_pool[k]) for k in range(3)},
        **{f"content_sync_l{k:02d}": cos(p_content[k], r_content[k]) for k in range(3)},
        "prompt_windows": 1 + 2 + 1 + 1,
    }


@pytest.fixture(scope="module")
def tiny_encoder(tiny_model_dir):
    return TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).load()


def test_pooled_context_equals_section_6_2_for_the_turn_split(tiny_model_dir, tiny_encoder):
    scorer = Scorer(["embedding_similarity", "layerwise_synchrony"], encoder=tiny_encoder, progress=False)
    out = scorer.score(["x"], [TURNS], [RESPONSE])
    ref = reference(tiny_model_dir, TURNS, RESPONSE)
    for col, want in ref.items():
        if not col.startswith("content_"):
            assert out[col][0] == pytest.approx(want, abs=2e-5), col
    from tutormetrics.metrics.synchrony import LayerwiseSynchrony

    content = Scorer([LayerwiseSynchrony(exclude_special=True)], encoder=tiny_encoder, progress=False)
    out = content.score(["x"], [TURNS], [RESPONSE])
    for k in range(3):
        assert out[f"sync_l{k:02d}"][0] == pytest.approx(ref[f"content_sync_l{k:02d}"], abs=2e-5)


def test_each_turn_is_encoded_once_per_chunk(tiny_encoder):
    before = tiny_encoder.texts_encoded
    contexts = [TURNS[:k] for k in range(1, len(TURNS) + 1)]  # growing prefixes, as in a conversation
    scorer = Scorer(["embedding_similarity"], encoder=tiny_encoder, progress=False)
    scorer.score([str(k) for k in range(len(contexts))], contexts, [RESPONSE] * len(contexts))
    assert tiny_encoder.texts_encoded - before == 4 + 1  # the four non-empty turns and the response
    assert scorer.stats.n_encoded_texts == 5


def test_one_turn_context_is_that_text_and_zero_turns_is_empty(tiny_encoder):
    scorer = Scorer(["embedding_similarity"], encoder=tiny_encoder, progress=False)
    out = scorer.score(["a", "b", "c"], [[TURNS[0]], TURNS[0], []], [RESPONSE] * 3)
    assert out["emb_mean_cos"][0] == out["emb_mean_cos"][1]
    assert np.isnan(out["emb_mean_cos"][2]) and out["prompt_empty"][2]


def test_pool_parts_matches_encoding_the_parts_as_windows(tiny_encoder):
    """A text longer than one window is the pool of its windows: pooling its two halves gives the same."""
    pieces = TURNS[2].split()
    half_a, half_b = " ".join(pieces[:20]), " ".join(pieces[20:])  # 20 + 20 pieces (one piece per word)
    whole = tiny_encoder.with_options(max_seq_length=22).encode([TURNS[2]])  # windows of exactly 20 pieces
    parts = tiny_encoder.with_options(max_seq_length=22).encode([half_a, half_b])
    assert whole.n_windows[0] == 2
    pooled = pool_parts(parts, [[0, 1]], n_special=2)
    np.testing.assert_allclose(pooled.pools, whole.pools, atol=1e-6)
    np.testing.assert_allclose(pooled.pools_content, whole.pools_content, atol=1e-6)
    np.testing.assert_allclose(pooled.extrema, whole.extrema, atol=1e-6)
    np.testing.assert_allclose(pooled.token_states[0], whole.token_states[0], atol=1e-6)
    assert pooled.n_windows[0] == 2 and pooled.n_content_tokens[0] == whole.n_content_tokens[0]


def test_prev_student_cos_equals_emb_mean_cos_of_the_pair(tiny_encoder):
    from tutormetrics.dialogue import Conversation, score_dialogues

    conv = Conversation.from_lists("c", ["student", "tutor"], [STUDENT, RESPONSE])
    turns = score_dialogues([conv], metrics="embedding_similarity", encoder=tiny_encoder).turns
    plain = Scorer(["embedding_similarity"], encoder=tiny_encoder, progress=False).score(["p"], [STUDENT], [RESPONSE])
    assert turns["emb_prev_student_cos"][0] == pytest.approx(plain["emb_mean_cos"][0], abs=1e-6)
    assert turns["emb_mean_cos"][0] == pytest.approx(plain["emb_mean_cos"][0], abs=1e-6)


def _conversations():
    from tutormetrics.dialogue import Conversation

    roles = ["student", "tutor", "student", "tutor", "student", "tutor"]
    texts = ["what is two plus four", "good question why", "it is six because we add", "yes can you try again",
             "two plus four is six", "good think step by step"]  # fmt: skip
    return [Conversation.from_lists("c", roles, texts), Conversation.from_lists("d", roles[:2], texts[:2])]


def test_joined_encoding_is_plain_scoring_of_the_context(tiny_encoder):
    """dialogue.md §7: scoring the built contexts without dialogues gives the same metric columns (encoder too)."""
    from tutormetrics.dialogue import score_dialogues

    convs = _conversations()
    metrics = ["embedding_similarity", "layerwise_synchrony", "overlap"]
    turns = score_dialogues(convs, metrics=metrics, encoder=tiny_encoder).turns
    prompts = ["\n".join(t.text for t in c.turns[:i]) for c in convs for i, t in enumerate(c.turns) if t.kind == "tutor"]
    responses = [t.text for c in convs for t in c.turns if t.kind == "tutor"]
    plain = Scorer(metrics, encoder=tiny_encoder, progress=False).score(turns["exchange_id"].to_list(), prompts, responses)
    assert turns.select(plain.columns).equals(plain)


def test_turns_encoding_pools_over_turns_and_differs_from_joined(tiny_encoder):
    from tutormetrics.dialogue import score_dialogues

    convs = _conversations()
    metrics = ["embedding_similarity", "layerwise_synchrony"]
    pooled = score_dialogues(convs, metrics=metrics, encoder=tiny_encoder, context_encoding="turns").turns
    joined = score_dialogues(convs, metrics=metrics, encoder=tiny_encoder).turns
    contexts = [[t.text for t in c.turns[:i]] for c in convs for i, t in enumerate(c.turns) if t.kind == "tutor"]
    responses = [t.text for c in convs for t in c.turns if t.kind == "tutor"]
    ref = Scorer(metrics, encoder=tiny_encoder, progress=False).score(pooled["exchange_id"].to_list(), contexts, responses)
    assert pooled.select(ref.columns).equals(ref)
    multi = pooled["ctx_turns"].to_numpy() > 1
    assert multi.any()
    # one-turn contexts are the same text either way (batch composition may move values by 1e-5, metrics.md §6.2)
    np.testing.assert_allclose(pooled["emb_mean_cos"].to_numpy()[~multi], joined["emb_mean_cos"].to_numpy()[~multi], atol=1e-5)
    assert np.all(np.abs(pooled["emb_mean_cos"].to_numpy()[multi] - joined["emb_mean_cos"].to_numpy()[multi]) > 1e-6)
    assert pooled["prompt_windows"].to_list() == [1, 3, 5, 1]  # one window per non-empty context turn
