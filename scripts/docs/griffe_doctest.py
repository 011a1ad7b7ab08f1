"""Griffe extension: fence ``>>>`` doctest blocks of docstrings as Python code for the API pages.

The package's docstrings are written for ``pytest --doctest-modules`` (``Example:`` then ``>>>`` lines), which
Markdown would read as text (``x["col"][0]`` looks like a reference link). Every run of non-blank lines that
starts with ``>>>`` becomes a fenced ``pycon`` block at the same indentation; nothing else changes.

tests/integration/test_docs.py checks it on a docstring of the package.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Wrap each doctest block (a ``>>>`` line and the non-blank lines after it) in a ``pycon`` fence."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctests of every object's docstring as it is loaded."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
