"""Output paths checked before any work (``docs/design/io.md#outputs-checked-first``): an output never overwrites an
input or another output, is no folder, and its folder can be written."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tutormetrics.errors import InputSchemaError

__all__ = ["check_outputs"]


def check_outputs(inputs: Sequence[str | os.PathLike[str] | None], outputs: Sequence[str | os.PathLike[str] | None]) -> None:
    """Refuse, before any work, outputs that would overwrite an input or each other, or cannot be written.

    Paths are compared after resolving symlinks (and by inode for files that exist), so ``./e.csv``,
    ``e.csv`` and a link to it are the same file. Each output must not be a folder, and its folder (or
    the nearest existing parent) must be writable.

    Example:
        >>> check_outputs(["in.csv"], ["out.csv", "out_rho.csv"])
        >>> check_outputs(["in.csv"], ["./in.csv"])
        Traceback (most recent call last):
        ...
        tutormetrics.errors.InputSchemaError: output in.csv is the input in.csv: tutormetrics never overwrites an input
          hint: choose another output name
    """
    ins = [Path(p) for p in inputs if p is not None]
    outs = [Path(p) for p in outputs if p is not None]
    seen: dict[Path | tuple[int, int], Path] = {}
    for out in outs:
        key = _identity(out)
        for src in ins:
            if key == _identity(src):
                raise InputSchemaError(
                    f"output {out} is the input {src}: tutormetrics never overwrites an input",
                    hint="choose another output name",
                )
        if key in seen:
            raise InputSchemaError(f"two outputs are the same file: {seen[key]} and {out}", hint="give each output its own name")
        seen[key] = out
        if out.is_dir() and not out.is_symlink():
            raise InputSchemaError(f"output {out} is a folder", hint=f"name a file inside it, e.g. {out}/metrics.csv")
        check_writable_folder(out)


def _identity(path: Path) -> Path | tuple[int, int]:
    """A key equal for two names of one file: (device, inode) when it exists, else the resolved path."""
    try:
        st = path.stat()
        return (st.st_dev, st.st_ino)
    except OSError:
        return path.resolve()


def check_writable_folder(path: str | os.PathLike[str]) -> None:
    """The folder of ``path`` (or its nearest existing parent) is a folder this process can write into.

    >>> import tempfile
    >>> check_writable_folder(Path(tempfile.mkdtemp()) / "not" / "yet" / "there.csv")  # the nearest existing parent counts
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    while not folder.exists():
        if folder.parent == folder:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise InputSchemaError(f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputSchemaError(f"cannot write {path}: folder {folder} is not writable", hint="choose a folder you can write to")
