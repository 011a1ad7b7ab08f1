"""Encoder results per unique text, kept for a whole run: each text is encoded once whatever the chunk size.

A :class:`TextCache` maps ``key(text) = BLAKE2b-128(fingerprint ‖ 0x00 ‖ UTF-8(text))`` (the text already
NFC-normalised by the Scorer, the fingerprint that of the encoder config) to that text's one-row
:class:`~tutormetrics.encoders.artifacts.EncodedTexts`, least-recently-used first out once the entries pass
``budget_bytes``. A chunk looks up all its texts (hits move to the most-recent end), encodes the misses in one
pass and inserts them in text order: the cache's state after a chunk depends only on the texts of the chunks so
far, so replaying a chunk's keys (:meth:`TextCache.replay`) rebuilds the state exactly. The file scorer stores
each chunk's keys and new entries next to its checkpoint (:func:`save_delta`), so a resumed run encodes exactly
what an uninterrupted one does, in the same batches, and writes the same bytes.

Example:
    >>> c = TextCache(budget_bytes=10**6, fingerprint="f")
    >>> c.key("a") != c.key("b") and len(c.key("a")) == 16
    True
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tutormetrics.encoders.artifacts import EncodedTexts
from tutormetrics.encoders.spill import is_spilled
from tutormetrics.io.atomic import write_bytes_atomic

#: Default budget: an eighth of the machine's memory, at most 4 GiB, at least 64 MiB.
MAX_DEFAULT_MB = 4096
MIN_DEFAULT_MB = 64


def default_cache_mb() -> int:
    """``--cache-mb`` default: ``clip(physical memory / 8, 64, 4096)`` MiB.

    Example:
        >>> MIN_DEFAULT_MB <= default_cache_mb() <= MAX_DEFAULT_MB
        True
    """
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1024
    return int(min(MAX_DEFAULT_MB, max(MIN_DEFAULT_MB, total // 8 // 2**20)))


def entry_nbytes(enc: EncodedTexts) -> int:
    """Bytes held by an :class:`EncodedTexts` (every array, the per-text lists included)."""
    total = enc.nbytes + enc.truncated.nbytes
    for name in ("token_norms", "token_offsets"):
        value = getattr(enc, name)
        if value is not None:
            total += sum(a.nbytes for a in value)
    for name in ("maxima", "minima"):
        value = getattr(enc, name)
        if value is not None:
            total += value.nbytes
    return int(total) + 256  # per-entry bookkeeping


@dataclass
class CacheCounts:
    """What the cache did over a run (run-level: the manifest's ``text_cache``, never per-chunk stats)."""

    texts_encoded: int = 0  # unique texts run through the encoder by this process
    texts_from_cache: int = 0  # lookups served from memory
    texts_replayed: int = 0  # entries restored from a checkpoint on resume (not encoded again)
    evictions: int = 0
    peak_bytes: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class TextCache:
    """A least-recently-used map from text keys to one-row :class:`EncodedTexts`, bounded in bytes."""

    def __init__(self, budget_bytes: int, fingerprint: str) -> None:
        self.budget_bytes = int(budget_bytes)
        self.fingerprint = fingerprint
        self._salt = fingerprint.encode() + b"\x00"
        self._entries: OrderedDict[bytes, tuple[EncodedTexts, int]] = OrderedDict()
        self.nbytes = 0
        self.counts = CacheCounts()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: bytes) -> bool:
        return key in self._entries

    def key(self, text: str) -> bytes:
        """16-byte BLAKE2b of the encoder fingerprint and the text."""
        return hashlib.blake2b(self._salt + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def encode(
        self, texts: Sequence[str], encode: Callable[[list[str]], EncodedTexts]
    ) -> tuple[EncodedTexts, list[bytes], list[bytes], EncodedTexts | None]:
        """Encoder values of ``texts`` (distinct), encoding only the misses with ``encode``.

        Returns the values in text order, the keys looked up (in order), the keys of the misses and their
        newly encoded entries (``None`` when every text was a hit).
        """
        keys = [self.key(t) for t in texts]
        rows: list[EncodedTexts | None] = []
        misses: list[int] = []
        for i, k in enumerate(keys):
            hit = self._entries.get(k)
            if hit is None:
                rows.append(None)
                misses.append(i)
            else:
                self._entries.move_to_end(k)
                rows.append(hit[0])
        self.counts.texts_from_cache += len(keys) - len(misses)
        fresh = None
        seen, kept = keys, misses
        if misses:
            fresh = encode([texts[i] for i in misses])
            self.counts.texts_encoded += len(misses)
            for j, i in enumerate(misses):
                rows[i] = fresh.subset([j])
            # A text whose token states live on disk (a very long reply) is not kept: the cache and the
            # checkpointed deltas stay in memory-sized pieces; its key is left out of what replay sees.
            on_disk = {i for j, i in enumerate(misses) if is_spilled(fresh.token_states[j])}
            if on_disk:
                seen = [k for i, k in enumerate(keys) if i not in on_disk]
                kept = [i for i in misses if i not in on_disk]
                fresh = fresh.subset([j for j, i in enumerate(misses) if i not in on_disk]) if kept else None
            self._insert_all([keys[i] for i in kept], [rows[i] for i in kept])  # type: ignore[misc]
        return _stack(rows), seen, [keys[i] for i in kept], fresh  # type: ignore[arg-type]

    def replay(self, ops: Sequence[Op]) -> None:
        """Rebuild the state after the lookups ``ops`` (what :meth:`encode` returned: keys, new keys, new entries)."""
        for keys, new_keys, new in ops:
            self._replay_one(keys, new_keys, new)

    def _replay_one(self, keys: Sequence[bytes], new_keys: Sequence[bytes], new: EncodedTexts | None) -> None:
        given = {k: j for j, k in enumerate(new_keys)}
        missing: list[bytes] = []
        for k in keys:
            if k in self._entries:
                self._entries.move_to_end(k)
            else:
                missing.append(k)
        if not missing:
            return
        if new is None or any(k not in given for k in missing):
            raise KeyError("checkpointed cache entries do not cover the chunk's texts")
        self._insert_all(missing, [new.subset([given[k]]) for k in missing])
        self.counts.texts_replayed += len(missing)

    def _insert_all(self, keys: list[bytes], rows: list[EncodedTexts]) -> None:
        for k, row in zip(keys, rows, strict=True):
            size = entry_nbytes(row)
            self._entries[k] = (row, size)
            self.nbytes += size
            while self.nbytes > self.budget_bytes and self._entries:
                _, (_, freed) = self._entries.popitem(last=False)
                self.nbytes -= freed
                self.counts.evictions += 1
            self.counts.peak_bytes = max(self.counts.peak_bytes, self.nbytes)

    def describe(self) -> dict[str, int | float | str]:
        """The manifest's ``text_cache`` entry."""
        c = self.counts
        return {
            "budget_mb": round(self.budget_bytes / 2**20, 3),
            "texts_encoded": c.texts_encoded,
            "texts_from_cache": c.texts_from_cache,
            "texts_restored_from_checkpoint": c.texts_replayed,
            "evictions": c.evictions,
            "entries": len(self._entries),
            "peak_mb": round(c.peak_bytes / 2**20, 3),
        }


#: One lookup: the keys looked up (in order), the keys of the misses and their new entries.
Op = tuple[list[bytes], list[bytes], "EncodedTexts | None"]


def _stack(rows: list[EncodedTexts]) -> EncodedTexts:
    return rows[0] if len(rows) == 1 else EncodedTexts.concat(rows)


# -- persistence next to the checkpoints -------------------------------------------------------------
_ARRAYS = ("pools", "pools_content", "extrema", "n_content_tokens", "n_windows", "truncated", "maxima", "minima")
_LISTS = ("token_states", "token_norms", "token_offsets")


def save_delta(path: Path, ops: Sequence[Op]) -> None:
    """Write one chunk's cache lookups (keys looked up, new keys, new entries) as an ``.npz`` (no pickles)."""
    data: dict[str, np.ndarray] = {"n_ops": np.array(len(ops), dtype=np.int64)}
    for i, (keys, new_keys, new) in enumerate(ops):
        data[f"{i}_keys"] = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 16)
        data[f"{i}_new_keys"] = np.frombuffer(b"".join(new_keys), dtype=np.uint8).reshape(-1, 16)
        if new is None:
            continue
        data[f"{i}_shape"] = np.array([new.n_layers, new.hidden_size], dtype=np.int64)
        for name in _ARRAYS:
            value = getattr(new, name)
            if value is not None:
                data[f"{i}_{name}"] = np.asarray(value)
        for name in _LISTS:
            value = getattr(new, name)
            if value is not None:
                data[f"{i}_{name}"] = np.concatenate(value) if value else np.zeros((0,), np.float32)
                data[f"{i}_{name}_len"] = np.array([len(a) for a in value], dtype=np.int64)
    buf = io.BytesIO()
    np.savez(buf, **data)
    write_bytes_atomic(path, buf.getvalue())


