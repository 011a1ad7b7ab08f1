"""Column descriptions: what each metric column is, declared by its family and written into the manifest.

Every metrics table ``score``, ``run`` and ``score --dialogue`` write carries, in ``<output>.manifest.json``
under the key ``"columns"``, one :class:`ColumnDescription` per metric column (in table order)::

    {"name": "mtld", "family": "lexical_richness", "family_label": "richness", "label": "mtld",
     "higher_is_better": true, "level": "exchange", "params": {"mtld_threshold": 0.72, ...}, "alias_of": null}

``validate``, ``heatmap``, ``summarize``, ``compare`` and the report read these instead of guessing from
column names: only described columns are metrics, grouped by ``family_label``. A table without a
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
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tutormetrics.metrics.base import LEVELS, OTHER, ColumnDescription

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.metrics.base import Metric
    from tutormetrics.metrics.registry import MetricRegistry

__all__ = ["LEVELS", "OTHER", "ColumnDescription", "describe_columns", "describe_frame", "describe_table", "columns_near",
           "conversation_means", "family_labels", "aliases", "metric_names", "read_manifest_columns", "manifest_path"]

#: The manifest key that holds the column descriptions.
MANIFEST_KEY = "columns"
#: Suffix of a table's manifest (``metrics.csv`` → ``metrics.csv.manifest.json``).
MANIFEST_SUFFIX = ".manifest.json"
#: Columns the Scorer and the dialogue tables write that are ids, flags or structure, never metrics.
NOT_METRICS: frozenset[str] = frozenset({
    "exchange_id", "conversation_id", "prompt_empty", "resp_empty", "lang", "prompt_windows", "resp_windows", "prompt_truncated", "resp_truncated",
    "turn", "tutor_turn", "ctx_turns",
})  # fmt: skip


def describe_columns(
    families: Iterable[Metric], n_layers: int | None = None, *, level: str | None = None
) -> list[ColumnDescription]:
    """The descriptions of every column of ``families`` in output order, aliases linked.

    ``level`` overrides the families' own (a dialogue's exchange families score tutor turns).

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


def conversation_means(descriptions: Iterable[ColumnDescription]) -> list[ColumnDescription]:
    """``mean_<col>`` of a conversation (CONV, ``dialogue.md`` §5): the column's family, direction and
    parameters at the conversation level (an alias stays an alias).

    Example:
        >>> [d.name for d in conversation_means([ColumnDescription("ttr", "lexical_diversity", "diversity")])]
        ['mean_ttr']
    """
    return [
        replace(d, name=f"mean_{d.name}", label=f"mean_{d.label}", level="conversation",
                alias_of=f"mean_{d.alias_of}" if d.alias_of else None)
        for d in descriptions
    ]  # fmt: skip


def manifest_path(table: str | Path) -> Path:
    """``<table>.manifest.json``."""
    table = Path(table)
    return table.with_name(table.name + MANIFEST_SUFFIX)


def read_manifest_columns(path: str | Path) -> list[ColumnDescription] | None:
    """The descriptions in a manifest (or in the manifest of the table ``path``); ``None`` when it has none."""
    path = Path(path)
    if not path.name.endswith(MANIFEST_SUFFIX):
        path = manifest_path(path)
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    entries = data.get(MANIFEST_KEY) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    try:
        return [ColumnDescription.from_dict(e) for e in entries if isinstance(e, dict)]
    except (KeyError, ValueError, TypeError):
        return None


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
    exclude: Iterable[str] = (),
    registry: MetricRegistry | None = None,
) -> list[ColumnDescription]:
    """The metric columns of a table, described: THE one place that decides what is a metric.

    With ``manifest`` (the table's own descriptions) the described columns present in ``columns`` are the
    metrics, in table order. Without one (a user's own CSV), every ``numeric`` column but ``exclude``
    and the flags of :data:`NOT_METRICS` is a metric: a registered family's declared column by name (the
    layer count read from the ``sync_lNN`` names), ``mean_<declared>`` at the conversation level, else
    family ``"other"``. Without a manifest no column is an alias (that depends on parameters the table lacks).

    Example:
        >>> [(d.name, d.family) for d in describe_table(["exchange_id", "mtld", "mean_ttr", "x", "resp_empty"],
        ...                                              numeric=["mtld", "mean_ttr", "x"], exclude=["exchange_id"])]
        [('mtld', 'lexical_richness'), ('mean_ttr', 'lexical_diversity'), ('x', 'other')]
    """
    skip = set(exclude)
    if manifest is not None:
        by_name = {d.name: d for d in manifest}
        return [by_name[c] for c in columns if c in by_name and c not in skip]
    wanted = [c for c in columns if c not in skip and c not in NOT_METRICS and (numeric is None or c in set(numeric))]
    layers = [int(m.group(1)) for c in wanted if (m := _SYNC_LAYER.match(c.removeprefix("mean_")))]
    declared = declared_columns(registry, max(layers) if layers else None)
    means = {d.name: d for d in conversation_means(declared.values())}
    # no aliases without a manifest: whether sync_last is emb_mean_cos depends on parameters the table does not hold
    return [replace(declared.get(c) or means.get(c) or ColumnDescription(c, OTHER, OTHER), alias_of=None) for c in wanted]


def family_labels(descriptions: Iterable[ColumnDescription]) -> dict[str, str]:
    """Column → its family's figure label.

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
    (``statistics.md``), so dropping a column would move every later cell's p.

    Example:
        >>> ds = [ColumnDescription("a", "f", "f"), ColumnDescription("b", "f", "f", alias_of="a")]
        >>> metric_names(ds), metric_names(ds, aliases=False)
        (['a', 'b'], ['a'])
    """
    return [d.name for d in descriptions if aliases or not d.alias_of]


def describe_frame(
    frame: Any, *, source: str | Path | None = None, exclude: Iterable[str] = (), registry: MetricRegistry | None = None
) -> list[ColumnDescription]:
    """The metric columns of a polars ``frame`` read from ``source``: the descriptions in the manifest beside
    ``source`` when it has them, else :func:`describe_table` on the frame's numeric (non-boolean) columns."""
    manifest = read_manifest_columns(source) if source is not None else None
    numeric = [c for c, dt in frame.schema.items() if dt.is_numeric()]
    return describe_table(frame.columns, numeric=numeric, manifest=manifest, exclude=exclude, registry=registry)


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
