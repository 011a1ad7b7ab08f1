"""Commands are imported when they run (``docs/development.md#command-loading``): ``tutormetrics --help`` and
``tutormetrics metrics`` import neither polars nor numpy nor another command's module, and the listing shows each
command's real help, read from the source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from tutormetrics import cli
from tutormetrics.commands.lazy import LazyCommand, lazy_group, module_app, summary_help

SRC = str(Path(__file__).resolve().parents[2] / "src")
COMMAND_MODULES = {f"tutormetrics.commands.{entry.module}" for entry in cli.COMMANDS.values()}


#: ``python -m tutormetrics ARGS`` in a fresh process, then the names of every module it imported (``sys.modules``: a
#: command module comes through importlib.import_module, which ``-X importtime`` does not log).
_RUN = (
    "import json, runpy, sys\n"
    "sys.argv = ['tutormetrics', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('tutormetrics', run_name='__main__', alter_sys=True)\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "print('\\nMODULES ' + json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n"
)


def _imported(*args: str) -> set[str]:
    """The modules a fresh ``python -m tutormetrics ARGS`` imports (it must exit 0)."""
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "100"}
    out = subprocess.run([sys.executable, "-c", _RUN, *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    code, modules = json.loads(out.stderr.rpartition("MODULES ")[2])
    assert code == 0, out.stderr[-2000:]
    assert "tutormetrics.cli" in modules and out.stdout.strip()
    return set(modules)


@pytest.mark.parametrize(("args", "runs"), [(("--help",), set()), (("metrics",), {"tutormetrics.commands.metrics"})])
def test_help_and_metrics_import_no_polars_numpy_or_other_commands(args: tuple[str, ...], runs: set[str]) -> None:
    imported = _imported(*args)
    heavy = {m for m in imported if m.split(".")[0] in ("polars", "numpy", "scipy", "torch", "onnxruntime")}
    assert not heavy, f"tutormetrics {' '.join(args)} imports {sorted(heavy)[:5]}"
    assert imported & COMMAND_MODULES == runs


def test_a_command_imports_only_its_own_module() -> None:
    assert _imported("report", "--help") & COMMAND_MODULES == {"tutormetrics.commands.report"}


def test_the_listing_shows_every_commands_real_help_without_importing_it() -> None:
    """Each command's help as ``--help`` lists it (read from the source) is the help the command itself has."""
    group = typer.main.get_command(cli.app)
    assert list(group.commands) == list(cli.COMMANDS)  # the table's order, nothing built yet
    assert all(group.commands.built(name) is None for name in cli.COMMANDS)  # type: ignore[attr-defined]
    for name, entry in cli.COMMANDS.items():
        text = summary_help(entry.module, entry.help_from)
        assert text is not None, f"{name}: its help cannot be read from tutormetrics/commands/{entry.module}.py"
        assert text == group.commands[name].help, f"{name}: the listed help is not the command's help"


def test_every_registered_command_is_in_the_table() -> None:
    """What the command modules register is exactly the table (a new command needs its row in cli.COMMANDS)."""
    registered = set()
    for module in {entry.module for entry in cli.COMMANDS.values()}:
        registered |= set(typer.main.get_group(module_app(module)).commands)
    assert registered == set(cli.COMMANDS)
    assert len(dict(typer.main.get_command(cli.app).commands)) == len(cli.COMMANDS)  # walking builds every command


def test_root_help_lists_every_command_and_builds_none(capsys: pytest.CaptureFixture[str]) -> None:
    group = typer.main.get_command(cli.app)
    with pytest.raises(SystemExit) as exit_info:
        group.main(["--help"], prog_name="tutormetrics", standalone_mode=True)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(f" {name} " in out for name in cli.COMMANDS)
    assert "Encoder utilities: export a local model for the onnx backend." in out
    assert all(group.commands.built(name) is None for name in cli.COMMANDS)  # type: ignore[attr-defined]


def test_a_table_row_its_module_does_not_register_is_a_plain_error() -> None:
    group = lazy_group({"nosuch": LazyCommand("metrics", "metrics")})(name="demo")
    assert "nosuch" in group.commands and group.commands.built("nosuch") is None  # membership imports nothing
    with pytest.raises(LookupError, match="adds no command 'nosuch'"):
        group.commands["nosuch"]
    assert summary_help("metrics", "no_such_function") is None  # not readable: the command would be imported
