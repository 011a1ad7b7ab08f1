"""Command-line options declared on the dataclass fields they fill: one declaration per option.

A field made with :func:`flag` carries its flags, help text and (when the command line spells the value
differently) a parser in its ``metadata``; its default is declared there once and is both the Python default
and the one ``--help`` shows. :mod:`tutormetrics.commands.registration` turns the fields of a command's options
dataclass into Typer parameters and builds the dataclass from what was typed, so a command is a typed function
``def theta(args: ThetaArgs) -> None`` that a reader and mypy can follow (``docs/guide/options.md``).

This module sits in the lowest room: it imports neither Typer nor anything of tutormetrics, so the library's
options dataclasses (:class:`~tutormetrics.engine.file_scoring.ScoreOptions`, …) can declare their flags.

Example:
    >>> from dataclasses import dataclass, fields
    >>> @dataclass
    ... class Demo:
    ...     PANEL = "Demo"
    ...     bands: tuple = flag("--bands", default="3,6", parse=lambda v: tuple(map(float, v.split(","))), help="Bands.")
    >>> Demo().bands, flag_of(fields(Demo)[0]).cli_default
    ((3.0, 6.0), '3,6')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FLAG", "SEED_RANGE", "Flag", "FlagField", "argument", "confidence_flag", "control_flag", "flag", "flag_fields", "flag_of",
    "list_or_none", "metrics_cols_flag", "min_clusters_flag", "n_min_flag", "n_resamples_flag", "ratings_file_flag", "seed_flag", "split_list",
    "theta_files_flag", "unique_list", "caption_flag", "where_flag", "dpi_flag",
]

#: The ``metadata`` key of a field that is a command-line option.
FLAG = "tutormetrics.flag"


@dataclass(frozen=True)
class Flag:
    """How one dataclass field is spelled on the command line.

    ``flags`` are the option names (empty for a positional argument); ``cli_type`` the type the command line
    parses when it differs from the field's (``str`` for ``--concision-bands 3,6``), turned into the field's
    value by ``parse``; ``cli_default`` the default as typed (``MISSING``: required); ``click`` the rest of
    ``typer.Option`` (``min``, ``max``, ``hidden``, ``show_default``, ``dir_okay``); ``required``: no default.
    """

    flags: tuple[str, ...]
    help: str
    cli_type: Any = None
    parse: Callable[[Any], Any] | None = None
    cli_default: Any = None
    argument: bool = False
    click: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    panel: str | None = None
    required: bool = False

    def value(self, raw: Any) -> Any:
        """The field value of a command-line value (``parse`` applied when there is one)."""
        return self.parse(raw) if self.parse is not None else raw


def _field(default: Any, meta: Flag) -> Any:
    """A dataclass field whose default is ``default`` parsed (when it is made, so a parser may import lazily; a
    fresh copy per instance when mutable)."""
    metadata = {FLAG: meta}
    if meta.required:
        return dataclasses.field(metadata=metadata)
    if meta.parse is not None or isinstance(default, (list, dict, set)):
        return dataclasses.field(default_factory=lambda: meta.value(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag(
    *flags: str,
    help: str,
    default: Any = MISSING,
    parse: Callable[[Any], Any] | None = None,
    cli_type: Any = None,
    panel: str | None = None,
    **click: Any,
) -> Any:
    """A dataclass field that is also the option ``flags``.

    ``default`` is the value as typed on the command line; the field's default is ``parse(default)`` when
    ``parse`` is given (then ``cli_type`` is what the command line reads). Omit ``default`` for a required
    option (fields after it need ``kw_only``).

    Args:
        *flags: The option names, e.g. ``"--seed"`` or ``"--output", "-o"``; ``"--x/--no-x"`` for a switch.
        help: The ``--help`` text.
        default: The default as typed (declared here only).
        parse: Turns the command-line value into the field's value; raises ``ConfigError`` on bad input.
        cli_type: The type the command line reads when it differs from the field's annotation.
        panel: The ``--help`` panel (default: ``PANEL`` of the class that declares the field).
        **click: More ``typer.Option`` settings (``min=1``, ``hidden=True``, ``show_default=False``).
    """
    return _field(default, Flag(tuple(flags), help, cli_type, parse, default, False, click, panel, default is MISSING))


def argument(*, help: str, default: Any = MISSING, cli_type: Any = None, **click: Any) -> Any:
    """A dataclass field that is a positional command-line argument (required unless ``default`` is given).

    Args:
        help: the ``--help`` text.
        default: the default as typed; omit it for a required argument.
        cli_type: the type the command line reads when it differs from the field's annotation.
        **click: more ``typer.Argument`` settings.
    """
    return _field(default, Flag((), help, cli_type, None, default, True, click, None, default is MISSING))


def flag_of(field: dataclasses.Field[Any]) -> Flag | None:
    """The :class:`Flag` of a dataclass field, ``None`` for a field the command line does not set."""
    meta = field.metadata.get(FLAG)
    return meta if isinstance(meta, Flag) else None


@dataclass(frozen=True)
class FlagField:
    """One command-line option of an options dataclass: its ``path`` of field names from the outer class
    (``("score", "chunk_size")`` for a nested dataclass), the :class:`Flag`, the field's type and its panel."""

    path: tuple[str, ...]
    flag: Flag
    type: Any
    panel: str

    @property
    def name(self) -> str:
        """The keyword Typer passes it under: the field's own name (unique within one command)."""
        return self.path[-1]


