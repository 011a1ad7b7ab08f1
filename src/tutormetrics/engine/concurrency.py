"""Where work runs besides the main thread, for any picklable callable: a pool of spawned worker processes
mapped over items in order (:func:`parallel_map`), and one persistent worker process started ahead of its first
task (:func:`worker_process`). Nothing here knows what the callable does.

A callable and its arguments travel with every task (the Scorer's lexical families pickle to about 1 KB, a
chunk's texts to far more). The persistent worker is forked on Linux while this process has not initialised
CUDA (it inherits the imported modules and starts in milliseconds), and spawned otherwise.

Example:
    >>> list(parallel_map(abs, [-1, 2, -3], n_jobs=1))
    [1, 2, 3]
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Iterable[T], n_jobs: int) -> Iterator[R]:
    """``fn(item)`` for every item, in order, in ``n_jobs`` spawned processes with at most ``2·n_jobs`` items in
    flight (``n_jobs <= 1``: in this process, lazily). ``fn`` and the items must be picklable.

    Args:
        fn: the function to apply (picklable).
        items: the inputs (picklable).
        n_jobs: worker processes; ≤ 1 runs in this process.
    """
    if n_jobs <= 1:
        yield from map(fn, items)
        return
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=mp.get_context("spawn")) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * n_jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


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


def worker_process(start_method: str | None = None) -> ProcessPoolExecutor:
    """One worker process, started now (not on the first task), forked or spawned per
    :func:`cpu_worker_start_method`; ``submit(fn, *args)`` any picklable callable to it."""
    method = start_method or cpu_worker_start_method()
    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context(method))
    pool.submit(int)  # the first task starts the process now, not when the chunk's task arrives
    return pool
