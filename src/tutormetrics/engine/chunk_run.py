"""One chunk pipeline for file scoring (exchanges and dialogues alike): feed chunks to the Scorer, reuse the
verified ones of a checkpoint, checkpoint the others, and keep each chunk's counts and warnings.

Each item is ``(chunk, extra)``: ``chunk`` is what :meth:`Scorer.iter_scores` takes (``(ids, prompts,
responses[, aux])``) and ``extra`` whatever ``finish(frame, extra)`` needs to turn the scored frame into the
output's rows (the ``--keep`` columns; a dialogue's id columns). A chunk's counts and warnings are saved with it,
so a resumed run reports exactly what an uninterrupted one does (counts, warnings, ``--strict``), and, with the
text cache on, its cache delta too, so later chunks encode the same texts in the same batches.

Example:
    >>> from tutormetrics.engine.scorer import Scorer
    >>> run = ChunkRun(Scorer("overlap", progress=False), total=2)
    >>> items = [((["a"], ["x y"], ["x"]), None), ((["b"], ["y"], ["y"]), None)]
    >>> [(i, f["jaccard_1"][0]) for i, f in run.frames(iter(items))]
    [(0, 0.5), (1, 1.0)]
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tutormetrics.engine.run_stats import ScoreStats

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.engine.checkpoint import Checkpoint
    from tutormetrics.engine.scorer import Scorer

Item = tuple[tuple[Any, ...], Any]
Finish = Callable[[pl.DataFrame, Any], pl.DataFrame]


def _as_is(frame: pl.DataFrame, _extra: Any) -> pl.DataFrame:
    return frame


class ChunkRun:
    """Score ``(chunk, extra)`` items in order with a Scorer, optionally against a :class:`Checkpoint`.

    ``caught`` is the list a ``warnings.catch_warnings(record=True)`` block records into; the warnings raised
    while a chunk was scored are that chunk's, those after the last chunk (:attr:`n_caught` on) the run's.
    """

    def __init__(
        self,
        scorer: Scorer,
        *,
        total: int,
        caught: list[warnings.WarningMessage] | None = None,
        checkpoint: Checkpoint | None = None,
        finish: Finish = _as_is,
    ) -> None:
        self.scorer, self.total, self.checkpoint, self.finish = scorer, total, checkpoint, finish
        self.caught: list[warnings.WarningMessage] = caught if caught is not None else []
        self.n_chunks = 0
        self.n_reused = 0
        self.n_caught = 0
        self._stats: dict[int, dict[str, Any]] = {}
        self._baseline: dict[str, Any] = {}  # the scorer's counts when the last chunk's share was taken
        self._warnings: dict[int, list[str]] = {}
        self._deltas: dict[int, Any] = {}  # chunk index -> the Scorer's text-cache delta, until saved
        self._extra: dict[int, Any] = {}

    @property
    def stats(self) -> ScoreStats:
        """The run's counts: the scorer's, reused chunks merged in."""
        return self.scorer.stats

    def save_all(self, items: Iterator[Item]) -> list[Path]:
        """Score every item not reusable from the checkpoint, save each, and return every chunk's file in order."""
        checkpoint = self.checkpoint
        assert checkpoint is not None
        for index, frame in self.frames(items):
            stats, warned = self._stats.get(index, {}), self._warnings.get(index, [])
            checkpoint.save(index, frame, self.scorer.id_column, stats, warned, self._cache_writer(index))
            if checkpoint.window.get("start") == index:  # its cache delta now holds the window's pieces
                checkpoint.drop_window()
        return checkpoint.parts(self.n_chunks)

    def frames(self, items: Iterator[Item]) -> Iterator[tuple[int, pl.DataFrame]]:
        """``(index, finished frame)`` for every chunk scored now (reused chunks are skipped)."""
        pending: deque[int] = deque()
        scorer = self.scorer
        initial = self._reused_rows()
        ahead = scorer.encode_ahead if scorer.needs_encoder else 1
        scorer.record_cache_ops = self.checkpoint is not None and scorer.text_cache is not None

        def windows() -> Iterator[tuple[int, Item, bool]]:
            """``(index, item, reusable)``; the texts of each window of ``ahead`` chunks are encoded at its start,
            as part of its first chunk (when that chunk is reused, its checkpointed cache replays the same)."""
            numbered = enumerate(items)
            while window := list(islice(numbered, ahead)):
                marked = [(i, it, self.checkpoint is not None and self.checkpoint.reusable(i, it[0][0])) for i, it in window]
                if ahead > 1 and not marked[0][2]:
                    start = marked[0][0]
                    pieces = None if self.checkpoint is None else _WindowPieces(self.checkpoint, start)
                    scorer.prefetch([it[0] for _, it, _ in marked], pieces)
                yield from marked

        def fresh() -> Iterator[tuple[Any, ...]]:
            for index, (chunk, extra), reusable in windows():
                self.n_chunks = index + 1
                if reusable:
                    self._reuse(index)
                    continue
                if self.checkpoint is not None:
                    self.checkpoint.forget(index)
                pending.append(index)
                self._extra[index] = extra
                yield chunk

        # A chunk's counts are what the scorer added since the previous chunk's frame; reused chunks merge
        # theirs into the scorer (for the run's totals) and into this baseline alike, so they never count twice.
        self._baseline = scorer.stats.snapshot()
        mark = len(self.caught)
        for frame in scorer.iter_scores(fresh(), total=self.total, initial=initial):
            index = pending.popleft()
            self._stats[index] = scorer.stats.since(self._baseline)
            self._warnings[index] = [str(w.message) for w in self.caught[mark:]]
            self._baseline, mark = scorer.stats.snapshot(), len(self.caught)
            if scorer.record_cache_ops:
                self._deltas[index] = scorer.take_cache_ops()
            yield index, self.finish(frame, self._extra.pop(index))
            self.n_caught = mark
        self.n_caught = mark  # warnings after this point (e.g. the long-text summary) belong to the whole run

    def warnings(self) -> list[str]:
        """Warnings of every chunk, in chunk order."""
        return [w for i in sorted(self._warnings) for w in self._warnings[i]]

    def run_warnings(self) -> list[str]:
        """Warnings of every chunk, then those of the whole run (raised after the last chunk)."""
        return self.warnings() + [str(w.message) for w in self.caught[self.n_caught:]]

    def _reused_rows(self) -> int:
        if self.checkpoint is None:
            return 0
        return sum(int(e.get("rows", 0)) for e in self.checkpoint.ledger.values())

    def _reuse(self, index: int) -> None:
        assert self.checkpoint is not None
        entry = self.checkpoint.ledger[index]
        self.scorer.stats.merge(ScoreStats.from_dict(entry.get("stats", {})))
        baseline = ScoreStats.from_dict(self._baseline)
        baseline.merge(ScoreStats.from_dict(entry.get("stats", {})))
        self._baseline = baseline.snapshot()
        self._stats[index] = entry.get("stats", {})
        self._warnings[index] = list(entry.get("warnings", []))
        self.n_reused += 1
        cache = self.scorer.text_cache
        if cache is not None and entry.get("cache_sha256") is not None:
            from tutormetrics.engine.text_cache import load_delta

            # the cache state after this chunk, as the first run had it: later chunks encode the same texts
            # in the same batches, so a resumed run writes the same bytes
            cache.replay(load_delta(self.checkpoint.cache_path(index)))

    def _cache_writer(self, index: int) -> Callable[[Path], None] | None:
        """Writes chunk ``index``'s text-cache delta next to its checkpoint (``None`` without a cache)."""
        delta = self._deltas.pop(index, None)
        if delta is None:
            return None
        from tutormetrics.engine.text_cache import save_delta

        return lambda path: save_delta(path, delta)


class _WindowPieces:
    """The checkpointed pieces of the window that starts at chunk ``start`` (what :meth:`Scorer.prefetch` takes)."""

    def __init__(self, checkpoint: Checkpoint, start: int) -> None:
        self.checkpoint, self.start = checkpoint, start

    def load(self, piece: int) -> list[Any] | None:
        from tutormetrics.engine.text_cache import load_delta

        path = self.checkpoint.window_piece(self.start, piece)
        return None if path is None else load_delta(path)

    def save(self, piece: int, ops: list[Any]) -> None:
        from tutormetrics.engine.text_cache import save_delta

        self.checkpoint.save_window_piece(self.start, piece, lambda path: save_delta(path, ops))