def _panel(cls: type, name: str, outer: str) -> str:
    """The ``--help`` panel of field ``name``: ``PANEL`` of the class in ``cls``'s MRO that declares it."""
    for klass in cls.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return str(vars(klass).get("PANEL", outer))
    return outer


def flag_fields(cls: type, *, prefix: tuple[str, ...] = (), panel: str = "Options") -> Iterator[FlagField]:
    """Every option of the options dataclass ``cls``, nested dataclass fields flattened, in declaration order.

    A field whose type is itself a dataclass (``score: ScoreOptions``) contributes that class's options.
    """
    import typing

    hints = typing.get_type_hints(cls, include_extras=True)
    for field in dataclasses.fields(cls):
        kind = hints.get(field.name, field.type)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            yield from flag_fields(kind, prefix=(*prefix, field.name), panel=str(getattr(kind, "PANEL", panel)))
            continue
        meta = flag_of(field)
        if meta is not None:
            where = meta.panel or _panel(cls, field.name, panel)
            yield FlagField((*prefix, field.name), meta, meta.cli_type or kind, where)


# --- list values: repeated options and comma lists alike ------------------------------------------------


def split_list(values: list[str] | str | None) -> list[str] | None:
    """Accept comma-separated values and repeated options alike: ``["a,b", "c"]`` → ``["a", "b", "c"]``.

    >>> split_list(["a,b", " c"]), split_list(None)
    (['a', 'b', 'c'], None)
    """
    if not values:
        return None
    items = [values] if isinstance(values, str) else values
    out = [v.strip() for item in items for v in item.split(",") if v.strip()]
    return out or None


def unique_list(values: list[str] | str | None) -> list[str]:
    """:func:`split_list` without repeats, ``[]`` when empty: ``["a,b", "a"]`` → ``["a", "b"]``."""
    return list(dict.fromkeys(split_list(values) or []))


def list_or_none(values: list[str] | None) -> list[str] | None:
    """A repeatable option's values as a list, ``None`` when not given."""
    return list(values) if values else None


# --- the options several commands share: one declaration and one meaning each -----------------------------

#: numpy's seeds are 0 … 2**32−1: a plain "not in the range" message instead of numpy's own text.
SEED_RANGE: dict[str, int] = {"min": 0, "max": 2**32 - 1}


def seed_flag(panel: str | None = None, *, help: str = "Seed of the random draws (bootstrap, permutations, sampler; 0 to 2**32-1).") -> Any:
    """``--seed`` (default 0): the seed of every bootstrap, permutation and sampler draw of a command (``help`` names
    the draws a command makes)."""
    return flag("--seed", default=0, panel=panel, help=help, **SEED_RANGE)


def n_resamples_flag(default: int, *, panel: str | None = None, min: int = 0) -> Any:
    """``--n-resamples``: bootstrap resamples (the default is each analysis' documented one: 9999 for the Spearman
    matrix's BCa, 2000 for agreement, judge and prediction intervals; 0 turns the interval off where allowed).

    Args:
        default: the analysis' documented number of resamples.
        panel: the ``--help`` panel; ``None``: the declaring class's ``PANEL``.
        min: the smallest value accepted (0 where the interval may be turned off).
    """
    return flag("--n-resamples", default=default, panel=panel, min=min, help="Bootstrap resamples (0: no interval where allowed).")


