"""Each package's public names are the documented functions whatever was imported first (docs/development.md#command-loading).

A public name that is also its module's name (``psychometrics.ppi_table``) used to become the module once anything
imported that submodule: Python's import system sets the package attribute to each child module it loads.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest

PACKAGES = ("tutormetrics", "tutormetrics.validity", "tutormetrics.psychometrics", "tutormetrics.stats",
            "tutormetrics.metrics", "tutormetrics.dialogue")  # fmt: skip


def _shadowed() -> list[tuple[str, str]]:
    out = []
    for pkg in PACKAGES:
        module = importlib.import_module(pkg)
        children = {m.name for m in pkgutil.iter_modules(module.__path__)}
        out += [(pkg, name) for name in getattr(module, "__all__", ()) if name in children]
    return out


def test_some_public_names_are_also_module_names():
    assert ("tutormetrics.psychometrics", "ppi_table") in _shadowed()


@pytest.mark.parametrize(("package", "name"), _shadowed())
def test_a_public_name_stays_the_function_after_its_module_is_imported(package, name):
    code = (f"import {package}.{name}\nimport {package} as p\nfrom {package} import {name} as f\n"
            f"print(type(f).__name__, type(p.{name}).__name__, f is p.{name})")  # fmt: skip
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kind, attr, same = run.stdout.split()
    assert kind != "module" and attr != "module" and same == "True", run.stdout


def test_the_module_itself_is_still_importable():
    module = importlib.import_module("tutormetrics.psychometrics.ppi_table")
    assert isinstance(module, types.ModuleType) and callable(module.ppi_table)
    assert sys.modules["tutormetrics.psychometrics.ppi_table"] is module
