"""Commands imported when they run: the root group knows every command from a table and imports none of them up front.

``tutormetrics --help`` lists each command with the help read from its module's *source* (:func:`summary_help`, no
import, so no polars or numpy); ``tutormetrics NAME …`` (and ``NAME --help``) imports only NAME's module, which
registers its commands as before (``register(app)``). The group's ``commands`` is a mapping that builds a command on
first lookup, so code that walks ``typer.main.get_command(app).commands`` (the docs' CLI reference, the tests) sees
every command, each built when it is reached (``docs/development.md#command-loading``).

Example:
    >>> group = lazy_group({"metrics": LazyCommand("metrics", "metrics")})(name="demo")
    >>> list(group.commands), group.commands.built("metrics")
    (['metrics'], None)
    >>> group.summary("metrics").help
    'List every registered metric family with its description, output columns and direction.'
    >>> [p.opts for p in group.commands["metrics"].params]  # built now: tutormetrics.commands.metrics imported
    [['--json']]
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyCommand", "LazyCommands", "LazyGroup", "lazy_group", "module_app", "summary_help"]

PACKAGE = "tutormetrics.commands"


@dataclass(frozen=True)
class LazyCommand:
    """Where one command lives: ``module`` (under ``tutormetrics.commands``) adds it in its ``register(app)``;
    ``help_from`` names the function whose docstring is the command's help, or the ``typer.Typer(help=...)`` of a
    command group."""

    module: str
    help_from: str


@functools.cache
def module_app(module: str) -> typer.Typer:
    """A Typer holding every command that ``tutormetrics.commands.MODULE.register`` adds (imported here, once)."""
    app = typer.Typer()
    importlib.import_module(f"{PACKAGE}.{module}").register(app)
    return app


@functools.cache
def summary_help(module: str, name: str) -> str | None:
    """The help of ``name`` in ``tutormetrics.commands.MODULE``, read from the module's source without importing it:
    the docstring of ``def name`` or the ``help=`` string of ``name = typer.Typer(help=...)``, cleaned as Typer
    cleans it. ``None`` when the source is not there or the help is not a literal (the command is then imported).

    Args:
        module: The module under ``tutormetrics.commands``.
        name: The function (or Typer) in it.
    """
    import ast
    import importlib.util
    import inspect
    from pathlib import Path

    spec = importlib.util.find_spec(f"{PACKAGE}.{module}")
    if spec is None or not str(spec.origin or "").endswith(".py"):
        return None
    tree = ast.parse(Path(str(spec.origin)).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_docstring(node, clean=True) or ""
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(node.value, ast.Call):
            for keyword in node.value.keywords:
                if keyword.arg == "help" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                    return inspect.cleandoc(keyword.value.value)
    return None


class LazyCommands(MutableMapping[str, Any]):
    """``name → click command`` of a :class:`LazyGroup`: the table's names in its order, each command built (its
    module imported) on first lookup; membership, iteration and ``len`` import nothing."""

    def __init__(self, table: Mapping[str, LazyCommand], built: Mapping[str, Any], markup_mode: Any) -> None:
        self._table = dict(table)
        self._built = dict(built)  # commands given directly (add_command) or built already
        self._markup_mode = markup_mode

    def built(self, name: str) -> Any | None:
        """The command if it is built already (nothing is imported)."""
        return self._built.get(name)

    def _build(self, module: str) -> None:
        sub = module_app(module)
        sub.rich_markup_mode = self._markup_mode  # the root's, as an eager registration would have had
        for name, command in typer.main.get_group(sub).commands.items():
            self._built.setdefault(name, command)
        missing = [n for n, entry in self._table.items() if entry.module == module and n not in self._built]
        if missing:
            raise LookupError(f"tutormetrics.commands.{module}.register adds no command {missing[0]!r}")

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._table:
                raise KeyError(name)
            self._build(self._table[name].module)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._table or name in self._built

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (n for n in self._built if n not in self._table)

    def __len__(self) -> int:
        return len(self._table.keys() | self._built.keys())

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._table.pop(name, None)
        self._built.pop(name, None)


class LazyGroup(TyperGroup):
    """A Typer group whose commands are :attr:`table`'s, built on first use (:class:`LazyCommands`); its own
    ``--help`` lists them from :func:`summary_help`, importing none."""

    table: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, *, commands: Mapping[str, Any] | Sequence[Any] | None = None, **attrs: Any) -> None:
        given = dict(commands) if isinstance(commands, Mapping) else {c.name: c for c in commands or ()}
        super().__init__(**attrs)
        self.commands = LazyCommands(self.table, given, self.rich_markup_mode)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any | None:
        commands: LazyCommands = self.commands  # type: ignore[assignment]
        if self._listing and commands.built(cmd_name) is None:  # this group's --help: a stand-in, nothing imported
            stand_in = self.summary(cmd_name)
            if stand_in is not None:
                return stand_in
        return commands.get(cmd_name)

    def summary(self, name: str) -> TyperCommand | None:
        """A stand-in for ``name`` that carries only its help (for the listing), or ``None`` when the help cannot be
        read without importing the command."""
        entry = self.table.get(name)
        text = summary_help(entry.module, entry.help_from) if entry is not None else None
        return None if text is None else TyperCommand(name, help=text, rich_markup_mode=self.rich_markup_mode)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def lazy_group(table: Mapping[str, LazyCommand]) -> type[LazyGroup]:
    """The :class:`LazyGroup` class of ``table`` (``typer.Typer(cls=lazy_group(COMMANDS))``; Typer builds the group)."""
    return type("LazyTutormetricsGroup", (LazyGroup,), {"table": dict(table), "__module__": __name__})
