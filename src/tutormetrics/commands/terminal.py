"""What a command says on the terminal: messages on stderr, the ``--strict`` gate, notes on old option spellings.

Results go to files or stdout; messages for people go to stderr (:func:`log`). Options are declared on the
dataclasses they fill (``docs/guide/options.md#options``), not here.

Example:
    >>> renamed(2000, None, "--n-boot", "--n-resamples")
    2000
"""

from __future__ import annotations

import sys

import typer

__all__ = ["log", "renamed", "strict_gate"]


def log(message: str) -> None:
    """Messages for people go to stderr; results go to stdout or files."""
    print(message, file=sys.stderr)


def renamed(value: int, old: int | None, old_flag: str, new_flag: str) -> int:
    """The value of an option whose old spelling (hidden, for one release; docs/development.md#rooms lists the renames) is still accepted; the
    old one wins when given (with a note).

    Args:
        value: The value given under the new spelling (or its default).
        old: The value given under the old spelling; ``None``: not given.
        old_flag: The old option name, for the note.
        new_flag: The new option name, for the note.
    """
    if old is None:
        return value
    log(f"note: {old_flag} is now {new_flag}; the old spelling goes away in the next release")
    return old


def strict_gate(strict: bool, warnings: list[str]) -> None:
    """Exit 1 after a completed run that had warnings, when the user asked for ``--strict``."""
    if strict and warnings:
        log(f"strict: {len(warnings)} warning(s); exiting with code 1 (results were written)")
        raise typer.Exit(1)
