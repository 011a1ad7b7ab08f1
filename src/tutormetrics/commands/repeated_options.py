"""A single-value option given twice is exit 2 (``docs/guide/paper.md#repeated``), checked once for every command.

Before dispatch, the command line is walked against the click command tree: each option that takes one value
(not a flag, not ``multiple``) may appear once; values are skipped, so a value that looks like an option is not
counted. Typer would silently keep the last value.

Example:
    >>> import click
    >>> cmd = click.Group("t", commands=[click.Command("c", params=[click.Option(["--adjust"]), click.Option(["--x"], multiple=True)])])
    >>> check_repeated_options(cmd, ["c", "--x", "1", "--x", "2", "--adjust", "holm"])
    >>> check_repeated_options(cmd, ["c", "--adjust", "holm", "--adjust=bh"])
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --adjust was given twice (holm, bh) but takes one value
      hint: give --adjust once
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tutormetrics.errors import ConfigError

__all__ = ["check_repeated_options"]

_COUNT = {2: "twice", 3: "three times"}


def _is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), Mapping)  # the root's is lazy (commands/lazy.py), not a dict


def _subcommand(group: Any, args: Sequence[str]) -> tuple[Any, list[str]] | None:
    """The command ``args`` names (through nested groups) and the arguments after its name."""
    for i, token in enumerate(args):
        if token == "--":
            return None
        if token.startswith("-"):
            continue
        found = group.commands.get(token)
        if found is None:
            return None
        rest = list(args[i + 1:])
        return (_subcommand(found, rest) or (found, rest)) if _is_group(found) else (found, rest)
    return None


def _values_by_option(command: Any, args: Sequence[str]) -> dict[str, list[str]]:
    """Each single-value option's values as given, under its longest name (click's or Typer's own copy of it)."""
    options = [p for p in command.params if getattr(p, "param_type_name", "") == "option"]
    by_name = {o: p for p in options for o in (*p.opts, *p.secondary_opts)}
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        param = by_name.get(name)
        i += 1
        if param is None or param.is_flag or param.count:
            continue
        value = inline if eq else (args[i] if i < len(args) else "")
        i += 0 if eq else 1
        if not param.multiple and param.nargs == 1:
            seen.setdefault(max(param.opts, key=len), []).append(value)
    return seen


def check_repeated_options(root: Any, args: Sequence[str]) -> None:
    """Exit 2 (:class:`ConfigError`) when a single-value option of the chosen command is given more than once."""
    if not _is_group(root):
        return
    chosen = _subcommand(root, args)
    if chosen is None:
        return
    for option, values in _values_by_option(*chosen).items():
        if len(values) > 1:
            times = _COUNT.get(len(values), f"{len(values)} times")
            raise ConfigError(f"{option} was given {times} ({', '.join(values)}) but takes one value",
                              hint=f"give {option} once")  # fmt: skip
