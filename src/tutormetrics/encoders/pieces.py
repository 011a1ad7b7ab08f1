"""Word pieces of very long texts in bounded memory: the text is tokenised in segments cut at word boundaries.

A fast tokenizer's output for one multi-megabyte text (Python lists of ids and offset tuples, plus the
Rust encoding) costs several hundred bytes per word piece. For tokenizers whose pipeline is local to a
word — a per-character normaliser (BERT's, lowercasing, Unicode forms, accent stripping) and a
whitespace/punctuation pre-tokeniser — cutting the text at a space or newline that precedes an ASCII
letter or digit gives exactly the pieces of the whole text, so :func:`pieces_in_segments` tokenises
segments of about :data:`SEGMENT_CHARS` characters one at a time, keeping only int arrays. Other
tokenizers (byte-level BPE, SentencePiece) attach spaces to the next piece, so their texts are tokenised
whole (:func:`splits_at_spaces` says which).

Example:
    >>> segment_starts("aa bb cc dd", 6)
    [0, 6]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

#: Texts longer than this many characters are tokenised in segments of about this size.
SEGMENT_CHARS = 1 << 16

_LOCAL_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Strip"}
_WORD_PRE_TOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}
#: A cut: after a space or newline, before an ASCII letter or digit (no combining mark, no space to merge).
_CUT = re.compile(r"(?<=[ \n])[A-Za-z0-9]")


def splits_at_spaces(tokenizer: Any) -> bool:
    """Whether tokenising the parts of a text cut by :func:`segment_starts` gives the whole text's pieces.

    True for a fast tokenizer with a word-local normaliser (or none), a BERT/whitespace pre-tokeniser and
    no added token containing whitespace.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    try:
        spec = json.loads(backend.to_str())
    except (ValueError, TypeError, AttributeError):
        return False

    def kinds(node: Any, key: str) -> list[str]:
        if node is None:
            return []
        if node.get("type") == "Sequence":
            return [k for child in node.get(key, []) for k in kinds(child, key)]
        return [str(node.get("type"))]

    normalizers = kinds(spec.get("normalizer"), "normalizers")
    pre = kinds(spec.get("pre_tokenizer"), "pretokenizers")
    added = [t.get("content", "") for t in spec.get("added_tokens", [])]
    return (
        all(k in _LOCAL_NORMALIZERS for k in normalizers)
        and bool(pre)
        and all(k in _WORD_PRE_TOKENIZERS for k in pre)
        and not any(re.search(r"\s", a) for a in added)
    )


def segment_starts(text: str, max_chars: int = SEGMENT_CHARS) -> list[int]:
    """Start offsets of segments of at most about ``max_chars`` characters, each cut before an ASCII
    letter or digit that follows a space or newline (a segment runs longer when no such place exists).

    Example:
        >>> segment_starts("one two three four", 8)
        [0, 8, 14]
    """
    starts = [0]
    while len(text) - starts[-1] > max_chars:
        lo = starts[-1] + max(1, max_chars // 2)
        hi = starts[-1] + max_chars
        cut = None
        for m in _CUT.finditer(text, lo, hi + 1):
            cut = m.start()
        if cut is None:  # no place in the window: the next one after it
            m = _CUT.search(text, hi + 1)
            if m is None:
                break
            cut = m.start()
        starts.append(cut)
    return starts


def pieces_in_segments(
    word_pieces: Callable[..., Any], text: str, with_offsets: bool, max_chars: int = SEGMENT_CHARS
) -> tuple[np.ndarray, np.ndarray | None]:
    """Word-piece ids (int64) and, with ``with_offsets``, ``(start, end)`` character spans (int32) of ``text``,
    tokenised segment by segment with ``word_pieces`` (the encoder's one tokenizer call on a list of texts).

    Args:
        word_pieces: the tokenizer call (a list of texts → ``{"input_ids": ..., "offset_mapping": ...}``).
        text: the text to tokenise.
        with_offsets: also return the character spans.
        max_chars: segment length in characters.

    Example (a whitespace "tokenizer" standing in for the real one):
        >>> def toy(texts, return_offsets_mapping=False):
        ...     words = [(m.start(), m.end()) for m in re.finditer(r"\\S+", texts[0])]
        ...     out = {"input_ids": [[len(texts[0][a:b]) for a, b in words]]}
        ...     return out | ({"offset_mapping": [words]} if return_offsets_mapping else {})
        >>> ids, spans = pieces_in_segments(toy, "ab cde f", True, max_chars=4)
        >>> ids.tolist(), spans.tolist()
        ([2, 3, 1], [[0, 2], [3, 6], [7, 8]])
    """
    ids: list[np.ndarray] = []
    spans: list[np.ndarray] = []
    starts = segment_starts(text, max_chars)
    for a, b in zip(starts, [*starts[1:], len(text)], strict=True):
        extra = {"return_offsets_mapping": True} if with_offsets else {}
        out = word_pieces([text[a:b]], **extra)
        ids.append(np.asarray(out["input_ids"][0], dtype=np.int64))
        if with_offsets:
            spans.append(np.asarray(out["offset_mapping"][0], dtype=np.int32).reshape(-1, 2) + np.int32(a))
        del out
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    return all_ids, (np.concatenate(spans) if spans else np.zeros((0, 2), np.int32)) if with_offsets else None
