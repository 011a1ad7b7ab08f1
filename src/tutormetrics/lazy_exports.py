"""A package's public names loaded with their module on first use (PEP 562), for every package ``__init__``.

Importing a package then costs only its own file: ``import tutormetrics.stats`` loads no scipy until a name that
needs it is asked for (``docs/guide/options.md#options``). The scientific-python ``lazy_loader`` does the same;
fifteen lines here keep the install one dependency lighter and the names in the one table each package declares.

Example:
    >>> ns: dict = {}
    >>> getattr_, dir_ = lazy_exports("tutormetrics.stats", {"icc_forms": "icc"}, ns)
    >>> getattr_("icc_forms").__name__, "icc_forms" in ns, "icc_forms" in dir_()
    ('icc_forms', True, True)
"""

from __future__ import annotations

import importlib
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

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
