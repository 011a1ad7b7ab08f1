"""Progress on stderr: a tqdm bar on a terminal, one plain line every ``every`` seconds elsewhere
(``docs/design/scoring.md#progress``).

``progress=True`` forces bars, ``False`` shows nothing, ``None`` (the default) picks by whether stderr is a terminal.
A line looks like ``progress: score 1,204/3,699 tutor turns (33%), 4m10s elapsed, about 8m30s left``; the estimate
is left out before 5 % is done, and a stage shorter than one interval prints nothing. Lines are not warnings.

A scoring run's progress (:class:`RunProgress`) also reports *within* a chunk: a heartbeat thread shows, every
``every`` seconds, the rows done and what the current chunk is doing (``; in chunk: encode 12/40 batches of 1,830
texts``), so a long chunk is never silent; the encoder reports its batches into it (:meth:`RunProgress.child`).
The other long commands (``predict``, ``theta``, ``validate``, ``agree``, ``run`` after scoring) show their steps
the same way (:func:`step_progress`): ``progress: predict 12/60 fits (20%), 40s elapsed, about 2m40s left; now:
uptake, model all, fold 3/5``, or without a count ``progress: theta, 2m10s elapsed; now: MFRM fit (NUTS ...)``.
``--progress``/``--progress-every`` are declared once here (:class:`ProgressOptions`, :func:`progress_flag`).

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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, ClassVar, Protocol

from tutormetrics.errors import ConfigError
from tutormetrics.flags import flag

#: A logger: one line of text for people (stderr in the CLI, nothing by default in the API).
Log = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default logger: says nothing."""


class Progress(Protocol):
    """What a library function reports its steps into (:func:`step_progress`; :class:`NoProgress` shows nothing)."""

    def update(self, n: int = 1) -> None:
        """``n`` more steps done."""

    def detail(self, text: str) -> None:
        """What is running now."""

    def set_total(self, total: int | None) -> None:
        """The count to reach."""


#: Seconds between progress lines off a terminal (``--progress-every``; 0 = none).
DEFAULT_EVERY = 30.0


def now() -> float:
    """The clock of every progress line (``time.monotonic``; a test replaces this function with a fake clock)."""
    return time.monotonic()


def parse_progress_every(value: float) -> float:
    """``--progress-every``: 0 (no lines) or at least 0.1 seconds.

    >>> parse_progress_every(2)
    2.0
    """
    if value != 0 and value < 0.1:
        raise ConfigError(f"--progress-every {value:g}: use 0 (no progress lines) or at least 0.1 seconds")
    return float(value)


def progress_flag(panel: str | None = None) -> Any:
    """``--progress/--no-progress`` (default: bars on a terminal, lines elsewhere) of every command that can run long."""
    return flag("--progress/--no-progress", default=None, panel=panel, show_default=False,
                help="Progress bars on stderr (default: on a terminal; elsewhere one line every --progress-every seconds).")  # fmt: skip


def progress_every_flag(panel: str | None = None) -> Any:
    """``--progress-every SECONDS`` (default 30; 0 = no lines) of every command that can run long."""
    return flag("--progress-every", default=DEFAULT_EVERY, parse=parse_progress_every, cli_type=float, panel=panel, min=0,
                help="Seconds between progress lines when stderr is not a terminal (at least 0.1; 0 = none).")  # fmt: skip


@dataclass
class ProgressOptions:
    """``--progress`` and ``--progress-every`` of a command that is not a scoring run (``score`` and ``run`` have them
    in :class:`~tutormetrics.engine.file_scoring.ScoreOptions`, declared by the same two functions).

    >>> ProgressOptions().progress, ProgressOptions().progress_every
    (None, 30.0)
    """

    PANEL: ClassVar[str] = "Progress"

    progress: bool | None = progress_flag()
    progress_every: float = progress_every_flag()


def duration(seconds: float) -> str:
    """``4m10s``, ``31s``, ``1h2m``.

    >>> duration(250), duration(31.4), duration(3720)
    ('4m10s', '31s', '1h2m')
    """
    s = round(seconds)
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
        clock: Callable[[], float] | None = None,
        label: str = "in chunk",
    ) -> None:
        self.total, self.stage, self.unit, self.every, self.label = total, stage, unit, every, label
        self.n = initial
        self._initial = initial
        self._file = file if file is not None else sys.stderr
        self._clock = clock if clock is not None else now
        self._start = self._clock()
        self._next = self._start + every
        #: what the current chunk is doing (``encode 12/40 batches``), appended to the next line
        self.detail = ""

    def update(self, n: int = 1) -> None:
        self.n += n
        self.beat()

    def beat(self) -> None:
        """Write a line when one is due (an interval has passed since the last), whether or not a row was done."""
        t = self._clock()
        if self.every > 0 and t >= self._next:
            self._next = t + self.every
            text = self.line(t - self._start) + (f"; {self.label}: {self.detail}" if self.detail else "")
            self._file.write(text + "\n")
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
        if not self.unit:  # a step without a count (a θ fit): its name and the time
            return f"progress: {self.stage}, {duration(elapsed)} elapsed"
        return f"progress: {self.stage} {self.n:,}/? {self.unit} (0%), {duration(elapsed)} elapsed"

    def close(self) -> None:
        """Nothing to clear (lines stay in the log)."""

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """tqdm's postfix: the within-chunk detail of the next line."""
        self.detail = text


