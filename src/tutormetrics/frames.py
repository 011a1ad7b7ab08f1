"""Data frames at the boundary of the Python API: polars, pandas and pyarrow frames in, polars frames out
(``docs/guide/python.md#data-frames``).

Every public function that takes a table declares its frame parameters once, with :func:`frame_inputs`; each
value is converted there by :func:`to_polars`: a polars ``DataFrame`` passes as it is, a ``LazyFrame`` is
collected, a pandas ``DataFrame`` goes through ``pl.from_pandas`` (a named index becomes columns), a pyarrow
``Table`` or ``RecordBatch`` through ``pl.from_arrow``; anything else is a ``TypeError`` naming the function,
the parameter and what it accepts. pandas and pyarrow are never imported here: a frame is told by its type's
module, so neither becomes a dependency.

Example:
    >>> import polars as pl
    >>> @frame_inputs("table")
    ... def height(table: pl.DataFrame) -> int:
    ...     return table.height
    >>> height(pl.LazyFrame({"a": [1, 2]}))
    2
    >>> height([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: height: table must be a polars, pandas or pyarrow data frame, got list
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import polars as pl

from tutormetrics.errors import InputSchemaError

__all__ = ["ACCEPTED", "FrameParam", "frame_inputs", "frame_kind", "frame_params", "to_polars"]

#: What a frame parameter accepts, as the messages say it.
ACCEPTED = "a polars, pandas or pyarrow data frame"

F = TypeVar("F", bound=Callable[..., Any])


def frame_kind(value: object) -> str | None:
    """``"polars"``, ``"lazy"``, ``"pandas"`` or ``"pyarrow"`` for a frame of that library, else ``None``.

    >>> frame_kind(pl.DataFrame()), frame_kind(pl.LazyFrame()), frame_kind([1])
    ('polars', 'lazy', None)
    """
    if isinstance(value, pl.DataFrame):
        return "polars"
    if isinstance(value, pl.LazyFrame):
        return "lazy"
    module, name = type(value).__module__.split(".")[0], type(value).__name__
    if module == "pandas" and name == "DataFrame":
        return "pandas"
    if module == "pyarrow" and name in ("Table", "RecordBatch"):
        return "pyarrow"
    return None


def _type_name(value: object) -> str:
    """``list``, ``numpy.ndarray``, ``pandas.Series``: the type, with its library's name when not a builtin."""
    module = type(value).__module__.split(".")[0]
    return type(value).__name__ if module == "builtins" else f"{module}.{type(value).__name__}"


def to_polars(value: object, where: str = "frame") -> pl.DataFrame:
    """``value`` as a polars DataFrame (the module docstring says how each kind converts); ``where`` names the
    parameter in the ``TypeError`` for anything that is not a frame.

    >>> to_polars(pl.DataFrame({"a": [1]})).columns
    ['a']
    """
    kind = frame_kind(value)
    if kind == "polars":
        return value  # type: ignore[return-value]
    if kind is None:
        raise TypeError(f"{where} must be {ACCEPTED}, got {_type_name(value)}")
    try:
        if kind == "lazy":
            return value.collect()  # type: ignore[attr-defined]
        if kind == "pandas":
            named = any(n is not None for n in value.index.names)  # type: ignore[attr-defined]
            return pl.from_pandas(value, include_index=named)  # type: ignore[arg-type]
        return pl.from_arrow(value)  # type: ignore[return-value,arg-type]
    except (TypeError, ValueError, pl.exceptions.PolarsError) as exc:  # e.g. a pandas column of mixed objects
        detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise InputSchemaError(f"{where}: the {kind} frame does not convert to polars ({detail})",
                               hint="give each column one type (docs/guide/python.md#data-frames)") from None


