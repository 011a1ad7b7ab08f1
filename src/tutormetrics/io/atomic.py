"""Atomic writes and output locks: the one way every file the package writes reaches the disk (``docs/design/io.md#atomic-writes``).

* :func:`atomic_output` yields a fresh temporary file beside the target and renames it over the target: readers see
  the old file or the new one, never half of one, and a symlink planted at the target is replaced, never followed.
* :func:`write_text_atomic`, :func:`write_bytes_atomic` and :func:`save_figure` are that writer for text, bytes and
  matplotlib figures; :func:`remove_stale_temporaries` clears what a killed write left.
* :func:`output_lock` keeps two commands from writing one output (``docs/design/io.md#output-locks``).
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tutormetrics.errors import InputSchemaError

__all__ = [
    "atomic_output",
    "output_lock",
    "remove_stale_temporaries",
    "save_figure",
    "write_bytes_atomic",
    "write_text_atomic",
]


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The one way every file is written: yield a fresh temporary file in the target folder (``mkstemp``, which
    never follows a planted symlink), then fsync it, give it the umask's permissions and rename it over ``path``
    (a symlink at ``path``, dangling or not, is replaced, never followed). On any error the temporary file is
    removed and ``path`` is untouched; leftovers of a killed write are removed by :func:`remove_stale_temporaries`.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_output(target) as tmp:
        ...     _ = tmp.write_text("done")
        >>> target.read_text()
        'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            yield tmp
        except Exception as exc:  # polars and matplotlib report a full disk in their own words
            if "No space left on device" in str(exc) and not isinstance(exc, OSError):
                import errno

                raise OSError(errno.ENOSPC, "No space left on device", str(path)) from exc
            raise
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)  # rename(2) replaces a link at ``path`` itself, never its target
        _fsync_folder(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_output`: readers see the old file or the new one."""
    path = Path(path)
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf8", newline="") as fh:
            fh.write(text)
    return path


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`."""
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)
    return path


def save_figure(fig: object, path: str | os.PathLike[str], *, dpi: int = 300, fmt: str | None = None) -> Path:
    """Save a matplotlib figure through :func:`atomic_output` (format ``fmt``, else from the extension; white
    background), so a kill or a full disk never leaves a truncated figure where the old one was, and a planted
    symlink is replaced.

    Args:
        fig: a matplotlib figure.
        path: where to write it.
        dpi: resolution of raster formats.
        fmt: the format (``png``, ``pdf``, ``svg``); from the extension when ``None``.
    """
    path = Path(path)
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=fmt or path.suffix.lower().lstrip("."), facecolor="white")  # type: ignore[attr-defined]
    return path


def remove_stale_temporaries(path: str | os.PathLike[str]) -> int:
    """Delete ``.<name>.*.tmp`` files that a killed write of ``path`` left in its folder; returns how many."""
    path = Path(path)
    removed = 0
    if path.parent.is_dir():
        for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink()
                removed += 1
    return removed


@contextmanager
def output_lock(outputs: Sequence[str | os.PathLike[str] | None]) -> Iterator[None]:
    """Hold one lock per output (a file, or a folder like ``run``'s) for the whole command, so two tutormetrics
    processes never write one output: the second stops at once (exit 2) naming the first.

    The lock is ``flock`` on a hidden ``.<name>.lock`` beside the output (inside it for a folder), removed when the
    command ends; the kernel releases it when a process dies, so a killed run never blocks the next one.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "corr.csv"
        >>> with output_lock([out]):
        ...     (out.parent / ".corr.csv.lock").exists()
        True
    """
    held: list[tuple[int, Path]] = []
    try:
        for out in dict.fromkeys(Path(p) for p in outputs if p is not None and str(p) != "-"):
            lock = (out / ".tutormetrics.lock") if out.is_dir() else out.parent / f".{out.name}.lock"
            fd = _take_lock(lock, out)
            held.append((fd, lock))
            # under the lock no one else writes this output: leftovers of a killed write can go
            if out.is_dir():
                for tmp in out.glob(".*.tmp"):
                    if tmp.is_file() and not tmp.is_symlink():
                        tmp.unlink()
            else:
                remove_stale_temporaries(out)
        yield
    finally:
        for fd, lock in reversed(held):
            try:
                lock.unlink()
            except OSError:
                pass
            os.close(fd)


def _take_lock(lock: Path, out: Path) -> int:
    """``flock`` on ``lock`` (created without following a link), retried while its previous holder removes it;
    a lock held by another process is exit 2 naming it. Returns the open descriptor."""
    import fcntl

    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 200, 0).decode("utf8", "replace").strip() or "another process"
            os.close(fd)
            raise InputSchemaError(
                f"{out} is being written by another tutormetrics command ({owner})",
                hint="wait for it to finish, or stop it; two commands must not write one output",
            ) from None
        # the lock file may have been removed by its previous holder between our open and flock: retry
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
            return fd
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: some file systems refuse fsync on a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