def progress_bar(
    total: int | None,
    *,
    stage: str,
    unit: str,
    progress: bool | None = None,
    every: float = DEFAULT_EVERY,
    initial: int = 0,
    file: IO[str] | None = None,
    label: str = "in chunk",
) -> Any:
    """A tqdm bar (terminal, or ``progress=True``), :class:`ProgressLines` (``None`` off a terminal), or a disabled bar;
    with a :class:`RunProgress` as ``progress``, a child bar that reports into it (the encoder's batches).

    Args:
        total: the stage's total (``None``: unknown).
        stage: its name in the lines.
        unit: what it counts.
        progress: ``True`` bars, ``False`` nothing, ``None`` by whether stderr is a terminal; a :class:`RunProgress` to report into.
        every: seconds between lines off a terminal.
        initial: already done.
        file: where to write (stderr).
        label: what the detail of a line is called (``in chunk``; ``now`` for a command's steps).
    """
    if isinstance(progress, RunProgress):
        return progress.child(total, stage, unit)
    stream = file if file is not None else sys.stderr
    on_terminal = bool(getattr(stream, "isatty", lambda: False)())
    if progress is True or (progress is None and on_terminal):
        from tqdm.auto import tqdm  # only for a bar that shows (≈ 0.1 s of imports)

        return tqdm(total=total, initial=initial, desc=stage, unit=unit or "it", file=stream, leave=False)
    if progress is None and every > 0:
        return ProgressLines(total, stage, unit, every, initial=initial, file=stream, label=label)
    return NoProgress(total, initial)


