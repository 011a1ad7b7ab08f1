"""Every public function or method of the package that takes more than two parameters documents them in a
Google-style ``Args:`` section (the API pages render it; ``docs/development.md#linting``: ruff's D417 then checks
that the section names every parameter)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tutormetrics"


def _undocumented() -> list[str]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                continue
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
            if len(params) > 2 and "Args:" not in (ast.get_docstring(node) or ""):
                out.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {node.name}")
    return out


def test_public_functions_with_more_than_two_parameters_have_an_args_section() -> None:
    missing = _undocumented()
    assert not missing, "no Args: section:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_section(tmp_path: Path) -> None:
    tree = ast.parse("def f(a, b, c):\n    '''Sum.'''\n")
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and "Args:" not in (ast.get_docstring(node) or "")
