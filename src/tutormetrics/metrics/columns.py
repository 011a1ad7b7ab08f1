"""Column descriptions: what each metric column is, declared by its family and written into the manifest.

Every metrics table ``score``, ``run`` and ``score --dialogue`` write carries, in ``<output>.manifest.json``
under the key ``"columns"``, one :class:`ColumnDescription` per metric column (in table order)::

    {"name": "mtld", "family": "lexical_richness", "family_label": "richness", "label": "mtld",
     "higher_is_better": true, "level": "exchange", "params": {"mtld_threshold": 0.72, ...}, "alias_of": null}

``validate``, ``heatmap``, ``summarize``, ``compare`` and the report read these instead of guessing from
column names: only described columns are metrics. One vocabulary: tables write the family **id**
(:func:`column_families`, :func:`family_of`: ``lexical_diversity``); only figures (the heatmap's family
brackets) write ``family_label`` (:func:`family_labels`: ``diversity``). The columns that are never metrics
(ids, structure, the Scorer's flags, plus a table's own id/group columns) are :func:`not_metric_columns`. A table without a
manifest (a user's own CSV) is described by :func:`describe_table` alone: registered families' declared
columns by name, ``mean_<col>`` of one at the conversation level, any other numeric column as family
``"other"``.

``alias_of`` names an earlier column that computes the same quantity (``sync_last`` and ``sync_l06`` are
``emb_mean_cos`` for a 6-block encoder): families declare :meth:`Metric.column_quantities`, and
:func:`describe_columns` links equal quantities to their first column, so the heatmap and the report draw
one row for them (with a note naming the aliases).

Example:
    >>> from tutormetrics.metrics import get_metric
    >>> d = describe_columns([get_metric("lexical_richness")])[0]
    >>> d.name, d.family, d.family_label, d.higher_is_better, d.level
    ('mtld', 'lexical_richness', 'richness', True, 'exchange')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutormetrics.metrics.base import LEVELS, OTHER, ColumnDescription
from tutormetrics.progress import Log

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.metrics.base import Metric
    from tutormetrics.metrics.registry import MetricRegistry

__all__ = ["LEVELS", "OTHER", "ColumnDescription", "describe_columns", "describe_frame", "describe_table", "columns_near",
           "conversation_mean", "conversation_means", "at_conversation_level", "column_families", "family_of",
           "family_labels", "not_metric_columns", "aliases", "metric_names", "read_manifest_columns", "manifest_path"]

#: The manifest key that holds the column descriptions (one per metric column).
MANIFEST_KEY = "column_descriptions"
#: The manifest key that holds each output column's role (``docs/design/datasets.md#metric-columns``): id, id_parts, kept, tags,
#: structure, metrics, diagnostics.
ROLES_KEY = "columns"
ROLES: tuple[str, ...] = ("id", "id_parts", "kept", "tags", "structure", "metrics", "diagnostics")
#: Dialogue structure columns (numbers, never metrics).
STRUCTURE_COLUMNS: frozenset[str] = frozenset({"conversation_id", "turn", "tutor_turn", "ctx_turns"})
#: The Scorer's flags and counts per row (never metrics).
DIAGNOSTIC_COLUMNS: frozenset[str] = frozenset({
    "prompt_empty", "resp_empty", "lang", "prompt_windows", "resp_windows", "prompt_truncated", "resp_truncated",
})  # fmt: skip
#: Columns the Scorer and the dialogue tables write that are ids, flags or structure, never metrics.
NOT_METRICS: frozenset[str] = frozenset({"exchange_id"}) | STRUCTURE_COLUMNS | DIAGNOSTIC_COLUMNS


def not_metric_columns(*named: str | None) -> frozenset[str]:
    """The columns never described as metrics: :data:`NOT_METRICS` (``exchange_id``, the structure columns, the
    Scorer's flags) and the table's own ``named`` columns (its id, group, block or cluster column; ``None`` skipped).
    The one ``exclude=`` for :func:`describe_frame` / :func:`describe_table`.

    >>> sorted(not_metric_columns("obs", None, "tutor") - NOT_METRICS), "resp_empty" in not_metric_columns()
    (['obs', 'tutor'], True)
    """
    return NOT_METRICS | {c for c in named if c}


_ID_LIKE = re.compile(r"^(?:id|idx|index|key|uuid|[^\W\d_]id|.*_(?:id|idx|index|key|uuid))$")
#: Suffix of a table's manifest (``metrics.csv`` → ``metrics.csv.manifest.json``).
MANIFEST_SUFFIX = ".manifest.json"


def is_id_like(name: str) -> bool:
    """An id-like column name (``docs/design/datasets.md#metric-columns``): casefolded ``id``, ``idx``, ``index``, ``key``, ``uuid``, a letter
    plus ``id`` (``qid``), or ending in ``_id``, ``_idx``, ``_index``, ``_key``, ``_uuid``.

    >>> [is_id_like(n) for n in ("obs_id", "exchange_idx", "qid", "ID", "index", "valid", "idea", "mid_score")]
    [True, True, True, True, True, False, False, False]
    """
    return bool(_ID_LIKE.match(name.casefold()))


def column_roles(
    columns: Sequence[str],
    *,
    id_col: str,
    descriptions: Iterable[ColumnDescription],
    id_parts: Sequence[str] = (),
    kept: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> dict[str, list[str]]:
    """Each output column's role, in table order (the manifest's ``columns``, ``docs/design/datasets.md#metric-columns``).

    Args:
        columns: the output table's columns, in order.
        id_col: the row id column.
        descriptions: descriptions of the metric columns.
        id_parts: columns the id is built from.
        kept: input columns carried through to the output.
        tags: tag columns added to the output.

    Example:
        >>> column_roles(["exchange_id", "tutor", "resp_words", "resp_empty"], id_col="exchange_id", kept=["tutor"],
        ...              descriptions=[ColumnDescription("resp_words", "length", "length")])["metrics"]
        ['resp_words']
    """
    metrics = {d.name for d in descriptions}
    special = {id_col, *id_parts, *kept, *tags}
    return {
        "id": [c for c in columns if c == id_col],
        "id_parts": [c for c in columns if c in id_parts and c != id_col],
        "kept": [c for c in columns if c in kept and c != id_col],
        "tags": [c for c in columns if c in tags],
        "structure": [c for c in columns if c in STRUCTURE_COLUMNS and c not in special],
        "metrics": [c for c in columns if c in metrics and c not in special],
        "diagnostics": [c for c in columns if c in DIAGNOSTIC_COLUMNS and c not in special],
    }


def not_metric_reason(name: str, roles: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """Why a column can never be a metric, target or control (``docs/design/datasets.md#metric-columns``), or ``None``.

    >>> not_metric_reason("obs_id"), not_metric_reason("turn"), not_metric_reason("ttr")
    ('id-like name', 'structure column', None)
    """
    for role, label in (("id", "id column"), ("id_parts", "id column"), ("kept", "kept column"), ("tags", "tag column"),
                        ("structure", "structure column"), ("diagnostics", "diagnostic column")):
        if roles and name in roles.get(role, ()):
            return label
    if name in STRUCTURE_COLUMNS:
        return "structure column"
    if name in DIAGNOSTIC_COLUMNS:
        return "diagnostic column"
    if is_id_like(name):
        return "id-like name"
    return None


def describe_columns(
    families: Iterable[Metric], n_layers: int | None = None, *, level: str | None = None
) -> list[ColumnDescription]:
    """The descriptions of every column of ``families`` in output order, aliases linked.

    ``level`` overrides the families' own (a dialogue's exchange families score tutor turns).

    Args:
        families: the metric families, in output order.
        n_layers: encoder layer count, for the per-layer columns; ``None`` when unknown.
        level: level written into every description; ``None`` keeps each family's own.

    Example:
        >>> from tutormetrics.metrics import get_metric
        >>> ds = describe_columns([get_metric("embedding_similarity"), get_metric("layerwise_synchrony")], 6)
        >>> [(d.name, d.alias_of) for d in ds if d.alias_of]
        [('sync_l06', 'emb_mean_cos'), ('sync_mid', 'sync_l03'), ('sync_last', 'emb_mean_cos')]
    """
    out: list[ColumnDescription] = []
    quantities: list[str | None] = []
    for family in families:
        described = family.describe_columns(n_layers)
        qty = family.column_quantities(n_layers)
        for d in described:
            out.append(replace(d, level=level) if level else d)
            quantities.append(qty.get(d.name))
    return link_aliases(out, quantities)


def link_aliases(descriptions: Sequence[ColumnDescription], quantities: Sequence[str | None]) -> list[ColumnDescription]:
    """Set ``alias_of`` of every column whose quantity equals an earlier column's (to that first column).

    Example:
        >>> ds = [ColumnDescription("a", "f", "f"), ColumnDescription("b", "g", "g")]
        >>> [d.alias_of for d in link_aliases(ds, ["q", "q"])]
        [None, 'a']
    """
    first: dict[str, str] = {}
    out = []
    for d, q in zip(descriptions, quantities, strict=True):
        if q is None:
            out.append(d)
        elif q in first:
            out.append(replace(d, alias_of=first[q]))
        else:
            first[q] = d.name
            out.append(d)
    return out


def conversation_mean(name: str) -> str:
    """The conversation-level column of a turn column (CONV, ``docs/design/dialogue.md#conv``): its mean over the turns.

    >>> conversation_mean("resp_words")
    'mean_resp_words'
    """
    return f"mean_{name}"


def at_conversation_level(names: Iterable[str], columns: Iterable[str]) -> list[str]:
    """Each name as the conversation table has it: the column itself, else its :func:`conversation_mean` when
    that is a column, else the name as given (then reported missing where it is used).

    >>> at_conversation_level(["resp_words", "talk_ratio", "nope"], ["mean_resp_words", "talk_ratio"])
    ['mean_resp_words', 'talk_ratio', 'nope']
    """
    have = set(columns)
    return [c if c in have or conversation_mean(c) not in have else conversation_mean(c) for c in names]


def conversation_means(descriptions: Iterable[ColumnDescription]) -> list[ColumnDescription]:
    """``mean_<col>`` of a conversation (CONV, ``docs/design/dialogue.md#conv``): the column's family, direction and
    parameters at the conversation level (an alias stays an alias).

    Example:
        >>> [d.name for d in conversation_means([ColumnDescription("ttr", "lexical_diversity", "diversity")])]
        ['mean_ttr']
    """
    return [
        replace(d, name=conversation_mean(d.name), label=conversation_mean(d.label), level="conversation",
                alias_of=conversation_mean(d.alias_of) if d.alias_of else None)
        for d in descriptions
    ]  # fmt: skip


def manifest_path(table: str | Path) -> Path:
    """``<table>.manifest.json``."""
    table = Path(table)
    return table.with_name(table.name + MANIFEST_SUFFIX)


def _read_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest of a table (or the manifest file itself) as a dict; ``None`` when absent or unreadable."""
    path = Path(path)
    if not path.name.endswith(MANIFEST_SUFFIX):
        path = manifest_path(path)
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_manifest_columns(path: str | Path) -> list[ColumnDescription] | None:
    """The descriptions in a manifest (or in the manifest of the table ``path``); ``None`` when it has none."""
    data = _read_manifest(path) or {}
    entries = data.get(MANIFEST_KEY)
    if entries is None and isinstance(data.get(ROLES_KEY), list):
        entries = data[ROLES_KEY]  # a manifest of 0.1.0 main (descriptions under "columns")
    if not isinstance(entries, list):
        return None
    try:
        return [ColumnDescription.from_dict(e) for e in entries if isinstance(e, dict)]
    except (KeyError, ValueError, TypeError):
        return None


def read_manifest_roles(path: str | Path) -> dict[str, list[str]] | None:
    """The column roles in a manifest (or in the manifest of the table ``path``); ``None`` when it has none."""
    roles = (_read_manifest(path) or {}).get(ROLES_KEY)
    if not isinstance(roles, dict):
        return None
    return {k: [str(c) for c in v] for k, v in roles.items() if isinstance(v, list)}


def declared_columns(registry: MetricRegistry | None = None, n_layers: int | None = None) -> dict[str, ColumnDescription]:
    """Every column a registered family declares with its default parameters, by name (first family wins)."""
    from tutormetrics.errors import TutorMetricsError
    from tutormetrics.metrics.registry import REGISTRY

    reg = registry if registry is not None else REGISTRY
    families = []
    for name in reg.names():
        try:
            families.append(reg.get(name))
        except (TutorMetricsError, ImportError, TypeError):  # a plug-in that cannot be built without arguments
            continue
    out: dict[str, ColumnDescription] = {}
    for d in describe_columns(families, n_layers):
        out.setdefault(d.name, d)
    return out


_SYNC_LAYER = re.compile(r"^sync_l(\d+)$")


def describe_table(
    columns: Sequence[str],
    *,
    numeric: Iterable[str] | None = None,
    manifest: Sequence[ColumnDescription] | None = None,
    roles: Mapping[str, Sequence[str]] | None = None,
    exclude: Iterable[str] = (),
    registry: MetricRegistry | None = None,
    excluded: list[tuple[str, str]] | None = None,
) -> list[ColumnDescription]:
    """The metric columns of a table, described: THE one place that decides what is a metric (``docs/design/datasets.md#metric-columns``).

    With ``manifest`` (the table's own descriptions) the described columns present in ``columns`` are the
    metrics, in table order, plus any other ``numeric`` column that no manifest role claims (family ``"other"``).
    Without one (a user's own CSV), every ``numeric`` column but ``exclude``, the flags and structure columns of
    :data:`NOT_METRICS` and **id-like names** (:func:`is_id_like`) is a metric: a registered family's declared
    column by name (the layer count read from the ``sync_lNN`` names), ``mean_<declared>`` at the conversation
    level, else family ``"other"``. Without a manifest no column is an alias (that depends on parameters the table
    lacks). ``excluded`` (when given) receives ``(column, reason)`` for the numeric columns left out by name.

    Args:
        columns: the table's columns, in order.
        numeric: the numeric columns; ``None`` treats every column as numeric.
        manifest: the table's own column descriptions; ``None`` when it has none.
        roles: the manifest's column roles; with ``manifest``, numeric columns no role claims become ``"other"``.
        exclude: columns that are never metrics (e.g. the id and group columns).
        registry: families whose declared columns are recognised by name; ``None`` uses the global registry.
        excluded: list that receives ``(column, reason)`` for numeric columns left out by name; ``None`` skips it.

    Example:
        >>> [(d.name, d.family) for d in describe_table(["exchange_id", "obs_id", "mtld", "mean_ttr", "x", "resp_empty"],
        ...                                              numeric=["obs_id", "mtld", "mean_ttr", "x"], exclude=["exchange_id"])]
        [('mtld', 'lexical_richness'), ('mean_ttr', 'lexical_diversity'), ('x', 'other')]
    """
    skip = set(exclude)
    num = set(numeric) if numeric is not None else None
    if manifest is not None:
        by_name = {d.name: d for d in manifest}
        claimed = {c for role in (roles or {}).values() for c in role}
        out = []
        for c in columns:
            if c in skip:
                continue
            if c in by_name:
                out.append(by_name[c])
            elif roles is not None and c not in claimed and (num is None or c in num) and not_metric_reason(c) is None:
                out.append(ColumnDescription(c, OTHER, OTHER))
        return out
    wanted = []
    for c in columns:
        if c in skip or c in NOT_METRICS or (num is not None and c not in num):
            continue
        reason = not_metric_reason(c)
        if reason is not None:
            if excluded is not None:
                excluded.append((c, reason))
            continue
        wanted.append(c)
    layers = [int(m.group(1)) for c in wanted if (m := _SYNC_LAYER.match(c.removeprefix("mean_")))]
    declared = declared_columns(registry, max(layers) if layers else None)
    means = {d.name: d for d in conversation_means(declared.values())}
    # no aliases without a manifest: whether sync_last is emb_mean_cos depends on parameters the table does not hold
    return [replace(declared.get(c) or means.get(c) or ColumnDescription(c, OTHER, OTHER), alias_of=None) for c in wanted]


def column_families(descriptions: Iterable[ColumnDescription]) -> dict[str, str]:
    """Column → its family id, the family name every table writes (``summary.csv``'s ``family``, the report's tables).

    Example:
        >>> column_families([ColumnDescription("ttr", "lexical_diversity", "diversity")])
        {'ttr': 'lexical_diversity'}
    """
    return {d.name: d.family for d in descriptions}


def family_of(column: str, descriptions: Iterable[ColumnDescription] | None = None, *, default: str = OTHER) -> str:
    """The family id of one column: from ``descriptions`` (a table's manifest) when given, else as a table without a
    manifest is described (:func:`describe_table`: a registered family's column by name, ``mean_<col>`` of one),
    else ``default``.

    Args:
        column: the column name.
        descriptions: a table's manifest descriptions; ``None`` describes the name as a table without a manifest.
        default: family returned when the column is not found.

    Example:
        >>> family_of("ttr"), family_of("mean_mtld"), family_of("x"), family_of("x", [], default="rating")
        ('lexical_diversity', 'lexical_richness', 'other', 'rating')
    """
    if descriptions is not None:
        return column_families(descriptions).get(column, default)
    described = describe_table([column])
    return described[0].family if described else default


def family_labels(descriptions: Iterable[ColumnDescription]) -> dict[str, str]:
    """Column → its family's figure label (figures only; tables write :func:`column_families`).

    Example:
        >>> family_labels([ColumnDescription("mtld", "lexical_richness", "richness")])
        {'mtld': 'richness'}
    """
    return {d.name: d.family_label for d in descriptions}


def aliases(descriptions: Iterable[ColumnDescription]) -> dict[str, list[str]]:
    """Column → the columns that alias it (only columns with aliases).

    Example:
        >>> aliases([ColumnDescription("a", "f", "f"), ColumnDescription("b", "f", "f", alias_of="a")])
        {'a': ['b']}
    """
    out: dict[str, list[str]] = {}
    for d in descriptions:
        if d.alias_of:
            out.setdefault(d.alias_of, []).append(d.name)
    return out


def metric_names(descriptions: Iterable[ColumnDescription], *, aliases: bool = True) -> list[str]:
    """The metric columns; ``aliases=False`` leaves out the columns that repeat an earlier one (what a figure draws).

    Tables keep the aliases: the validity table's seeded permutation p of a cell is keyed by the cell's index
    (``docs/statistics.md#statistics``), so dropping a column would move every later cell's p.

    Example:
        >>> ds = [ColumnDescription("a", "f", "f"), ColumnDescription("b", "f", "f", alias_of="a")]
        >>> metric_names(ds), metric_names(ds, aliases=False)
        (['a', 'b'], ['a'])
    """
    return [d.name for d in descriptions if aliases or not d.alias_of]


def describe_frame(
    frame: Any,
    *,
    source: str | Path | None = None,
    exclude: Iterable[str] = (),
    registry: MetricRegistry | None = None,
    log: Log | None = None,
    command: str = "validate",
) -> list[ColumnDescription]:
    """The metric columns of a polars ``frame`` read from ``source``: the descriptions and roles in the manifest
    beside ``source`` when it has them, else :func:`describe_table` on the frame's numeric (non-boolean) columns.
    Without a manifest, ``log`` hears which numeric columns were left out by name (``note: validate: not
    metrics: obs_id (id-like name)``).

    Args:
        frame: the polars table.
        source: path the table was read from (its manifest lies beside it); ``None`` means no manifest.
        exclude: columns that are never metrics.
        registry: families whose declared columns are recognised by name; ``None`` uses the global registry.
        log: receives the note on left-out columns; ``None`` stays quiet.
        command: command name used in that note.
    """
    manifest = read_manifest_columns(source) if source is not None else None
    roles = read_manifest_roles(source) if source is not None and manifest is not None else None
    numeric = [c for c, dt in frame.schema.items() if dt.is_numeric()]
    excluded: list[tuple[str, str]] = []
    out = describe_table(frame.columns, numeric=numeric, manifest=manifest, roles=roles, exclude=exclude,
                         registry=registry, excluded=excluded)  # fmt: skip
    if excluded and log is not None:
        log(f"note: {command}: not metrics: " + ", ".join(f"{c} ({why})" for c, why in excluded))
    return out


def check_named_columns(
    names: Iterable[str] | None, option: str, roles: Mapping[str, Sequence[str]] | None = None, *, what: str = "metric"
) -> None:
    """Naming an id, kept, tag, structure or diagnostic column (or an id-like name) in ``--metrics-cols``,
    ``--targets-from`` or ``--control`` is exit 2 (``docs/design/datasets.md#metric-columns``).

    Args:
        names: the column names given; ``None`` checks nothing.
        option: the option they came from, for the message (e.g. ``--control``).
        roles: the manifest's column roles, if any.
        what: what the option expects, for the message.

    >>> check_named_columns(["ttr"], "--metrics-cols")
    >>> check_named_columns(["obs_id"], "--control")
    Traceback (most recent call last):
    ...
    tutormetrics.errors.ConfigError: --control: 'obs_id' is an id column (id-like name), not a metric
      hint: name the metric columns of the table (`tutormetrics metrics` lists them)
    """
    from tutormetrics.errors import ConfigError

    for name in names or ():
        reason = not_metric_reason(name, roles)
        if reason is not None:
            kind = "an id column" if reason in ("id column", "id-like name") else f"a {reason}"
            detail = " (id-like name)" if reason == "id-like name" else ""
            raise ConfigError(f"{option}: {name!r} is {kind}{detail}, not a {what}",
                              hint="name the metric columns of the table (`tutormetrics metrics` lists them)")


def columns_near(table: str | Path) -> list[ColumnDescription] | None:
    """The descriptions for a table derived from metrics (a correlation table): its own manifest's, else
    those of every manifest in its folder (a ``run`` folder: ``metrics.csv``, ``turns.csv``,
    ``conversations.csv``), first one per name; ``None`` when there are none."""
    table = Path(table)
    own = read_manifest_columns(table)
    if own is not None:
        return own
    found: dict[str, ColumnDescription] = {}
    for path in sorted(table.parent.glob("*" + MANIFEST_SUFFIX)):
        for d in read_manifest_columns(path) or ():
            found.setdefault(d.name, d)
    return list(found.values()) or None
