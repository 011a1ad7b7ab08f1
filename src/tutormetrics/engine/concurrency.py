"""Where the scoring work runs besides the main thread: worker processes for lexical-only runs, and one
CPU-family worker beside an encoder (``Scorer(cpu_overlap=...)``).

Lexical-only workers are spawned; each keeps what its pool initializer sent in a per-process dict, so a
task carries only its chunk's texts. The CPU-family worker beside an encoder is forked on Linux while
this process has not initialised CUDA (it inherits the imported modules and starts in milliseconds), and
spawned otherwise; the scorer starts it before the model loads, so its start-up hides under the load.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.text import split_sentences, tokenize

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.engine.scorer import Scorer, ScoreStats

Chunk = tuple[Sequence[str], Sequence[str | None], Sequence[str | None]]


def score_cpu_families(families: list[Metric], batch: ExchangeBatch, art: Artifacts) -> dict[str, dict[str, np.ndarray]]:
    """Build the text artifacts (tokens once per unique text, sentences per response) and run the CPU families."""
    requires = frozenset().union(*(f.requires for f in families)) if families else frozenset()
    if "tokens" in requires:
        if art.segmented is None:
            art.tokens = [tokenize(t) for t in art.texts]
        else:  # Chinese rows under --segmenter rjieba
            art.tokens = [tokenize(t, "rjieba" if s else "char") for t, s in zip(art.texts, art.segmented)]
    if "sentences" in requires:
        sentences = np.zeros(len(art.texts), dtype=np.int64)
        for i in set(batch.response_idx.tolist()):
            sentences[i] = len(split_sentences(art.texts[i]))
        art.sentences = sentences
    return {f.name: f.score(batch, art) for f in families}


def parallel_map(scorer: Scorer, chunks: Iterable[Any], n_jobs: int) -> Iterator[tuple[pl.DataFrame, ScoreStats]]:
    """Score chunks in ``n_jobs`` spawned processes, in order, with at most ``2·n_jobs`` chunks in flight.

    The scorer is sent once per worker (initializer), each task carries only its chunk's texts.
    """
    with ProcessPoolExecutor(
        max_workers=n_jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init, initargs=(scorer,)
    ) as pool:
        pending: deque = deque()
        for chunk in chunks:
            pending.append(pool.submit(_worker_score, chunk))
            if len(pending) >= 2 * n_jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


_WORKER: dict[str, Any] = {}  # per worker process: what the pool initializer sent


def _worker_init(scorer: Scorer) -> None:
    _WORKER["scorer"] = scorer


def _worker_score(chunk: Chunk) -> tuple[pl.DataFrame, ScoreStats]:
    return _WORKER["scorer"]._score_chunk(*chunk)


def _cpu_worker_init(families: list[Metric]) -> None:
    _WORKER["cpu_families"] = families  # type: ignore[assignment]


def _cpu_worker_score(
    batch: ExchangeBatch, texts: list[str], langs: list[str] | None = None, segmented: list[bool] | None = None
) -> dict[str, dict[str, np.ndarray]]:
    art = Artifacts(texts=texts, langs=langs, segmented=segmented)
    return score_cpu_families(_WORKER["cpu_families"], batch, art)  # type: ignore[arg-type]


def cpu_worker_start_method() -> str:
    """``"fork"`` on Linux while CUDA is not initialised in this process (forking after CUDA is unsafe),
    else ``"spawn"``.

    Example:
        >>> cpu_worker_start_method() in ("fork", "spawn")
        True
    """
    if not sys.platform.startswith("linux"):
        return "spawn"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is not None and cuda.is_initialized():
        return "spawn"
    return "fork"


def cpu_family_pool(families: list[Metric], start_method: str | None = None) -> ProcessPoolExecutor:
    """One worker process that scores the CPU families; submit :func:`score_cpu_chunk` to it.

    The process starts at once (not on the first task), forked or spawned per :func:`cpu_worker_start_method`.
    """
    method = start_method or cpu_worker_start_method()
    pool = ProcessPoolExecutor(
        max_workers=1, mp_context=mp.get_context(method), initializer=_cpu_worker_init, initargs=(families,)
    )
    pool.submit(int)  # the first task starts the process now, not when the chunk's task arrives
    return pool


def score_cpu_chunk(
    batch: ExchangeBatch, texts: list[str], langs: list[str] | None = None, segmented: list[bool] | None = None
) -> dict[str, dict[str, np.ndarray]]:
    """Task run in :func:`cpu_family_pool`'s worker (``langs``/``segmented`` as in :class:`Artifacts`)."""
    return _cpu_worker_score(batch, texts, langs, segmented)
