"""paper.md §10's help texts and §6–§8's new options (``docs/guide/paper.md``): each is in ``--help`` and on its
command's docs page; every repeatable option says "repeat", and "comma-separate" where it takes a comma list."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import typer

from tutormetrics.cli import app
from tutormetrics.commands.registration import args_class
from tutormetrics.flags import flag_fields

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands"
MODULES = {"agree": "agree", "compare": "compare", "summarize": "summarize", "aggregate": "studies", "variability": "studies",
           "theta": "theta", "validate": "validity", "heatmap": "validity", "predict": "predict", "ppi": "ppi", "run": "run"}  # fmt: skip
NEW = {
    "summarize": ["--caption", "--where"], "validate": ["--caption", "--where"], "agree": ["--caption", "--where"],
    "compare": ["--caption", "--where", "--dpi"], "variability": ["--caption", "--where"], "aggregate": ["--where"],
    "predict": ["--caption"], "ppi": ["--caption"], "theta": ["--effects-plot", "--dpi"],
    "heatmap": ["--metrics-cols", "--families", "--targets"],
}  # fmt: skip


def _params(name: str) -> dict[str, object]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {o: p for p in command.params if p.param_type_name == "option" for o in p.opts}


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_options_are_in_help_and_docs(name: str) -> None:
    params, page = _params(name), (DOCS / f"{name}.md").read_text(encoding="utf-8")
    for option in NEW[name]:
        assert option in params, f"{name} {option} is not an option"
        assert params[option].help, f"{name} {option} has no help"  # type: ignore[attr-defined]
        assert f"`{option}" in page, f"{name} {option} is not on docs/commands/{name}.md"


def test_smaller_help_fixes() -> None:
    assert "holm, bonferroni, bh, by or none" in _params("compare")["--adjust"].help  # type: ignore[attr-defined]
    seed = _params("theta")["--seed"].help  # type: ignore[attr-defined]
    assert seed.startswith("Seed of the NUTS sampler and of the MML draws (--effects, --effects-plot, baseline probabilities)")
    draws = _params("theta")["--effect-draws"].help  # type: ignore[attr-defined]
    assert all(w in draws for w in ("--effects", "--effects-plot", "baseline probabilities"))


def _splits(parse: object) -> bool:
    try:
        out = parse(["a,b"])  # type: ignore[operator]
    except Exception:  # noqa: BLE001 - a parser for other values (numbers, pairs) is not a comma list
        return False
    return isinstance(out, (list, tuple)) and len(out) == 2


@pytest.mark.parametrize("name", sorted(MODULES))
def test_repeatable_options_say_so(name: str) -> None:
    module = importlib.import_module(f"tutormetrics.commands.{MODULES[name]}")
    params = _params(name)
    for option in flag_fields(args_class(getattr(module, name))):
        first = option.flag.flags[0].split("/")[0] if option.flag.flags else None
        param = params.get(first) if first else None
        if param is None:
            continue
        text = (param.help or "").lower()  # type: ignore[attr-defined]
        if param.multiple:  # type: ignore[attr-defined]
            assert "repeat" in text, f"{name} {first}: a repeatable option whose help does not say so"
        if option.flag.parse is not None and _splits(option.flag.parse):
            if param.multiple:  # type: ignore[attr-defined]
                assert "comma-separate" in text and "repeat" in text, f"{name} {first}: say 'repeat or comma-separate'"
            else:
                assert "comma" in text, f"{name} {first}: a single value that is a comma list should say so"
