"""Progress on stderr: a tqdm bar on a terminal, one plain line every ``every`` seconds elsewhere (datasets.md §7).

``progress=True`` forces bars, ``False`` shows nothing, ``None`` (the default) picks by whether stderr is a terminal.
A line looks like ``progress: score 1,204/3,699 tutor turns (33%), 4m10s elapsed, about 8m30s left``; the estimate
is left out before 5 % is done, and a stage shorter than one interval prints nothing. Lines are not warnings.

Example:
    >>> import io
    >>> out, clock = io.StringIO(), iter([0.0, 31.0, 62.0]).__next__
    >>> bar = ProgressLines(total=200, stage="score", unit="exchanges", every=30, file=out, clock=clock)
    >>> bar.update(50); bar.update(50); bar.close()
    >>> print(out.getvalue().strip())
    progress: score 50/200 exchanges (25%), 31s elapsed, about 1m33s left
    progress: score 100/200 exchanges (50%), 1m2s elapsed, about 1m2s left
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

#: A logger: one line of text for people (stderr in the CLI, nothing by default in the API).
Log = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default logger: says nothing."""


#: Seconds between progress lines off a terminal (``--progress-every``; 0 = none).
DEFAULT_EVERY = 30.0


def duration(seconds: float) -> str:
    """``4m10s``, ``31s``, ``1h2m``.

    >>> duration(250), duration(31.4), duration(3720)
    ('4m10s', '31s', '1h2m')
    """
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60}m"
    if s >= 60:
        return f"{s // 60}m{s % 60}s"
    return f"{s}s"


class ProgressLines:
    """A tqdm-like object (``update``, ``close``) that writes one line every ``every`` seconds."""

    def __init__(
        self,
        total: int | None,
        stage: str,
        unit: str,
        every: float,
        *,
        initial: int = 0,
        file: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.stage, self.unit, self.every = total, stage, unit, every
        self.n = initial
        self._initial = initial
        self._file = file if file is not None else sys.stderr
        self._clock = clock
        self._start = clock()
        self._next = self._start + every

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        if self.every > 0 and now >= self._next:
            self._next = now + self.every
            self._file.write(self.line(now - self._start) + "\n")
            self._file.flush()

    def line(self, elapsed: float) -> str:
        done = self.n - self._initial
        if self.total:
            share = self.n / self.total
            text = f"progress: {self.stage} {self.n:,}/{self.total:,} {self.unit} ({int(share * 100)}%), {duration(elapsed)} elapsed"
            todo = self.total - self.n
            if share >= 0.05 and done > 0:
                text += f", about {duration(elapsed / done * todo)} left"
            return text
        return f"progress: {self.stage} {self.n:,}/? {self.unit} (0%), {duration(elapsed)} elapsed"

    def close(self) -> None:
        """Nothing to clear (lines stay in the log)."""

    def set_postfix_str(self, *_args: Any, **_kwargs: Any) -> None:
        """tqdm compatibility."""


def progress_bar(
    total: int | None,
    *,
    stage: str,
    unit: str,
    progress: bool | None = None,
    every: float = DEFAULT_EVERY,
    initial: int = 0,
    file: IO[str] | None = None,
) -> Any:
    """A tqdm bar (terminal, or ``progress=True``), :class:`ProgressLines` (``None`` off a terminal), or a disabled bar."""
    from tqdm.auto import tqdm

    stream = file if file is not None else sys.stderr
    on_terminal = bool(getattr(stream, "isatty", lambda: False)())
    if progress is True or (progress is None and on_terminal):
        return tqdm(total=total, initial=initial, desc=stage, unit=unit, file=stream, leave=False)
    if progress is None and every > 0:
        return ProgressLines(total, stage, unit, every, initial=initial, file=stream)
    return tqdm(total=total, disable=True)
