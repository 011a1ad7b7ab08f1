"""A long conversation under ``--context full``: memory bounded by the chunk, numbers unchanged
(``docs/design/dialogue.md#context-memory``).

The reference is the plain exchange path on the flattened table, in one chunk: one row per tutor turn with its
context built by hand as the prompt (joined with "\\n", or as a list of turns for ``--context-encoding turns``).
"""

from __future__ import annotations

import math
import random
import tracemalloc

import numpy as np
import polars as pl
import pytest

from tutormetrics.dialogue import Conversation
from tutormetrics.dialogue.conversation_measures import self_jaccard
from tutormetrics.dialogue.score import conversation_chunks, dialogue_scorer, score_dialogues, turn_items
from tutormetrics.engine import Scorer
from tutormetrics.engine.prompt_parts import JoinedParts
from tutormetrics.metrics.dialogue_turn import PREV_STUDENT
from tutormetrics.metrics.functional.overlap import jaccard
from tutormetrics.metrics.ngrams import Containment, Jaccard
from tutormetrics.text import tokenize

#: Turns whose split at "\n" could change T(x) if anything crossed a turn boundary.
TRICKY = [
    "Don't use well-", "known e.g. 3.", "5 x_1!", "", "   ", "ΟΔΟΣ", "Σ ok", "e\u0301 caf", "\u0301e",
    "用for循环遍历list，", "i从0到9。", "'quoted'", "-dash", "it's", "’s fine", "rose is a rose", "a rose",
]
WORDS = ["the", "cat", "sat", "on", "mat", "why", "is", "two", "plus", "four", "good", "question", "half", "ka", "to"]


def conversation(cid: str, n_turns: int, seed: int, tricky: bool = True) -> Conversation:
    """Alternating student/tutor turns (an ``other`` turn now and then), short random sentences and tricky turns."""
    rng = random.Random(seed)
    roles, texts = [], []
    for k in range(n_turns):
        roles.append("note" if k % 11 == 7 else ("student" if k % 2 == 0 else "tutor"))
        if tricky and rng.random() < 0.3:
            texts.append(rng.choice(TRICKY))
        else:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(1, 9))) + rng.choice([".", "?", ""]))
    return Conversation.from_lists(cid, roles, texts)


CONVERSATIONS = [conversation("a", 61, 1), conversation("b", 7, 2), conversation("c", 40, 3)]
TEXT_FAMILIES = ["lexical", Jaccard(n=3), Containment(n=3, direction="resp_in_prompt")]


def flattened(convs: list[Conversation], context: str | int, as_parts: bool) -> tuple[list, list, list, dict]:
    """ids, prompts, responses and the previous student turn of every tutor turn, built by hand."""
    ids, prompts, responses, prev = [], [], [], []
    for conv in convs:
        last = None
        for i, t in enumerate(conv.turns):
            if t.kind == "tutor":
                if context == "full":
                    ctx = conv.turns[:i]
                elif context == "last":
                    ctx = [next((u for u in reversed(conv.turns[:i]) if u.kind != "tutor"), None)]
                    ctx = [u for u in ctx if u is not None]
                else:
                    ctx = conv.turns[max(0, i - int(context)) : i]
                parts = [u.text for u in ctx]
                ids.append(f"{conv.conversation_id}:{t.turn}")
                prompts.append(parts if as_parts else "\n".join(parts))
                responses.append(t.text)
                prev.append(last)
            elif t.kind == "student":
                last = t.text
    return ids, prompts, responses, {PREV_STUDENT: prev}


def reference(families, convs, context, as_parts, encoder=None) -> pl.DataFrame:
    """The old numbers: the flattened exchanges scored in one chunk on the plain exchange path."""
    scorer = dialogue_scorer(Scorer(families, encoder=encoder, chunk_size=10**6, progress=False, cache_mb=0))
    return scorer.score(*flattened(convs, context, as_parts))


def assert_same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got["exchange_id"].to_list() == want["exchange_id"].to_list()
    for col in want.columns:
        a, b = got[col], want[col]
        if b.dtype == pl.Float64:
            np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=0, atol=1e-6, equal_nan=True, err_msg=col)
        else:
            assert a.to_list() == b.to_list(), col


@pytest.mark.parametrize("context", ["full", 3, "last"])
@pytest.mark.parametrize("encoding", ["joined", "turns"])
@pytest.mark.parametrize("chunk_size", [1, 4, 2048])
def test_text_families_equal_the_flattened_exchanges(context, encoding, chunk_size):
    out = score_dialogues(CONVERSATIONS, metrics=TEXT_FAMILIES, context=context, context_encoding=encoding,
                          chunk_size=chunk_size)  # fmt: skip
    assert_same(out.turns, reference(TEXT_FAMILIES, CONVERSATIONS, context, encoding == "turns"))


@pytest.mark.parametrize("encoding", ["joined", "turns"])
def test_encoder_families_equal_the_flattened_exchanges(tiny_model_dir, encoding):
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder

    enc = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).load()
    families = ["embedding_similarity", "layerwise_synchrony", "overlap"]
    convs = [conversation("a", 23, 4, tricky=False), conversation("b", 6, 5, tricky=False)]
    out = score_dialogues(convs, metrics=families, encoder=enc, context="full", context_encoding=encoding, chunk_size=3)
    assert_same(out.turns, reference(families, convs, "full", encoding == "turns", encoder=enc))