def confidence_flag(panel: str | None = None) -> Any:
    """``--confidence-level`` (default 0.95) of every interval."""
    return flag("--confidence-level", default=0.95, panel=panel, min=0.5, max=0.999, help="Level of every confidence interval.")


def metrics_cols_flag(panel: str | None = None) -> Any:
    """``--metrics-cols``: the metric columns used (repeatable or comma-separated; default: every numeric one)."""
    return flag(
        "--metrics-cols", default=None, parse=split_list, cli_type=list[str] | None, panel=panel, show_default=False,
        help="Metric column(s) to use, repeatable or comma-separated (default: every numeric metric column).",
    )


def n_min_flag(default: int, *, min: int = 1, panel: str | None = None) -> Any:
    """``--n-min``: the fewest units (pairs, rows) of a defined cell or row; fewer give NaN with reason ``too_few``
    (the default is each analysis' documented one: 10 for ρ cells, agreement and predict; 15 for paired tests).

    Args:
        default: The analysis' default.
        min: The smallest value the command line accepts (3 where a Spearman ρ needs three pairs).
        panel: The ``--help`` panel.
    """
    return flag(
        "--n-min", default=default, min=min, panel=panel,
        help="Fewest units (pairs, rows) of a defined cell or row; fewer give NaN with reason too_few.",
    )


def control_flag(panel: str | None = None) -> Any:
    """``--control``: metric columns held fixed (partial ρ in ``validate``/``run``; in every model but judge in
    ``predict``), repeatable or comma-separated."""
    return flag(
        "--control", default=None, parse=unique_list, cli_type=list[str] | None, panel=panel, show_default=False,
        help="Metrics column to hold fixed (partial ρ; every predict model but judge), e.g. resp_words; repeat or comma-separate.",
    )


def ratings_file_flag(panel: str | None = None) -> Any:
    """``--ratings FILE``: long (id, rater, criterion, score) or wide ratings, read by ``read_ratings``."""
    return flag("--ratings", default=None, panel=panel, dir_okay=False, help="Ratings: long (id, rater, criterion, score) or wide.")


def theta_files_flag(panel: str | None = None) -> Any:
    """``--theta FILE`` (repeatable): θ tables (id, theta[, theta_sd]) whose columns are targets too."""
    return flag(
        "--theta", default=None, parse=lambda v: list(v or []), cli_type=list[Path] | None, panel=panel, dir_okay=False,
        help="θ table(s) with id, theta[, theta_sd], repeatable; their numeric columns are targets (validate and run: "
        "without one, --estimate-theta fits θ from long ratings).",
    )


def min_clusters_flag(panel: str | None = None) -> Any:
    """``--min-clusters`` (default 10): with ``--cluster-col``, fewer clusters (dialogues) give no interval (reason
    ``too_few_clusters``)."""
    return flag(
        "--min-clusters", default=10, min=2, panel=panel,
        help="With --cluster-col: fewer clusters (dialogues) give no interval (too_few_clusters).",
    )


def caption_flag(panel: str | None = None) -> Any:
    """``--caption TEXT``: the caption of the ``-o`` paper table (``.md``/``.tex``; default: the layout's own)."""
    return flag(
        "--caption", default=None, panel=panel, show_default=False,
        help="Caption of the -o table when it is .md or .tex (default: one naming the table, n and the conventions).",
    )


def where_flag(panel: str | None = None) -> Any:
    """``--where EXPR``: keep the main input's rows that match (``docs/guide/paper.md#where``); repeats join by ``and``."""
    return flag(
        "--where", default=None, parse=list_or_none, cli_type=list[str] | None, panel=panel, show_default=False,
        help="Keep the input rows matching EXPR (COL == V, COL != V, COL in V1,V2, joined by 'and'; repeat for 'and').",
    )


def dpi_flag(panel: str | None = None) -> Any:
    """``--dpi N`` (50–1200, default 150): the resolution of PNG figures (``docs/guide/paper.md#figures``)."""
    return flag("--dpi", default=150, panel=panel, min=50, max=1200, help="Resolution of PNG figures (50 to 1200 dots per inch).")
