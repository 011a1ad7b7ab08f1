"""The package's rooms import only downwards (spec/style.md §2), and no module imports itself back.

Every ``import``/``from … import`` of a ``tutormetrics`` module counts, including those inside
functions; only ``if TYPE_CHECKING:`` blocks are skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tutormetrics"

#: Floor of each room; a module may import its own room or a lower floor.
FLOORS = {
    "errors": 0, "frames": 0, "flags": 0, "na_codes": 0, "text": 0, "io": 0, "examples": 0, "progress": 0, "ids": 0, "plotting": 0, "row_filter": 0, "lazy_exports": 0,
    "datasets": 1,
    "encoders": 1,
    "metrics": 2,
    "engine": 3, "stats": 3,
    "psychometrics": 4,
    "validity": 5, "dialogue": 5,
    "report": 6,
    "runs": 7,
    "commands": 8,
    "cli": 9, "__main__": 9,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """Every tutormetrics module imported by ``path`` (TYPE_CHECKING blocks skipped)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("tutormetrics"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tutormetrics"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The module a dotted import names (``pkg.mod.func`` → ``pkg.mod``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


GRAPH = {m: {r for n in _imports(p) if (r := _resolve(n)) and r != m} for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _room(m)))
def test_rooms_import_only_downwards(module: str) -> None:
    room = _room(module)
    assert room in FLOORS, f"{module}: room {room!r} has no floor in this test; add it"
    for target in sorted(GRAPH[module]):
        other = _room(target)
        if other is None:  # the package root: __version__ only
            continue
        assert FLOORS[other] <= FLOORS[room], f"{module} imports {target}: {other} is above {room}"


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(GRAPH[m]):
            if n == "tutormetrics":
                continue
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                dfs(n)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            dfs(m)


def test_the_checker_sees_function_level_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from tutormetrics.runs import run_pipeline\n")
    assert "tutormetrics.runs" in _imports(f)
