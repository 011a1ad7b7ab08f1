"""The documentation generators (scripts/docs/) cover every command, option and metric family.

The site itself is built by `.ci/run` (`mkdocs build --strict`); these tests check what the generated pages hold,
against the click tree and the registry read here independently of the generator's own walk.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import typer
import typer.main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "scripts" / "docs"


def _load(name: str):
    """Import scripts/docs/<name>.py (not a package) by path, once."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", "") == str(DOCS / f"{name}.py"):
        return sys.modules[name]
    sys.path.insert(0, str(DOCS))
    try:
        spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(DOCS))


cli_reference = _load("cli_reference")


def _sections(markdown: str) -> dict[str, str]:
    """``## `name` `` heading → the text up to the next second-level heading."""
    parts = re.split(r"^## ", markdown, flags=re.M)
    out = {}
    for part in parts[1:]:
        head, _, body = part.partition("\n")
        out[head.strip().strip("`")] = body
    return out


def _click_tree():
    import tutormetrics.cli

    return typer.main.get_command(tutormetrics.cli.app)


def test_cli_reference_covers_every_command_and_option():
    root = _click_tree()
    sections = _sections(cli_reference.render(root))
    expected = {"score", "metrics", "validate", "heatmap", "theta", "agree", "summarize", "compare", "run", "report"}
    assert expected <= set(root.commands), "a command the docs promise is gone from the CLI"
    for name, command in root.commands.items():
        if command.hidden:
            continue
        assert name in sections, f"command {name} missing from the CLI reference"
        body = sections[name]
        for param in command.params:
            if param.hidden:
                continue
            if param.param_type_name == "argument":
                assert f"`{param.name.upper()}`" in body, f"{name}: argument {param.name} missing"
                continue
            for flag in [*param.opts, *param.secondary_opts]:
                assert f"`{flag}`" in body, f"{name}: option {flag} missing from the CLI reference"
            if param.help:
                first_words = " ".join(param.help.split()[:3])
                assert cli_reference._cell(first_words) in body, f"{name} {param.opts[0]}: help text missing"
    for option in ("--version", "--debug"):
        assert f"`{option}`" in sections["Global options"]


def test_every_command_has_a_page_in_the_site():
    """docs/commands/<name>.md exists and is in mkdocs.yml's nav for every visible command."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name, command in _click_tree().commands.items():
        if command.hidden:
            continue
        page = ROOT / "docs" / "commands" / f"{name}.md"
        assert page.exists(), f"command {name} has no page docs/commands/{name}.md"
        assert f"commands/{name}.md" in nav, f"docs/commands/{name}.md is not in mkdocs.yml's nav"
        assert page.read_text(encoding="utf-8").startswith(f"# `{name}`")


def test_cli_reference_follows_a_new_option_and_command():
    """The generator walks whatever tree it is given: a new command and option show up with type and default."""
    app = typer.Typer()

    @app.command()
    def alpha(path: Path = typer.Argument(..., help="Input."),  # noqa: B008 - the typer idiom the generator must read
              width: float = typer.Option(3.5, "--width", "-w", help="Figure width."),
              guard: bool = typer.Option(True, "--guard/--no-guard", help="Guard | cells."),
              old: int = typer.Option(1, "--old", hidden=True, help="Deprecated.")) -> None:
        """Do alpha."""

    @app.command()
    def beta(tag: list[str] = typer.Option(None, "--tag", help="A tag; repeat.")) -> None:  # noqa: B008 - as above
        """Do beta."""

    sections = _sections(cli_reference.render(typer.main.get_command(app), prog="demo"))
    assert set(sections) >= {"alpha", "beta"}
    rows = {line.split(" | ")[0].strip("| "): line for line in sections["alpha"].splitlines() if line.startswith("| `")}
    assert "`PATH`" in rows and "required" in rows["`PATH`"]
    assert rows["`--width`, `-w`"].split(" | ")[1:3] == ["float", "`3.5`"]
    assert "`--guard`, `--no-guard`" in rows and "Guard \\| cells." in rows["`--guard`, `--no-guard`"]
    assert not any("--old" in key for key in rows), "hidden options stay out"
    assert "repeatable" in sections["beta"]


def test_metric_registry_page_lists_every_family_and_column():
    gen_pages = _load("gen_pages")
    from tutormetrics.metrics import REGISTRY

    sections = _sections(gen_pages.render_metrics())
    for name in REGISTRY.names():
        metric = REGISTRY.get_class(name)()
        assert name in sections, f"family {name} missing from the registry page"
        n_layers = 6 if "encoder" in type(metric).requires else None
        for column in metric.columns(n_layers):
            assert f"| `{column}` |" in sections[name]
    assert "| `rep_1` | ↓ lower |" in sections["lexical_diversity"]


def test_api_pages_name_only_objects_that_import():
    gen_pages = _load("gen_pages")
    for module_name in gen_pages.API_MODULES:
        module = importlib.import_module(module_name)
        targets = dict(gen_pages.api_targets(module_name))
        assert set(targets) == set(module.__all__)
        for name, path in targets.items():
            if path:
                mod, _, qual = path.rpartition(".")
                assert getattr(importlib.import_module(mod), qual) is getattr(module, name)


def test_doctest_blocks_are_fenced_for_markdown():
    pytest.importorskip("griffe")
    fence = _load("griffe_doctest").fence_doctests
    doc = 'Score.\n\nExample:\n    >>> frame["resp_words"][0]\n    2.0\n\n    Then more text.\n'
    out = fence(doc)
    assert out == ('Score.\n\nExample:\n    ```pycon\n    >>> frame["resp_words"][0]\n    2.0\n    ```\n\n'
                   "    Then more text.\n")
    assert fence("no examples here") == "no examples here"
