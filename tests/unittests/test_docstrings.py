"""Every public function or method of the package that takes more than two parameters documents them in a
Google-style ``Args:`` section (the API pages render it; ``docs/development.md#linting``: ruff's D417 then checks
that the section names every parameter)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tutormetrics"


def _undocumented(root: Path = SRC) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                continue
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
            if len(params) > 2 and "Args:" not in (ast.get_docstring(node) or ""):
                out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return out


def test_public_functions_with_more_than_two_parameters_have_an_args_section() -> None:
    missing = _undocumented()
    assert not missing, "no Args: section:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_section(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    q = chr(34) * 3
    (pkg / "m.py").write_text(
        f"def bad(a, b, c):\n    {q}Sum.{q}\n\n"
        f"def good(a, b, c):\n    {q}Sum.\n\n    Args:\n        a: x.\n        b: y.\n        c: z.\n    {q}\n\n"
        "def _private(a, b, c):\n    pass\n\n"
        "def two(a, b):\n    pass\n"
    )
    assert _undocumented(pkg) == ["pkg/m.py:1 bad"]
