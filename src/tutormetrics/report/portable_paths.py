"""Paths as a report that is sent to someone shows them (``docs/commands/report.md#paths``).

A study folder is meant to be sent, so the page never holds a path of the machine it was made on: a file inside the
study folder is shown relative to it (``inputs/exchanges.csv``), any other file by its name alone
(``exchanges.csv``) — never a home folder, a temporary folder or a drive. :func:`portable` applies that to the
page's metadata (``run.json``, the manifest, notes, banners, tables): a value that is a whole path, and every
absolute path inside a sentence. The texts of the study (prompts, replies, turns, ids, kept columns) are shown as
they are.

Example:
    >>> shown_path("/home/ana/study/inputs/ex.csv", Path("/home/ana/study")), shown_path("/data/ex.csv", Path("/s"))
    ('inputs/ex.csv', 'ex.csv')
    >>> scrub_text("prompts and responses not shown: /home/ana/ex.csv not found", Path("/s"))
    'prompts and responses not shown: ex.csv not found'
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

#: The page's parts holding tables (``{"table": ...}`` or sections with ``"tables"``).
_TABLE_PARTS = ("agreement", "judge", "facets", "summary", "comparisons", "predictive", "correlations", "sections")
#: An absolute path inside a sentence: in quotes (spaces allowed), or POSIX with at least two parts (``/a/b``), ``~/…``,
#: a drive (``C:\\…``) or a UNC share, starting the text or after a space, quote, bracket, ``=`` or ``:``.
_IN_TEXT = re.compile(
    r"(?<=')((?:~|/[^'\n/]+)/[^'\n]*)(?=')|(?<=\")((?:~|/[^\"\n/]+)/[^\"\n]*)(?=\")|"  # quoted: spaces inside
    r"(?:(?<=^)|(?<=[\s'\"(\[=:,]))"
    r"((?:~|/[^\s'\"()\[\],;:/]+)(?:/[^\s'\"()\[\],;/]*)+|[A-Za-z]:[\\/][^\s'\"()\[\],;]*|\\\\[^\s'\"()\[\],;]+)"
)
_WHOLE = re.compile(r"^(?:/[^/\s][^/\n]*/[^\n]*|~/[^\n]*|[A-Za-z]:[\\/][^\n]*|\\\\[^\n]+)$")


def _is_windows(text: str) -> bool:
    return bool(re.match(r"^(?:[A-Za-z]:[\\/]|\\\\)", text))


def shown_path(value: str | Path, folder: Path) -> str:
    """``value`` relative to ``folder`` when it lies inside it, else its file name (see the module docstring).

    A relative ``value`` is taken from the current folder, as the command that recorded it took it.

    >>> shown_path("C:\\\\Users\\\\ana\\\\ex.csv", Path("/s")), shown_path("~/data/r.csv", Path("/s"))
    ('ex.csv', 'r.csv')
    """
    text = str(value)
    if _is_windows(text):
        return PureWindowsPath(text).name or text
    if text.startswith("~"):
        return PurePosixPath(text).name
    path = Path(text)
    try:
        inside = path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return path.name or text
    return inside.as_posix() if inside.parts else "."


def is_whole_path(text: str) -> bool:
    """Whether ``text`` is one absolute path (``/a/b``, ``~/a``, ``C:\\a``, ``\\\\host\\a``), spaces inside allowed.

    >>> is_whole_path("/home/ana/My study/x.csv"), is_whole_path("/x"), is_whole_path("see /a/b"), is_whole_path("/a/b, /c/d")
    (True, False, False, False)
    """
    return bool(_WHOLE.match(text)) and not re.search(r"\s/|,\s", text)


def scrub_text(text: str, folder: Path) -> str:
    """``text`` with every absolute path in it shown as :func:`shown_path` shows it."""
    if is_whole_path(text):
        return shown_path(text.rstrip("/\\") or text, folder)
    return _IN_TEXT.sub(lambda m: shown_path(next(g for g in m.groups() if g), folder), text)


def portable(value: Any, folder: Path) -> Any:
    """``value`` (JSON-ready: dicts, lists, text, numbers) with :func:`scrub_text` applied to every text in it,
    dictionary keys included.

    >>> portable({"exchanges": "/tmp/x/in.csv", "n": 3, "notes": ["see /tmp/x/out/a.csv"]}, Path("/tmp/x/out"))
    {'exchanges': 'in.csv', 'n': 3, 'notes': ['see a.csv']}
    """
    if isinstance(value, str):
        return scrub_text(value, folder)
    if isinstance(value, dict):
        return {portable(k, folder) if isinstance(k, str) else k: portable(v, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v, folder) for v in value]
    return value


def _portable_run(run: dict[str, Any], outdir: Path) -> dict[str, Any]:
    """``run.json`` with its recorded paths as the page shows them (:func:`shown_path`):
    the inputs (relative ones as the run took them, from the current folder) and the files it wrote."""
    shown = dict(run)
    for key in ("exchanges", "ratings"):
        if isinstance(shown.get(key), str) and shown[key]:
            shown[key] = shown_path(shown[key], outdir)
    if isinstance(shown.get("files"), dict):
        shown["files"] = {k: shown_path(v, outdir) if isinstance(v, str) else v for k, v in shown["files"].items()}
    theta = shown.get("theta")
    if isinstance(theta, dict) and isinstance(theta.get("source"), str) and theta["source"] != "mfrm":
        shown["theta"] = theta | {"source": ", ".join(shown_path(p, outdir) for p in theta["source"].split(", "))}
    return portable(shown, outdir)


def portable_page(data: dict[str, Any], outdir: Path) -> dict[str, Any]:
    """The page's data (:func:`tutormetrics.report.collect.collect_study`) without a path of this machine: ``run.json``
    (:func:`_portable_run`), the metadata texts (:func:`portable`), and table cells that are whole paths; the study's
    own texts (prompts, replies, turns, ids, kept columns) are shown as they are."""
    data["run"] = _portable_run(data["run"], outdir)
    for key in ("title", "notes", "stale", "manifest", "columns", "metrics_file"):
        if key in data:
            data[key] = portable(data[key], outdir)
    for key in _TABLE_PARTS:
        for part in data.get(key) or []:
            tables = part.get("tables") or [part]
            for holder in tables:
                holder["table"]["rows"] = [[_portable_cell(v, outdir) for v in row] for row in holder["table"]["rows"]]
    if "theta_only" in data:
        data["theta_only"]["rows"] = [[_portable_cell(v, outdir) for v in row] for row in data["theta_only"]["rows"]]
    return data


def _portable_cell(value: Any, outdir: Path) -> Any:
    """A table cell that is a whole absolute path (:func:`is_whole_path`) shown as :func:`shown_path` shows it."""
    return shown_path(value, outdir) if isinstance(value, str) and is_whole_path(value) else value