class NoProgress:
    """The disabled bar (``progress=False``): counts, shows nothing, imports nothing (tqdm's ``disable=True`` API).

    >>> bar = NoProgress(3); bar.update(2); bar.disable, bar.n
    (True, 2)
    """

    disable = True

    def __init__(self, total: int | None = None, initial: int = 0) -> None:
        self.total, self.n = total, initial

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        """Nothing to clear."""

    def refresh(self) -> None:
        """Nothing to show."""

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        """Nothing to show."""

    def detail(self, text: str) -> None:
        """Nothing to show (:meth:`RunProgress.detail`)."""

    def set_total(self, total: int | None) -> None:
        """The count to reach (:meth:`RunProgress.set_total`)."""
        self.total = total

    def child(self, total: int | None, stage: str, unit: str) -> NoProgress:
        """A disabled bar for a step (:meth:`RunProgress.child`).

        Args:
            total: the step's total.
            stage: its name (unused).
            unit: what it counts (unused).
        """
        return NoProgress(total)

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunProgress:
    """The progress of one scoring run: rows done (``update``), and what the current chunk is doing, shown by a
    heartbeat every ``every`` seconds on and off a terminal (a long chunk is never silent).

    Example:
        >>> import io
        >>> out, clock = io.StringIO(), iter([0.0, 6.0, 7.0, 12.0]).__next__
        >>> run = RunProgress(ProgressLines(4, "score", "exchanges", 5, file=out, clock=clock), every=5, heartbeat=False)
        >>> enc = run.child(40, "encode", "batches")
        >>> enc.update(12); run.beat()  # a line when the detail changes (6 s: due), none at 7 s
        >>> run.update(2); run.close()
        >>> print(out.getvalue().strip())
        progress: score 0/4 exchanges (0%), 6s elapsed; in chunk: encode 12/40 batches
        progress: score 2/4 exchanges (50%), 12s elapsed, about 12s left
    """

    def __init__(self, bar: Any, *, every: float, heartbeat: bool = True) -> None:
        self.bar, self.every = bar, every
        self._lock = threading.Lock()
        self._texts: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat and every > 0:
            self._thread = threading.Thread(target=self._beat_until_closed, name="tutormetrics-progress", daemon=True)
            self._thread.start()

    def update(self, n: int = 1) -> None:
        """``n`` more rows done (a chunk finished): its detail is cleared."""
        with self._lock:
            self.bar.set_postfix_str("", refresh=False)
            self.bar.update(n)

    def encoding(self, n_texts: int) -> None:
        """The chunk is about to encode ``n_texts`` texts (named in the next detail)."""
        self._texts = n_texts
        self.detail(f"encode {n_texts:,} texts")

    def detail(self, text: str) -> None:
        """What the current chunk (or step) is doing now; off a terminal a line is written at once when one is due
        (the heartbeat writes the others)."""
        with self._lock:
            self.bar.set_postfix_str(text, refresh=False)
            if isinstance(self.bar, ProgressLines):
                self.bar.beat()

    def set_total(self, total: int | None) -> None:
        """The count to reach, once it is known (a command's fits, after its tables are read)."""
        with self._lock:
            self.bar.total = total

    def child(self, total: int | None, stage: str, unit: str) -> _ChildBar:
        """A tqdm-like bar for one step of the chunk (``encode`` batches) whose counts become the detail.

        Args:
            total: the step's total.
            stage: its name (``encode``).
            unit: what it counts (``batches``).
        """
        return _ChildBar(self, total, stage, unit, self._texts)

    def beat(self) -> None:
        """Show the rows done and the detail now, if an interval has passed (lines) or always (a terminal bar)."""
        with self._lock:
            if isinstance(self.bar, ProgressLines):
                self.bar.beat()
            elif hasattr(self.bar, "refresh"):
                self.bar.refresh()

    def close(self) -> None:
        """Stop the heartbeat and close the bar."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self.bar.close()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _beat_until_closed(self) -> None:
        # lines: a look four times per interval, so a line written off the beat (a new detail) delays the next one by
        # at most a quarter interval; a terminal bar: one refresh per interval
        tick = self.every / 4 if isinstance(self.bar, ProgressLines) else self.every
        while not self._stop.wait(tick):
            self.beat()


class _ChildBar:
    """One step of a chunk reported into its :class:`RunProgress` (``update``/``close`` as tqdm's)."""

    def __init__(self, run: RunProgress, total: int | None, stage: str, unit: str, texts: int | None) -> None:
        self.run, self.total, self.stage, self.unit, self.texts = run, total, stage, unit, texts
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n
        self.detail("")

    def detail(self, text: str) -> None:
        """The step's count, then what it is doing (``predict 12/60 fits: uptake, model all, fold 3/5``)."""
        of = f" of {self.texts:,} texts" if self.texts else ""
        total = f"{self.total:,}" if self.total is not None else "?"
        self.run.detail(f"{self.stage} {self.n:,}/{total} {self.unit}{of}" + (f": {text}" if text else ""))

    def set_total(self, total: int | None) -> None:
        """The step's count to reach."""
        self.total = total

    def close(self) -> None:
        """The step is done (the detail stays until the chunk's rows are counted)."""

    def set_postfix_str(self, *_args: Any, **_kwargs: Any) -> None:
        """tqdm compatibility."""

    def __enter__(self) -> _ChildBar:
        return self

    def __exit__(self, *exc: object) -> None:
        """The step is done; its run goes on (closed by its owner)."""


def run_progress(
    total: int | None,
    *,
    stage: str,
    unit: str,
    progress: bool | None = None,
    every: float = DEFAULT_EVERY,
    initial: int = 0,
    file: IO[str] | None = None,
) -> Any:
    """:func:`progress_bar` for a scoring run: a :class:`RunProgress` with a heartbeat when the bar shows anything
    (lines written every ``every`` seconds; a terminal bar refreshed every second, or every ``every`` seconds when
    that is shorter), else the disabled bar itself.

    Args:
        total: rows to score (``None``: unknown).
        stage: the stage's name in the lines (``score``).
        unit: what the rows are (``exchanges``, ``tutor turns``).
        progress: ``True`` bars, ``False`` nothing, ``None`` by whether stderr is a terminal.
        every: seconds between lines and heartbeats (``--progress-every``).
        initial: rows already done (a resumed run).
        file: where to write (stderr).
    """
    bar = progress_bar(total, stage=stage, unit=unit, progress=progress, every=every, initial=initial, file=file)
    return _with_heartbeat(bar, every)


def _with_heartbeat(bar: Any, every: float) -> Any:
    """``bar`` in a :class:`RunProgress` when it shows anything: lines every ``every`` seconds; a terminal bar refreshed
    every second, or every ``every`` seconds when that is shorter."""
    if getattr(bar, "disable", False):
        return bar
    return RunProgress(bar, every=every if isinstance(bar, ProgressLines) else (min(every, 1.0) if every > 0 else 1.0))


def step_progress(
    stage: str,
    *,
    total: int | None = None,
    unit: str = "",
    progress: bool | RunProgress | None = None,
    every: float = DEFAULT_EVERY,
    file: IO[str] | None = None,
) -> Any:
    """The progress of a command's steps (``predict``'s fits, ``theta``'s fit): :func:`run_progress` whose detail is
    called ``now``, so a long step shows what it is doing every ``every`` seconds; inside a :class:`RunProgress`
    (``run`` calling ``predict``), a child of it. Use it as a context manager (the heartbeat stops at the end).

    Args:
        stage: the command (``predict``).
        total: what is counted, when known (:meth:`RunProgress.set_total` later, else).
        unit: what it counts (``fits``); empty: no count, the step's name and the time only.
        progress: ``True`` bars, ``False`` nothing, ``None`` by whether stderr is a terminal; a :class:`RunProgress`
            to report into.
        every: seconds between lines (``--progress-every``).
        file: where to write (stderr).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> with step_progress("theta", every=30, file=out) as steps:
        ...     steps.detail("MFRM fit (MML)")
        >>> out.getvalue()  # shorter than one interval: nothing
        ''
    """
    if isinstance(progress, RunProgress):
        return progress.child(total, stage, unit)
    return _with_heartbeat(progress_bar(total, stage=stage, unit=unit, progress=progress, every=every, file=file, label="now"), every)
