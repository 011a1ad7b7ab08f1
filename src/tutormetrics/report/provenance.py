"""Which files of a ``run`` folder the report may show: those ``run.json`` lists, with the SHA-256 ``run`` recorded
for each (``file_sha256``) and for its inputs (``input_sha256``).

A listed file whose bytes changed since, a listed file that is gone, and a file that ``run`` writes (``run_files``
in ``run.json``: its overwrite guard) but this run did not (left by an earlier run: a ``facets.csv`` when θ is now
given) are *stale*: the report leaves them out and says so in a banner and on stderr. Other tables in the folder
(a ``summarize`` or ``compare`` table written there) are shown, with a note that ``run.json`` does not vouch for
them. The scored input and the ratings are shown only while their hash still matches. A folder without
``run.json`` hashes (``validate``/``theta`` outputs, or an older tutormetrics) is read as it is, every table by its
columns.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "correlations.csv").write_text("metric,target,rho\\nx,y,0.5\\n")
    >>> run = {"file_sha256": record_hashes(folder, ["correlations.csv"]), "run_files": ["correlations.csv", "theta.csv"]}
    >>> _ = (folder / "theta.csv").write_text("exchange_id,theta,theta_sd\\na,0,1\\n")
    >>> check = check_folder(folder, run)
    >>> sorted(check.allowed), check.stale
    (['correlations.csv'], ['theta.csv was written by an earlier run (run.json does not list it): not shown'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tutormetrics.io.hashing import file_sha256

#: Files of a folder the report reads as tables.
TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl")


def record_hashes(outdir: Path, names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` of the files ``names`` in ``outdir`` that exist (``run`` stores it in ``run.json``)."""
    return {name: file_sha256(outdir / name) for name in dict.fromkeys(names) if (outdir / name).is_file()}


def input_hashes(**paths: Path | str | Iterable[Path | str] | None) -> dict[str, Any]:
    """The SHA-256 of each input (a list for several; ``None`` values left out): ``input_hashes(ratings="r.csv")``."""
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
    ``stale`` lines for the banner, the recorded input hashes and the ``unlisted`` tables shown with a note."""

    allowed: set[str] | None
    stale: list[str] = field(default_factory=list)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    unlisted: list[str] = field(default_factory=list)

    def may_read(self, path: Path) -> bool:
        return self.allowed is None or path.name in self.allowed

    def input_matches(self, key: str, path: Path) -> bool | None:
        """Whether ``path`` still has the recorded hash of input ``key`` (``None``: nothing recorded, or no file)."""
        recorded = self.inputs.get(key)
        if not isinstance(recorded, str) or not path.is_file():
            return None
        try:
            return file_sha256(path) == recorded
        except OSError:
            return False


def check_folder(outdir: Path, run: Mapping[str, Any]) -> FolderCheck:
    """Compare the folder with ``run.json``'s ``file_sha256`` and ``run_files`` (see the module docstring)."""
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
    own = set(run.get("run_files") or ())
    unlisted: list[str] = []
    for path in sorted(outdir.iterdir()):
        if not path.is_file() or path.name.startswith(".") or path.suffix.lower() not in TABLE_SUFFIXES or path.name in hashes:
            continue
        if path.name in own:
            stale.append(f"{path.name} was written by an earlier run (run.json does not list it): not shown")
        else:
            allowed.add(path.name)
            unlisted.append(path.name)
    return FolderCheck(allowed, stale, inputs, unlisted)
