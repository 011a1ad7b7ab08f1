"""File hashes: the SHA-256 that keys checkpoints, verifies chunks and guard records, and vouches for a study's files
(``docs/design/io.md#hashes``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["file_sha256"]


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x"
    >>> _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()