def load_delta(path: Path) -> list[Op]:
    """Read what :func:`save_delta` wrote (``allow_pickle=False``)."""
    ops: list[Op] = []
    with np.load(path, allow_pickle=False) as z:
        for i in range(int(z["n_ops"])):
            keys = [bytes(r) for r in z[f"{i}_keys"]]
            new_keys = [bytes(r) for r in z[f"{i}_new_keys"]]
            if f"{i}_shape" not in z:
                ops.append((keys, new_keys, None))
                continue
            n_layers, hidden = (int(v) for v in z[f"{i}_shape"])
            kw: dict = {name: z[f"{i}_{name}"] for name in _ARRAYS if f"{i}_{name}" in z}
            for name in _LISTS:
                if f"{i}_{name}" in z:
                    flat, lens = z[f"{i}_{name}"], z[f"{i}_{name}_len"]
                    parts = list(np.split(flat, np.cumsum(lens)[:-1])) if len(lens) else []
                    if name == "token_states":
                        parts = [a.reshape(-1, hidden) for a in parts]
                    elif name == "token_offsets":
                        parts = [a.reshape(-1, 2) for a in parts]
                    kw[name] = parts
            ops.append((keys, new_keys, EncodedTexts(n_layers=n_layers, hidden_size=hidden, **kw)))
    return ops
