"""Generate the CLI reference (Markdown) by walking a click command tree.

Only click's public objects are used (``Command``/``Group``: ``name``, ``help``, ``params``, ``commands``,
``hidden``; ``Parameter``: ``opts``, ``secondary_opts``, ``default``, ``required``, ``multiple``, ``hidden``,
``get_help_record``), so the page follows whatever declares the options (Typer today). Typer ≥ 0.29 ships its
own copy of click, whose parameters have no ``type`` attribute; the type then comes from ``display_type``.

    python scripts/docs/cli_reference.py > cli.md      # the page mkdocs builds (docs/gen_pages.py)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParamDoc:
    """One parameter of one command, as the reference shows it."""

    name: str
    kind: str  # "argument" or "option"
    flags: tuple[str, ...]  # every spelling: opts then secondary opts (``--x / --no-x``)
    type: str
    default: str
    required: bool
    multiple: bool
    help: str


def iter_commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(path, command)`` for every visible command below ``command`` (depth first, declared order)."""
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "hidden", False):
            continue
        yield (*path, name), sub
        yield from iter_commands(sub, (*path, name))


def _context(command: Any, name: str) -> Any:
    ctx_class = getattr(command, "context_class", None)
    if ctx_class is None:
        import click

        ctx_class = click.Context
    return ctx_class(command, info_name=name)


def _type_name(param: Any, ctx: Any) -> str:
    ptype = getattr(param, "type", None)
    if ptype is not None:  # click
        name = getattr(ptype, "name", "") or type(ptype).__name__
    else:  # typer's vendored click
        name = str(param.display_type(ctx)).strip("<>")
    name = name.replace("list[str]", "text").replace("str", "text")
    return "flag" if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", None) else name


def _default(param: Any) -> str:
    default = getattr(param, "default", None)
    if callable(default) or default is None or repr(default).startswith(("Sentinel", "<", "UNSET")):
        return ""
    if isinstance(default, (list, tuple)):
        return ", ".join(map(str, default))
    if isinstance(default, bool) and getattr(param, "secondary_opts", None):
        return (param.opts if default else param.secondary_opts)[0]
    return str(default)


_TAIL = re.compile(r"\s*\[(?:default: [^\]]*|required|x[<>=].*?|\d.*?)\]\s*$")


def _help(param: Any, ctx: Any) -> str:
    text = getattr(param, "help", None)
    if text is None:
        record = param.get_help_record(ctx) if getattr(param, "param_type_name", "") == "option" else None
        text = record[1] if record else ""
        while _TAIL.search(text):
            text = _TAIL.sub("", text)
    return " ".join(str(text).split())


def param_docs(command: Any, name: str = "") -> list[ParamDoc]:
    """Every visible parameter of ``command`` (hidden ones, e.g. deprecated spellings, are left out)."""
    ctx = _context(command, name or command.name or "")
    docs = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        kind = getattr(param, "param_type_name", "option")
        flags = tuple(param.opts) + tuple(getattr(param, "secondary_opts", ()) or ())
        if kind == "argument":
            flags = (param.name.upper(),)
        docs.append(ParamDoc(
            name=param.name, kind=kind, flags=flags, type=_type_name(param, ctx), default=_default(param),
            required=bool(param.required), multiple=bool(getattr(param, "multiple", False)), help=_help(param, ctx),
        ))
    return docs


def _escape(text: str) -> str:
    return (text.replace("\\", "\\\\").replace("<", "&lt;").replace(">", "&gt;")
            .replace("*", "\\*").replace("_", "\\_"))


def _cell(text: str) -> str:
    """Markdown-safe table cell: escape outside `code spans`, keep them verbatim; ``|`` escaped everywhere."""
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(p if p.startswith("`") else _escape(p) for p in parts).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _flags(doc: ParamDoc) -> str:
    if doc.kind == "argument":
        return f"`{doc.flags[0]}`"
    long_first = sorted(doc.flags, key=lambda f: (not f.startswith("--"), f.startswith("--no-")))
    return ", ".join(f"`{f}`" for f in long_first)


def _command_help(command: Any) -> str:
    text = (command.help or "").split("\f")[0]
    return text.strip()


def render_command(path: tuple[str, ...], command: Any, prog: str = "tutormetrics") -> str:
    """One command's section: its help, usage line and a table of every parameter."""
    full = " ".join((prog, *path))
    docs = param_docs(command, path[-1] if path else prog)
    args = " ".join(d.flags[0] if d.required else f"[{d.flags[0]}]" for d in docs if d.kind == "argument")
    lines = [f"## `{' '.join(path)}`", "", "```text", f"{full} [OPTIONS] {args}".rstrip(), "```", ""]
    help_text = _command_help(command)
    if help_text:
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", help_text)]
        lines += ["\n\n".join(_cell(p) if not p.startswith(prog) else f"`{p}`" for p in paragraphs), ""]
    lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
    for d in docs:
        notes = []
        if d.required:
            notes.append("required")
        if d.multiple:
            notes.append("repeatable")
        extra = f" *({', '.join(notes)})*" if notes else ""
        lines.append(f"| {_flags(d)} | {_cell(d.type)} | {_code(d.default)} | {_cell(d.help)}{extra} |")
    lines.append("")
    return "\n".join(lines)


def render(root: Any, prog: str = "tutormetrics") -> str:
    """The whole reference: the root's own options, then every command in declared order."""
    parts = ["# CLI reference", "",
             "Generated from the command tree at build time (`scripts/docs/cli_reference.py`): every command, every",
             "option with its flags, type, default and help. Hidden (deprecated) spellings are left out.", "",
             "Every command has `--help`; exit codes are **0** success, **1** completed but `--strict` saw warnings,",
             "**2** bad input or configuration, **130** interrupted.", "",
             "| command | summary |", "|---|---|"]
    commands = list(iter_commands(root))
    for path, command in commands:
        anchor = "-".join(path)
        summary = _command_help(command).split("\n\n")[0]
        parts.append(f"| [`{' '.join(path)}`](#{anchor}) | {_cell(' '.join(summary.split()))} |")
    parts.append("")
    root_docs = [d for d in param_docs(root, prog) if d.kind == "option"]
    if root_docs:
        parts += ["## Global options", "", "| option | description |", "|---|---|"]
        parts += [f"| {_flags(d)} | {_cell(d.help)} |" for d in root_docs]
        parts.append("")
    for path, command in commands:
        parts.append(render_command(path, command, prog))
    return "\n".join(parts)


def tutormetrics_command() -> Any:
    """The click command tree of ``tutormetrics.cli.app``."""
    import typer.main

    import tutormetrics.cli

    return typer.main.get_command(tutormetrics.cli.app)


if __name__ == "__main__":
    print(render(tutormetrics_command()))
