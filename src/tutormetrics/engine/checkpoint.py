"""Checkpoints that verify themselves: ``<output>.partial/`` holds one Parquet file per scored chunk and a
ledger (``chunks.json``) with each chunk's row count, first and last id, SHA-256, counts and warnings.

* **One run per output.** The folder is locked with an OS lock (``flock``) for the whole run; a second
  run writing the same output stops at once and names the process that holds it.
* **Nothing unverified is used.** On resume a chunk is reused only when its file's SHA-256 matches the
  ledger *and* its row count and first/last id match the chunk the input gives at that index; anything
  else (a deleted, truncated, flipped, swapped or foreign chunk) is recomputed, and the run says so.
* **Nothing computed is lost.** Each chunk's counts and warnings live in the ledger, so a resumed run
  reports exactly what an uninterrupted one does (``--strict`` included). With the text cache on, each chunk's
  cache lookups and new encoder results sit beside it (``cache-NNNNNN.npz``, SHA-256 in the ledger, verified like
  the chunk; :mod:`tutormetrics.engine.text_cache`), so a resumed run rebuilds the cache instead of re-encoding.
  A window of small chunks encoded ahead (:meth:`Scorer.prefetch`) is saved piece by piece as it goes
  (``window-SSSSSS-KKK.npz``, SHA-256 in the ledger's ``window``) until its first chunk is saved, so a kill
  loses at most one piece's encoding work (about one chunk's), not the whole window's.

Every file in the folder is written through a fresh temporary file and ``os.replace``.

Example:
    >>> import tempfile, polars as pl
    >>> out = Path(tempfile.mkdtemp()) / "m.csv"
    >>> with Checkpoint(out, key="k") as ckpt:
    ...     _ = ckpt.open(resume=True, log=print)
    ...     ckpt.save(0, pl.DataFrame({"exchange_id": ["a", "b"], "x": [1.0, 2.0]}), "exchange_id", {}, [])
    ...     ckpt.reusable(0, ["a", "b"])
    True
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.errors import InputSchemaError
from tutormetrics.io.atomic import atomic_output, write_text_atomic
from tutormetrics.io.hashing import file_sha256
from tutormetrics.progress import Log

_STATE, _LEDGER, _OWNER = "run.json", "chunks.json", "owner.json"


class Checkpoint:
    """The locked, verified chunk folder of one output (use as a context manager)."""

    def __init__(self, output: Path, key: str) -> None:
        self.dir = output.with_name(output.name + ".partial")
        self.key = key
        self.ledger: dict[int, dict[str, Any]] = {}
        #: the window being encoded ahead: ``{"start": chunk index, "pieces": [SHA-256 of piece 0, 1, ...]}``
        self.window: dict[str, Any] = {}
        self._fd: int | None = None

    # -- locking ---------------------------------------------------------------------------------
    def __enter__(self) -> Checkpoint:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Create the folder and take its lock; another live run holding it is an error (exit 2)."""
        if self.dir.is_symlink() or (self.dir.exists() and not self.dir.is_dir()):
            raise InputSchemaError(f"{self.dir} exists and is not a folder", hint="move it away; tutormetrics keeps checkpoints there")
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputSchemaError(
                f"another tutormetrics run is writing the same output ({self._owner_text()})",
                hint="wait for it to finish, or stop it; two runs must not write one output",
            ) from None
        self._fd = fd
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                 "command": " ".join(sys.argv[:1] + sys.argv[1:8])}
        write_text_atomic(self.dir / _OWNER, json.dumps(owner))

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _owner_text(self) -> str:
        try:
            owner = json.loads((self.dir / _OWNER).read_text())
            return f"pid {owner['pid']} on {owner['host']}, started {owner['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return f"lock held on {self.dir}"

    # -- state -------------------------------------------------------------------------------------
    def open(self, resume: bool, log: Log) -> int:
        """Keep the hash-verified chunks of an earlier run with the same key; return how many there are.

        A folder from another run (other key, unreadable state) is emptied, saying so.
        """
        state = self._read_json(_STATE)
        same = isinstance(state, dict) and state.get("key") == self.key
        if not (resume and same):
            if any(p.name != _OWNER for p in self.dir.iterdir()):
                why = "--restart" if not resume else "a different or older run"
                log(f"note: discarding partial results in {self.dir} ({why})")
            self._clear()
            write_text_atomic(self.dir / _STATE, json.dumps({"key": self.key, "version": __version__}))
            return 0
        ledger = self._read_json(_LEDGER)
        entries = ledger.get("chunks", {}) if isinstance(ledger, dict) else {}
        bad: list[str] = []
        for name, entry in entries.items():
            try:
                index = int(name)
                path = self.path(index)
                ok = path.is_file() and not path.is_symlink() and file_sha256(path) == entry["sha256"]
                if ok and entry.get("cache_sha256") is not None:  # the chunk's text-cache delta, verified alike
                    cpath = self.cache_path(index)
                    ok = cpath.is_file() and not cpath.is_symlink() and file_sha256(cpath) == entry["cache_sha256"]
            except (ValueError, TypeError, KeyError, OSError):
                ok, index = False, -1
            if ok:
                self.ledger[index] = entry
            else:
                bad.append(name)
        self.window = self._verified_window(ledger.get("window") if isinstance(ledger, dict) else None)
        known = {self.path(i).name for i in self.ledger}
        known |= {self.cache_path(i).name for i, e in self.ledger.items() if e.get("cache_sha256") is not None}
        known |= {self.window_path(self.window["start"], k).name for k in range(len(self.window.get("pieces", [])))}
        for stray in [*self.dir.glob("chunk-*"), *self.dir.glob("cache-*"), *self.dir.glob("window-*")]:
            if stray.name not in known:
                stray.unlink()
        if bad:
            log(f"note: {len(bad)} checkpoint chunk(s) failed verification and will be recomputed")
        if self.ledger:
            log(f"resuming: {len(self.ledger)} verified chunk(s) in {self.dir}")
        self._write_ledger()
        return len(self.ledger)

    def reusable(self, index: int, ids: Sequence[str]) -> bool:
        """Whether chunk ``index`` can be reused for a chunk whose ids are ``ids``."""
        entry = self.ledger.get(index)
        if entry is None:
            return False
        ids = list(ids)
        return entry.get("rows") == len(ids) and bool(ids) and entry.get("first_id") == ids[0] and entry.get("last_id") == ids[-1]

    def forget(self, index: int) -> None:
        """Drop chunk ``index`` (it will be recomputed)."""
        if self.ledger.pop(index, None) is not None:
            for path in (self.path(index), self.cache_path(index)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            self._write_ledger()

    # -- the window encoded ahead, piece by piece ---------------------------------------------------
    def window_path(self, start: int, piece: int) -> Path:
        """Piece ``piece`` of the cache lookups of the window that starts at chunk ``start``."""
        return self.dir / f"window-{start:06d}-{piece:03d}.npz"

    def window_piece(self, start: int, piece: int) -> Path | None:
        """The verified file of that piece, or ``None`` (not saved, or saved for another window)."""
        if self.window.get("start") != start or piece >= len(self.window.get("pieces", [])):
            return None
        return self.window_path(start, piece)

    def save_window_piece(self, start: int, piece: int, write: Callable[[Path], None]) -> None:
        """Write piece ``piece`` of window ``start`` atomically and record its SHA-256 (a new window first
        drops the pieces of the previous one).

        Args:
            start: the window's first chunk.
            piece: the piece's number within the window.
            write: writes the piece's cache lookups to the path it is given.
        """
        if self.window.get("start") != start:
            self.drop_window()
            self.window = {"start": start, "pieces": []}
        pieces = self.window["pieces"][:piece]
        target = self.window_path(start, piece)
        self._write_atomic(target, write)
        self.window["pieces"] = [*pieces, file_sha256(target)]
        self._write_ledger()

    def drop_window(self) -> None:
        """Forget the window's pieces (its first chunk's cache delta now holds them)."""
        if not self.window:
            return
        for k in range(len(self.window.get("pieces", []))):
            with contextlib.suppress(FileNotFoundError):
                self.window_path(self.window["start"], k).unlink()
        self.window = {}
        self._write_ledger()

    def _verified_window(self, window: Any) -> dict[str, Any]:
        """The pieces of a saved window whose files match their SHA-256, up to the first that does not."""
        try:
            start, shas = int(window["start"]), list(window["pieces"])
        except (TypeError, KeyError, ValueError):
            return {}
        kept: list[str] = []
        for k, sha in enumerate(shas):
            path = self.window_path(start, k)
            if not (path.is_file() and not path.is_symlink() and file_sha256(path) == sha):
                break
            kept.append(sha)
        return {"start": start, "pieces": kept} if kept else {}

    def path(self, index: int) -> Path:
        return self.dir / f"chunk-{index:06d}.parquet"

    def cache_path(self, index: int) -> Path:
        """The text-cache delta of chunk ``index`` (:func:`tutormetrics.engine.text_cache.save_delta`)."""
        return self.dir / f"cache-{index:06d}.npz"

    def save(
        self,
        index: int,
        frame: pl.DataFrame,
        id_col: str,
        stats: dict[str, Any],
        warnings: list[str],
        write_cache: Callable[[Path], None] | None = None,
    ) -> None:
        """Write chunk ``index`` atomically and record it in the ledger; ``write_cache(path)`` writes the
        chunk's text-cache delta, verified on resume like the chunk.

        Args:
            index: the chunk's number.
            frame: its output rows.
            id_col: the id column (its first and last id go into the ledger).
            stats: the chunk's counts.
            warnings: the warnings raised while it was scored.
            write_cache: writes its text-cache delta to the path it is given (``None``: no cache).
        """
        cache_sha = None
        if write_cache is not None:
            self._write_atomic(self.cache_path(index), write_cache)
            cache_sha = file_sha256(self.cache_path(index))
        target = self.path(index)
        self._write_atomic(target, frame.write_parquet)
        ids = frame.get_column(id_col)
        self.ledger[index] = {
            "rows": frame.height,
            "first_id": ids[0] if frame.height else None,
            "last_id": ids[-1] if frame.height else None,
            "sha256": file_sha256(target),
            "stats": stats,
            "warnings": warnings,
            "cache_sha256": cache_sha,
        }
        self._write_ledger()

    def _write_atomic(self, target: Path, write: Callable[[Any], None]) -> None:
        with atomic_output(target) as tmp:
            write(tmp)

    def parts(self, n_chunks: int) -> list[Path]:
        """The chunk files ``0..n_chunks-1`` in order (every one verified and present)."""
        missing = [i for i in range(n_chunks) if i not in self.ledger]
        if missing:  # pragma: no cover - the scoring loop saves every chunk it does not reuse
            raise InputSchemaError(f"{self.dir}: chunks {missing[:5]} are missing", hint="rerun with --restart")
        return [self.path(i) for i in range(n_chunks)]

    def remove(self) -> None:
        """Delete the folder (the lock is released first)."""
        self.release()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------------------
    def _read_json(self, name: str) -> Any:
        path = self.dir / name
        try:
            return json.loads(path.read_text()) if path.is_file() and not path.is_symlink() else None
        except (OSError, ValueError):
            return None

    def _write_ledger(self) -> None:
        chunks = {str(i): self.ledger[i] for i in sorted(self.ledger)}
        state: dict[str, Any] = {"key": self.key, "chunks": chunks}
        if self.window:
            state["window"] = self.window
        write_text_atomic(self.dir / _LEDGER, json.dumps(state, default=str))

    def _clear(self) -> None:
        self.ledger.clear()
        self.window = {}
        for child in self.dir.iterdir():
            if child.name == _OWNER:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()


def remove_checkpoint(output: Path) -> None:
    """Delete the kept checkpoint ``<output>.partial/`` of a finished output (``score_file(keep_checkpoint=True)``)."""
    folder = output.with_name(output.name + ".partial")
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)
