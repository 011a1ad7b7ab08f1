"""Register a typed command: ``def theta(args: ThetaArgs) -> None`` becomes ``tutormetrics theta``.

The options dataclass of the command's one parameter is the whole interface: each of its :func:`~tutormetrics.flags.flag`
fields (nested options dataclasses flattened) becomes one Typer parameter with the field's flags, help, default
and panel; what the user typed is parsed back into that dataclass (each ``parse`` run once, here) and the command
receives it. Nothing is declared twice and no command reads ``kwargs["…"]`` (``docs/guide/options.md``).

Example:
    >>> from dataclasses import dataclass
    >>> from typer.testing import CliRunner
    >>> from tutormetrics.flags import flag
    >>> @dataclass(kw_only=True)
    ... class HelloArgs:
    ...     name: str = flag("--name", default="world", help="Whom to greet.")
    ...     times: int = flag("--times", default="1", parse=int, cli_type=str, help="How often.")
    >>> def hello(args: HelloArgs) -> None:
    ...     print(" ".join([f"hello {args.name}"] * args.times))
    >>> app = typer.Typer()
    >>> command(app, "hello", hello)
    >>> command(app, "other", hello)
    >>> CliRunner().invoke(app, ["hello", "--name", "θ", "--times", "2"]).output
    'hello θ hello θ\\n'
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from tutormetrics.flags import FlagField, flag_fields, flag_of

__all__ = ["Outputs", "build_args", "command", "command_options", "locked_outputs", "output_paths"]

#: What a command writes: names of its options dataclass fields that hold output files (``"output/"``: an output
#: folder), or a function of the options dataclass that returns the output paths.
Outputs = Sequence[str] | Callable[[Any], Sequence[Any]]


def args_class(fn: Callable[..., Any]) -> type:
    """The options dataclass of a command: the annotation of its one parameter."""
    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters if p != "return"]
    if len(params) != 1 or not dataclasses.is_dataclass(hints.get(params[0])):
        raise TypeError(f"{fn.__qualname__} must take one options dataclass, e.g. def {fn.__name__}(args: Args) -> None")
    return hints[params[0]]


def command_options(cls: type, exclude: Sequence[str] = ()) -> list[FlagField]:
    """The options of ``cls`` a command offers (``exclude`` leaves fields at their defaults); two fields under
    one keyword would mean one flag with two meanings, so that is an error here, at import."""
    options = [o for o in flag_fields(cls) if o.name not in exclude]
    seen: dict[str, FlagField] = {}
    for o in options:
        if o.name in seen:
            raise TypeError(f"{cls.__qualname__}: option {o.name!r} declared at {seen[o.name].path} and {o.path}")
        seen[o.name] = o
    return options


def _parameter(option: FlagField) -> inspect.Parameter:
    """The keyword-only parameter Typer reads for one option."""
    meta = option.flag
    if meta.parse is not None and meta.cli_type is None:
        raise TypeError(f"option {option.path}: a flag with parse= needs cli_type= (the type typed on the command line)")
    if meta.argument:
        info = typer.Argument(help=meta.help, show_default=not meta.required, **meta.click)
    else:
        info = typer.Option(*meta.flags, help=meta.help, rich_help_panel=option.panel, **meta.click)
    default = inspect.Parameter.empty if meta.required else meta.cli_default
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[option.type, info])


def build_args(cls: type, values: Mapping[str, Any], exclude: Sequence[str] = ()) -> Any:
    """The options dataclass ``cls`` of the command-line ``values`` (keyword → value as typed), each value
    parsed by its flag; nested options dataclasses are built the same way; fields not given keep their defaults.

    >>> from tutormetrics.engine.file_scoring import ScoreOptions
    >>> build_args(ScoreOptions, {"concision_bands": "2,5", "jobs": 2}).concision_bands
    (2.0, 5.0)
    """
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        kind = hints.get(field.name)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            out[field.name] = build_args(kind, values, exclude)
            continue
        meta = flag_of(field)
        if meta is not None and field.name in values and field.name not in exclude:
            out[field.name] = meta.value(values[field.name])
    return cls(**out)


def output_paths(outputs: Outputs, args: Any, created: list[Path] | None = None) -> list[Path]:
    """The outputs of one call: each named field's value (unset and ``-`` left out); a folder output is created
    first (and added to ``created``), so every run into it locks the same ``.tutormetrics.lock`` inside it.

    Args:
        outputs: The command's output fields (a trailing ``/`` marks a folder), or a callable of ``args`` returning the paths.
        args: The parsed options of the call.
        created: Collects the folders created here; ``None``: not recorded.
    """
    if callable(outputs):
        return [Path(p) for p in outputs(args) if p is not None and str(p) != "-"]
    paths = []
    for spec in outputs:
        value = getattr(args, spec.rstrip("/"))
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is None or str(item) == "-":
                continue
            path = Path(item)
            if spec.endswith("/") and not path.exists():
                path.mkdir(parents=True)
                if created is not None:
                    created.append(path)
            paths.append(path)
    return paths


@contextlib.contextmanager
def locked_outputs(outputs: Outputs, args: Any) -> Iterator[None]:
    """Hold :func:`~tutormetrics.io.atomic.output_lock` of the call's outputs; a folder created for it and still
    empty when the command fails (bad input: exit 2 before any work) is removed again."""
    from tutormetrics.io.atomic import output_lock

    created: list[Path] = []
    try:
        with output_lock(output_paths(outputs, args, created)):
            yield
    except BaseException:
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        raise


def _debugging(ctx: typer.Context) -> bool:
    """``tutormetrics --debug ...`` (the root command's option) or ``TUTORMETRICS_DEBUG=1``."""
    import os

    return bool(ctx.find_root().params.get("debug")) or os.environ.get("TUTORMETRICS_DEBUG") == "1"


def command(
    app: typer.Typer, name: str, fn: Callable[[Any], Any], *, outputs: Outputs = (), exclude: Sequence[str] = ()
) -> None:
    """Register ``fn(args: Args)`` as ``tutormetrics NAME``.

    Args:
        app: The Typer application.
        name: The command's name.
        fn: The command: one parameter annotated with its options dataclass.
        outputs: The fields holding the files it writes (see :func:`output_paths`); the command runs under one
            lock of them, so a second command writing one of them stops at once (exit 2) naming the first.

    An expected error (:class:`~tutormetrics.errors.TutorMetricsError`) raised while the options are parsed or
    while the command runs is one ``error:`` line (with its hint) and its exit code; the command needs no handler.
        exclude: Fields of nested options dataclasses this command does not offer (they keep their defaults).
    """
    from tutormetrics.errors import TutorMetricsError

    cls = args_class(fn)
    options = command_options(cls, exclude)

    def wrapper(ctx: typer.Context, **values: Any) -> Any:
        try:  # an expected error (a value that does not parse, bad input): one line + hint, its exit code (2)
            args = build_args(cls, values, exclude)
            with locked_outputs(outputs, args):
                return fn(args)
        except TutorMetricsError as exc:
            if _debugging(ctx):
                raise  # --debug: the full traceback (cli.main re-raises it)
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(code=exc.exit_code) from None

    wrapper.outputs = outputs  # type: ignore[attr-defined]  # tests check every writing command names its outputs
    wrapper.args_class = cls  # type: ignore[attr-defined]
    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__, wrapper.__module__ = fn.__name__, fn.__qualname__, fn.__doc__, fn.__module__
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    wrapper.__signature__ = inspect.Signature([context, *(_parameter(o) for o in options)])  # type: ignore[attr-defined]
    app.command(name)(wrapper)