def test_a_long_conversation_is_cut_into_chunks_of_chunk_size():
    """One conversation of 273 tutor turns, chunk size 16: no chunk holds more than 16 exchanges (it held 273)."""
    long = conversation("long", 601, 6, tricky=False)
    short = [conversation(f"s{i}", 9, i, tricky=False) for i in range(3)]
    assert long.n_tutor_turns == 273
    chunks = list(conversation_chunks([short[0], long, short[1], short[2]], 16))
    assert all(sum(p.n_tutor_turns for p in c) <= 16 for c in chunks)
    scorer = dialogue_scorer(Scorer("overlap", chunk_size=16, progress=False))
    items = list(turn_items([short[0], long, *short[1:]], scorer, "full"))
    sizes = [len(ex) for _, ex in items]
    assert max(sizes) == 16 and sum(sizes) == sum(c.n_tutor_turns for c in [long, *short])
    ids = [i for chunk, _ in items for i in chunk[0]]
    assert len(ids) == len(set(ids))
    # a chunk's prompt material is at most chunk_size contexts: linear in the conversation, never quadratic
    text = sum(len(t.text) + 1 for t in long.turns)
    for chunk, _ in items:
        assert sum(len("\n".join(p)) for p in chunk[1]) <= 16 * text


def test_whole_conversations_are_packed_as_before():
    convs = [Conversation.from_lists(str(i), ["tutor"] * 3, ["a"] * 3) for i in range(5)]
    assert [[p.conversation.conversation_id for p in c] for c in conversation_chunks(convs, 6)] == [["0", "1"], ["2", "3"], ["4"]]


def _peak_bytes(n_turns: int) -> int:
    conv = conversation("c", n_turns, 7, tricky=False)
    tracemalloc.start()
    try:
        score_dialogues([conv], metrics=["overlap", "length"], context="full", chunk_size=8)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_grows_linearly_with_the_conversation():
    """Python allocations (tracemalloc: deterministic, whatever the machine's load) at 150 and 450 turns with
    ``--chunk-size 8``: about x3 (linear; measured 3.1), not x9 (quadratic; 6.6 when a chunk held the whole
    conversation and every context its own tokens and n-gram sets)."""
    _peak_bytes(50)  # one-off allocations (compiled patterns, caches) out of the way
    small, large = _peak_bytes(150), _peak_bytes(450)
    assert large / small < 5, (small, large)


def test_joined_tokens_are_the_turns_tokens():
    """T(x) never crosses a "\\n": the tokens of a joined context are its turns' tokens, one after the other."""
    for k in range(200):
        parts = random.Random(k).choices(TRICKY + WORDS, k=random.Random(k + 1).randint(0, 6))
        assert tokenize("\n".join(parts)) == [t for p in parts for t in tokenize(p)], parts


def test_self_jaccard_equals_the_pairwise_definition():
    rng = random.Random(0)
    turns = [tokenize(" ".join(rng.choices(WORDS, k=rng.randint(0, 5)))) for _ in range(40)]
    terms = []
    for k in range(1, len(turns)):
        values = [v for v in (jaccard(turns[j], turns[k]) for j in range(k)) if not math.isnan(v)]
        if values:
            terms.append(max(values))
    assert self_jaccard(turns) == pytest.approx(float(np.mean(terms)), abs=1e-12)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_joined_parts_are_their_joined_text_on_every_path(n_jobs):
    """A :class:`JoinedParts` prompt scores as its joined string, in worker processes too."""
    ids, parts, responses, aux = flattened(CONVERSATIONS[:2], 4, as_parts=True)
    joined = [JoinedParts(p) for p in parts]
    got = dialogue_scorer(Scorer(TEXT_FAMILIES, chunk_size=5, n_jobs=n_jobs, progress=False)).score(ids, joined, responses, aux)
    want = reference(TEXT_FAMILIES, CONVERSATIONS[:2], 4, as_parts=False)
    assert_same(got, want)


def test_joined_parts_beside_the_encoder_in_a_worker_process(tiny_model_dir):
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder

    enc = TextEncoder(EncoderConfig(model_name_or_path=str(tiny_model_dir), device="cpu")).load()
    families = ["overlap", "length", "embedding_similarity"]
    ids, parts, responses, _ = flattened(CONVERSATIONS[1:2], "full", as_parts=True)
    scorer = Scorer(families, encoder=enc, cpu_overlap="process", progress=False, cache_mb=0)
    got = scorer.score(ids, [JoinedParts(p) for p in parts], responses)
    want = Scorer(families, encoder=enc, progress=False, cache_mb=0).score(ids, ["\n".join(p) for p in parts], responses)
    assert_same(got, want)


def test_a_pooled_context_shares_its_turns_token_states():
    """``--context-encoding turns``: a context's greedy token set is a view over its turns' matrices (no copy per
    context, which made a chunk hold O(rows × T) token states), concatenated only when read."""
    from tutormetrics.encoders.artifacts import EncodedTexts
    from tutormetrics.encoders.compose import pool_parts
    from tutormetrics.encoders.spill import StackedTokens, row_blocks

    rng = np.random.default_rng(0)
    states = [rng.normal(size=(k, 4)).astype(np.float32) for k in (3, 0, 2, 5)]
    enc = EncodedTexts.empty_like(1, 4, len(states))
    for i, s in enumerate(states):
        enc.token_states[i] = s
        enc.n_content_tokens[i], enc.n_windows[i] = len(s), int(len(s) > 0)
        if len(s):
            enc.maxima[i], enc.minima[i] = s.max(0), s.min(0)
    out = pool_parts(enc, [[0, 1, 2, 3], [2], [0, 3]], n_special=2)
    stacked = out.token_states[0]
    assert isinstance(stacked, StackedTokens) and all(np.shares_memory(a, b) for a, b in zip(stacked.parts, [states[0], states[2], states[3]], strict=True))
    assert np.array_equal(np.asarray(stacked), np.concatenate(states))
    assert np.array_equal(np.concatenate([b for _, b in row_blocks(stacked, 4)]), np.concatenate(states))
    assert out.token_states[1] is states[2]
