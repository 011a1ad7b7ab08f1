"""Which files of a ``run`` folder the report may show: those ``run.json`` lists, with the SHA-256 ``run`` recorded
for each (``file_sha256``) and for its inputs (``input_sha256``).

A listed file whose bytes changed since, a listed file that is gone, and a table in the folder that ``run.json``
does not list (left by an earlier run, or written by another command) are *stale*: the report leaves them out
and says so in a banner and on stderr. The scored input and the ratings are shown only while their hash still
matches. A folder without ``run.json`` hashes (``validate``/``theta`` outputs, or an older tutormetrics) is read as
it is, every table by its columns.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "correlations.csv").write_text("metric,target,rho\\nx,y,0.5\\n")
    >>> run = {"file_sha256": record_hashes(folder, ["correlations.csv"])}
    >>> _ = (folder / "theta.csv").write_text("exchange_id,theta,theta_sd\\na,0,1\\n")
    >>> check = check_folder(folder, run)
    >>> sorted(check.allowed), check.stale
    (['correlations.csv'], ['theta.csv is not listed in run.json (left by an earlier run or written by another command): not shown'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tutormetrics.io import file_sha256

#: Files of a folder the report reads as tables.
TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl")


def record_hashes(outdir: Path, names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` of the files ``names`` in ``outdir`` that exist (``run`` stores it in ``run.json``)."""
    return {name: file_sha256(outdir / name) for name in dict.fromkeys(names) if (outdir / name).is_file()}


def input_hashes(**paths: Path | str | Iterable[Path | str] | None) -> dict[str, Any]:
    """The SHA-256 of each input (a list for several, ``None`` for none): ``input_hashes(ratings="r.csv")``."""
    out: dict[str, Any] = {}
    for key, value in paths.items():
        if value is None:
            continue
        if isinstance(value, (str, Path)):
            out[key] = file_sha256(Path(value))
        else:
            out[key] = [file_sha256(Path(v)) for v in value]
    return out


@dataclass
class FolderCheck:
    """What the report may read: ``allowed`` file names (``None``: every table, the folder has no hashes), the
    ``stale`` lines for the banner, and the recorded input hashes."""

    allowed: set[str] | None
    stale: list[str] = field(default_factory=list)
    inputs: Mapping[str, Any] = field(default_factory=dict)

    def may_read(self, path: Path) -> bool:
        return self.allowed is None or path.name in self.allowed

    def input_matches(self, key: str, path: Path) -> bool | None:
        """Whether ``path`` still has the recorded hash of input ``key`` (``None``: nothing recorded)."""
        recorded = self.inputs.get(key)
        if not isinstance(recorded, str) or not path.is_file():
            return None
        try:
            return file_sha256(path) == recorded
        except OSError:
            return False


def check_folder(outdir: Path, run: Mapping[str, Any]) -> FolderCheck:
    """Compare the folder with ``run.json``'s ``file_sha256`` (see the module docstring)."""
    hashes = run.get("file_sha256")
    inputs = run.get("input_sha256") if isinstance(run.get("input_sha256"), dict) else {}
    if not isinstance(hashes, dict):
        return FolderCheck(None, inputs=inputs)
    allowed: set[str] = set()
    stale: list[str] = []
    for name, digest in hashes.items():
        path = outdir / str(name)
        if not str(name).endswith((*TABLE_SUFFIXES, ".json")):  # figures: recorded, never read by the report
            allowed.add(str(name))
        elif not path.is_file():
            stale.append(f"{name} is listed in run.json but missing: not shown")
        elif file_sha256(path) != digest:
            stale.append(f"{name} changed since `run` wrote it (its SHA-256 differs from run.json): not shown")
        else:
            allowed.add(str(name))
    for path in sorted(outdir.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.suffix.lower() in TABLE_SUFFIXES and path.name not in hashes:
            stale.append(f"{path.name} is not listed in run.json (left by an earlier run or written by another command): not shown")
    return FolderCheck(allowed, stale, inputs)
