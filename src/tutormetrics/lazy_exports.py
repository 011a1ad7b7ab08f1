"""A package's public names loaded with their module on first use (PEP 562), for every package ``__init__``.

Importing a package then costs only its own file: ``import tutormetrics.stats`` loads no scipy until a name that
needs it is asked for (``docs/guide/options.md#options``). The scientific-python ``lazy_loader`` does the same;
fifteen lines here keep the install one dependency lighter and the names in the one table each package declares.

A public name that is also the name of the module defining it (``psychometrics.ppi_table``) stays the function:
Python's import system sets a package attribute to each submodule it loads, which would otherwise replace the
function with its module depending on what was imported first (``docs/development.md#command-loading``).

Example:
    >>> ns: dict = {}
    >>> getattr_, dir_ = lazy_exports("tutormetrics.stats", {"icc_forms": "icc"}, ns)
    >>> getattr_("icc_forms").__name__, "icc_forms" in ns, "icc_forms" in dir_()
    ('icc_forms', True, True)
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        exports: Each public name and the module that defines it, relative to the package (``"mfrm.study"``).
        namespace: The package's ``globals()``: a name, once loaded, is kept there.
    """

    shadowed = {name for name, module in exports.items() if module == name}
    if shadowed and package in sys.modules:
        namespace["_SHADOWED_EXPORTS"] = frozenset(shadowed)
        sys.modules[package].__class__ = _ExportsFirst

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


class _ExportsFirst(types.ModuleType):
    """A package whose exported name wins over the same-named submodule the import system sets on it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if (isinstance(value, types.ModuleType) and name in self.__dict__.get("_SHADOWED_EXPORTS", ())
                and value.__name__ == f"{self.__name__}.{name}" and hasattr(value, name)):
            value = getattr(value, name)
        super().__setattr__(name, value)
