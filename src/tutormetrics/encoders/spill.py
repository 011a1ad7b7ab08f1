"""Token-state matrices too large to keep in memory: rows on disk, read back in blocks.

A reply of several megabytes has over a million word pieces; its float32 content-token matrix
(MiniLM: ``n × 384 × 4`` bytes, 1.5 KiB per piece) would dominate the process. The encoder writes such a
text's rows, window by window, into a :class:`SpilledTokens` — an unnamed temporary file (removed by the
OS when it is closed or the process ends; ``TMPDIR`` chooses the folder; the long texts of one encoder
pass share one file) — and the consumers (greedy
matching, coherence) read it back in blocks of :data:`BLOCK_ROWS` rows with :func:`row_blocks`. The file is
written and read with ``os.pwrite``/``os.pread`` (no memory map, so no resident file pages are charged to
the process). Values round-trip exactly (float32 bytes). A :class:`StackedTokens` is the other matrix that is not
one array: the rows of several in-memory matrices in order, read the same ways.

Example:
    >>> s = SpilledTokens(3, 2)
    >>> s.write_rows(0, np.array([[1, 2], [3, 4]], np.float32)); s.write_rows(2, np.array([[5, 6]], np.float32))
    >>> [(start, b.tolist()) for start, b in row_blocks(s, 2)]
    [(0, [[1.0, 2.0], [3.0, 4.0]]), (2, [[5.0, 6.0]])]
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

#: Rows per block read back by :func:`row_blocks` (MiniLM: 16,384 × 384 × 4 B = 24 MiB).
BLOCK_ROWS = 16_384


class SpilledTokens:
    """An ``(n, d)`` float32 matrix in an unnamed temporary file; rows written once, read in blocks.

    ``np.asarray(s)`` materialises the whole matrix (for small uses and tests); pickling does the same,
    so a copy sent to another process is a plain array.
    """

    dtype = np.dtype(np.float32)
    ndim = 2
    #: Bytes held in memory (the rows live on disk); :attr:`disk_bytes` is the file's size.
    nbytes = 0

    def __init__(self, n_rows: int, n_cols: int, *, file: Any = None, offset: int = 0) -> None:
        self.shape = (int(n_rows), int(n_cols))
        self._file = tempfile.TemporaryFile() if file is None else file  # unlinked at once on POSIX
        self._offset = int(offset)
        if file is None:
            self._file.truncate(self.disk_bytes)

    @classmethod
    def sharing_one_file(cls, shapes: list[tuple[int, int]]) -> list[SpilledTokens]:
        """One matrix per ``(n, d)`` in ``shapes``, all in one temporary file (one descriptor however many
        long texts a chunk holds; the file goes when the last of them does)."""
        file = tempfile.TemporaryFile()
        out, offset = [], 0
        for n, d in shapes:
            out.append(cls(n, d, file=file, offset=offset))
            offset += out[-1].disk_bytes
        file.truncate(offset)
        return out

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"SpilledTokens(shape={self.shape})"

    @property
    def disk_bytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    def write_rows(self, start: int, rows: np.ndarray) -> None:
        """Store ``rows`` (``(k, d)``) as rows ``start … start + k − 1``."""
        block = np.ascontiguousarray(rows, dtype=self.dtype)
        if block.ndim != 2 or block.shape[1] != self.shape[1] or not 0 <= start <= self.shape[0] - len(block):
            raise ValueError(f"cannot write {block.shape} at row {start} of {self.shape}")
        data = memoryview(block).cast("B")
        offset = self._offset + start * self.shape[1] * self.dtype.itemsize
        while data:
            written = os.pwrite(self._file.fileno(), data, offset)
            data, offset = data[written:], offset + written

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` as a new ``(stop − start, d)`` float32 array."""
        start, stop = max(0, start), min(self.shape[0], stop)
        out = np.empty((max(0, stop - start), self.shape[1]), dtype=self.dtype)
        view = memoryview(out).cast("B")
        offset = self._offset + start * self.shape[1] * self.dtype.itemsize
        while view:
            got = os.preadv(self._file.fileno(), [view], offset)
            if got <= 0:
                raise OSError(f"spilled token file ended early at byte {offset}")
            view, offset = view[got:], offset + got
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.read_rows(0, self.shape[0])
        return out if dtype is None else out.astype(dtype, copy=False)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (np.asarray, (self.read_rows(0, self.shape[0]),))


class StackedTokens:
    """The rows of several in-memory ``(n_i, d)`` matrices one after the other, without copying them: the greedy token
    set of a dialogue context pooled over its turns (:func:`tutormetrics.encoders.compose.pool_parts`), which shares
    its turns' matrices with every other context holding them (``docs/design/dialogue.md#context-memory``).
    ``np.asarray(s)`` (what greedy matching reads, one context at a time) and pickling give the concatenation.

    Example:
        >>> s = StackedTokens([np.ones((2, 2), np.float32), np.zeros((1, 2), np.float32)])
        >>> len(s), s.read_rows(1, 3).tolist(), np.asarray(s).shape
        (3, [[1.0, 1.0], [0.0, 0.0]], (3, 2))
    """

    ndim = 2
    #: Bytes held by this object itself (the rows belong to the parts).
    nbytes = 0

    def __init__(self, parts: Sequence[np.ndarray]) -> None:
        self.parts = tuple(parts)
        self.dtype = np.result_type(*(p.dtype for p in self.parts))
        self._starts = np.cumsum([0, *(len(p) for p in self.parts)])
        self.shape = (int(self._starts[-1]), int(self.parts[0].shape[1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"StackedTokens(shape={self.shape}, parts={len(self.parts)})"

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` as a new array."""
        start, stop = max(0, start), min(self.shape[0], stop)
        first = int(np.searchsorted(self._starts, start, side="right")) - 1
        blocks = []
        for k in range(max(first, 0), len(self.parts)):
            lo = int(self._starts[k])
            if lo >= stop:
                break
            blocks.append(self.parts[k][max(start - lo, 0) : stop - lo])
        return np.concatenate(blocks, axis=0) if blocks else np.empty((0, self.shape[1]), dtype=self.dtype)

    def astype(self, dtype: Any) -> np.ndarray:
        return np.asarray(self).astype(dtype)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.concatenate(self.parts, axis=0)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (np.asarray, (np.asarray(self),))


def row_blocks(tokens: np.ndarray | SpilledTokens | StackedTokens, max_rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
    """``(first_row, block)`` over the rows of an array or a :class:`SpilledTokens`, ``max_rows`` at a time.

    Example:
        >>> [(i, b.shape) for i, b in row_blocks(np.zeros((5, 2)), 2)]
        [(0, (2, 2)), (2, (2, 2)), (4, (1, 2))]
    """
    n = len(tokens)
    for start in range(0, n, max_rows):
        if isinstance(tokens, SpilledTokens | StackedTokens):
            yield start, tokens.read_rows(start, start + max_rows)
        else:
            yield start, tokens[start : start + max_rows]


def is_spilled(tokens: object) -> bool:
    """Whether a token matrix lives on disk."""
    return isinstance(tokens, SpilledTokens)