@dataclass(frozen=True)
class FrameParam:
    """One frame parameter of a function: its position (``None``: keyword-only), whether it holds several frames
    (``*targets``, ``Sequence[pl.DataFrame]``, a tuple of frames), whether ``None`` passes, and the other types
    that pass unchanged (a ``Ratings``, a path)."""

    name: str
    position: int | None
    several: bool
    star: bool
    optional: bool
    also: tuple[type, ...]

    def accepted(self) -> str:
        """What the parameter accepts, in words (the ``TypeError``'s)."""
        if self.several:
            return f"a list of {ACCEPTED.removeprefix('a ')}s"
        words = [ACCEPTED, *(f"a {t.__name__}" for t in self.also), *(["None"] if self.optional else [])]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def convert(self, value: Any, where: str) -> Any:
        """``value`` with every frame in it converted (:func:`to_polars`); a ``TypeError`` if it is not accepted."""
        if value is None and self.optional:
            return value
        if self.several and not self.star:
            if isinstance(value, (list, tuple)):
                return type(value)(to_polars(v, f"{where}[{i}]") for i, v in enumerate(value))
        elif frame_kind(value) is not None:
            return to_polars(value, where)
        if self.also and isinstance(value, self.also):
            return value
        raise TypeError(f"{where} must be {self.accepted()}, got {_type_name(value)}")


def _several(annotation: object) -> bool:
    """Whether an annotation (a string under ``from __future__ import annotations``) is a sequence of frames."""
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return any(text.replace(" ", "").startswith(f"{head}[") and "DataFrame" in text
               for head in ("Sequence", "list", "tuple", "Iterable"))


def _frame_param(sig: inspect.Signature, name: str, also: tuple[type, ...], qualname: str) -> FrameParam:
    if name not in sig.parameters:
        raise TypeError(f"frame_inputs: {qualname} has no parameter {name!r}")
    names = list(sig.parameters)
    p = sig.parameters[name]
    star = p.kind is inspect.Parameter.VAR_POSITIONAL
    positional = p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) or star
    text = p.annotation if isinstance(p.annotation, str) else repr(p.annotation)
    optional = p.default is None or "None" in [part.strip() for part in text.split("|")]
    return FrameParam(name, names.index(name) if positional else None, star or _several(p.annotation), star,
                      optional, also)


def frame_inputs(*names: str, **also: type | tuple[type, ...]) -> Callable[[F], F]:
    """Decorate a public function so that its frame parameters take polars, pandas and pyarrow frames.

    ``names`` are parameters that take only frames (or ``None`` where the annotation says ``| None``); a
    keyword ``name=Type`` (or a tuple of types) is a parameter that takes a frame or a ``Type``, which passes
    unchanged. A ``*args`` parameter or one annotated ``Sequence[pl.DataFrame]``/``tuple[...]`` holds several
    frames, each converted. The parameters are kept on the function as ``__frame_params__``
    (:func:`frame_params`).
    """

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        params = [_frame_param(sig, n, (), func.__qualname__) for n in names] + [
            _frame_param(sig, n, t if isinstance(t, tuple) else (t,), func.__qualname__) for n, t in also.items()]

        wheres = [f"{func.__qualname__}: {p.name}" for p in params]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            args_list: list[Any] | None = None
            for p, where in zip(params, wheres, strict=True):
                if p.name in kwargs:
                    kwargs[p.name] = p.convert(kwargs[p.name], where)
                elif p.position is not None and p.position < len(args):
                    if args_list is None:
                        args_list = list(args)
                    if p.star:
                        args_list[p.position:] = [to_polars(v, f"{where}[{i}]")
                                                  for i, v in enumerate(args[p.position:])]
                    else:
                        args_list[p.position] = p.convert(args[p.position], where)
            return func(*(args if args_list is None else args_list), **kwargs)

        wrapper.__frame_params__ = tuple(params)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def frame_params(func: Callable[..., Any]) -> tuple[FrameParam, ...]:
    """The frame parameters :func:`frame_inputs` declared on ``func`` (a method's function, a classmethod's
    ``__func__``); ``()`` for a function it did not decorate."""
    return tuple(getattr(func, "__frame_params__", ()))
