"""Gather a study's output folder into one JSON-ready dict for the report.

Files are recognised by their columns, not their names, so tables written by separate commands
(``validate``, ``theta``, ``agree``, ``summarize``, ``compare``, ``score --dialogue``) are found whatever
they were called. Every section is optional: a missing or unreadable file leaves its section out and adds
a line to ``notes``.

The report shows what ``run`` decided and never decides it again (``docs/commands/report.md#what-the-page-holds``):
each exchange's ratings are the rating targets ``run`` correlated (``targets.csv``, named in ``run.json``'s
``files``: after ``--levels``, ``--drop-out-of-scale``, ``--raters``, ``--aggregate`` and ``--targets-from``), not
the ratings file aggregated afresh.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.engine.exchanges import exchange_rows
from tutormetrics.errors import InputSchemaError, TutorMetricsError
from tutormetrics.ids import IdKey, with_key
from tutormetrics.io.tables import read_table
from tutormetrics.metrics.columns import (
    NOT_METRICS,
    OTHER,
    ColumnDescription,
    column_families,
    columns_near,
    describe_frame,
    family_labels,
    not_metric_columns,
)
from tutormetrics.report.conversation_view import (
    CONVERSATION_ID,
    ConversationInputs,
    conversation_view,
    keep_dialogues,
)
from tutormetrics.report.embed import compact
from tutormetrics.report.keyed_values import read_keyed, theta_by_id, values_by_id
from tutormetrics.report.portable_paths import portable_page
from tutormetrics.report.table_kinds import DECLARED, kind_of

_AGREEMENT_COLUMNS = frozenset({"kappa", "ac1", "gwet_ac1", "krippendorff_alpha", "fleiss_kappa", "alpha_nominal"})
_TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl")


def classify(columns: Iterable[str], id_col: str = "exchange_id") -> str | None:
    """Kind of a table from its column names (:mod:`tutormetrics.report.table_kinds`), or ``None`` when it is not one
    the report shows.

    Example:
        >>> classify(["metric", "target", "n", "rho"]), classify(["criterion", "n", "kappa"])
        ('correlations', 'agreement')
        >>> classify(["exchange_id", "resp_words"]), classify(["metric", "theta"])
        ('metrics', None)
    """
    cols = set(columns)
    kind = kind_of(cols)
    if kind is not None:
        return kind.name
    if "criterion" in cols and cols & _AGREEMENT_COLUMNS:
        return "agreement"
    if id_col in cols and len(cols) > 1 and "metric" not in cols:
        return "metrics"
    return None


def table_payload(df: pl.DataFrame, digits: int = 6) -> dict[str, Any]:
    """``{"columns": [...], "rows": [[...], ...]}`` with compact numbers and ``None`` for NaN.

    Example:
        >>> table_payload(pl.DataFrame({"a": ["x"], "b": [float("nan")]}))
        {'columns': ['a', 'b'], 'rows': [['x', None]]}
    """
    rows = [[compact(v, digits) for v in row] for row in df.iter_rows()]
    return {"columns": list(df.columns), "rows": rows}


def _header(path: Path) -> list[str]:
    if path.suffix.lower() == ".csv":
        return pl.scan_csv(path, infer_schema=False).collect_schema().names()
    if path.suffix.lower() == ".parquet":
        return pl.scan_parquet(path).collect_schema().names()
    return pl.scan_ndjson(path, n_rows=1).collect_schema().names()


def scan_folder(
    outdir: Path, id_col: str = "exchange_id", allowed: set[str] | None = None, skip: Iterable[str] = ()
) -> dict[str, list[Path]]:
    """Tables in ``outdir`` grouped by kind (see :func:`classify`), each list sorted by file name.

    Args:
        outdir: The folder.
        id_col: The exchange id column (a table with it is a metrics table).
        allowed: Only these file names (the verified files of ``run.json``: :mod:`tutormetrics.report.provenance`).
        skip: File names read for a known purpose instead (``run``'s ``targets.csv``).
    """
    found: dict[str, list[Path]] = {}
    skipped = set(skip)
    for path in sorted(outdir.iterdir()):
        if not path.is_file() or path.suffix.lower() not in _TABLE_SUFFIXES or path.name.startswith("."):
            continue
        if (allowed is not None and path.name not in allowed) or path.name in skipped:
            continue
        try:
            kind = classify(_header(path), id_col)
        except (pl.exceptions.PolarsError, OSError, ValueError):
            continue
        if kind is not None:
            found.setdefault(kind, []).append(path)
    return found


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _pick_metrics(candidates: list[Path], run: dict[str, Any]) -> Path | None:
    named = run.get("files", {}).get("metrics") if isinstance(run.get("files"), dict) else None
    for path in candidates:
        if named and Path(named).name == path.name:
            return path
    for path in candidates:
        if path.stem in ("metrics", "turns"):
            return path
    return max(candidates, key=lambda p: p.stat().st_size) if candidates else None


def _id_key(options: dict[str, Any]) -> IdKey:
    """The id of recorded score options: ``id_columns``/``id_sep`` (0.3), or the older ``id_column``."""
    if "id_columns" in options:
        return IdKey.of(options.get("id_columns"), options.get("id_sep") or "/")
    return IdKey.of(options.get("id_column") or "exchange_id")


def _exchange_texts(
    source: Path, ids: list[str], options: dict[str, Any], generated_ids: bool, notes: list[str]
) -> dict[str, tuple[str, str]]:
    """``{exchange_id: (prompt, response)}`` from the scored input, as ``score`` built them."""
    key = _id_key(options)
    id_col = key.column
    prompt_cols = list(options.get("prompt_columns") or ["prompt"])
    response_col = options.get("response_column", "response")
    try:
        df = read_table(source, options.get("input_format"), encoding=options.get("encoding", "utf8"), string_columns=True)
        df = with_key(df, key, str(source))  # a composite exchange_id, as score built it
    except TutorMetricsError as exc:
        notes.append(f"prompts and responses not shown: {str(exc).splitlines()[0]}")
        return {}
    missing = [c for c in [*prompt_cols, response_col] if c not in df.columns]
    if missing:
        notes.append(f"prompts and responses not shown: {source.name} lacks column(s) {', '.join(missing)}")
        return {}
    rows = exchange_rows(df, prompt_cols, response_col, id_column=None if generated_ids else id_col)
    texts: dict[str, tuple[str, str]] = {}
    for key, prompt, response in zip(*rows, strict=False):
        texts.setdefault(key, (prompt, response))
    wanted = set(ids)
    n_found = sum(1 for i in wanted if i in texts)
    if n_found < len(wanted):
        notes.append(f"{len(wanted) - n_found} of {len(wanted)} exchanges have no text in {source.name}")
    return texts


def _dialogues(source: Path, manifest: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """Whole conversations (every turn with its role and kind), read as scoring read them: the dialogue reader with
    the options the TURNS manifest records (columns, roles, ``--speaker``, ``--turn-tag``, ``--other-role``)."""
    from tutormetrics.dialogue.file_scoring import recorded_read_options
    from tutormetrics.dialogue.readers import read_conversations

    try:
        found = read_conversations(source, recorded_read_options(manifest))
    except TutorMetricsError as exc:
        notes.append(f"dialogue turns not shown: {str(exc).splitlines()[0]}")
        return []
    return [{"conversation_id": c.conversation_id,
             "turns": [{"turn": str(t.turn), "role": str(t.role or ""), "kind": t.kind, "text": t.text,
                        "exchange_id": f"{c.conversation_id}:{t.turn}"} for t in c.turns]}
            for c in found.conversations]  # fmt: skip


def _recorded_file(run: dict[str, Any], key: str) -> str | None:
    """The file name ``run.json`` records under ``files[key]`` (``None`` when it records none)."""
    files = run.get("files")
    value = files.get(key) if isinstance(files, dict) else None
    return Path(value).name if isinstance(value, str) and value else None


def _targets(outdir: Path, run: dict[str, Any], check: Any, id_col: str, notes: list[str]) -> tuple[pl.DataFrame | None, str | None]:
    """The rating targets as ``run`` correlated them (its ``targets.csv``, see the module docstring) and their key:
    ``id_col`` (per exchange or tutor turn) or ``conversation_id`` (a run validated per conversation)."""
    name = _recorded_file(run, "targets")
    if name is None:
        if run.get("ratings") and run.get("validated", True):
            notes.append("ratings per exchange not shown: run.json names no targets table (a run of an older "
                         "tutormetrics; run it again to see them)")  # fmt: skip
        return None, None
    path = outdir / name
    if not check.may_read(path) or not path.is_file():
        return None, None  # the stale banner says why
    header = _header(path)
    key = id_col if id_col in header else (CONVERSATION_ID if CONVERSATION_ID in header else None)
    if key is None:
        notes.append(f"ratings not shown: {name} is keyed by {header[0] if header else '?'}, neither by {id_col} nor by "
                     f"{CONVERSATION_ID}")  # fmt: skip
        return None, None
    return read_keyed(path, key), key


def _exchanges(
    metrics: pl.DataFrame, id_col: str, metric_order: list[str], described: list[ColumnDescription]
) -> dict[str, Any]:
    """Columnar exchange table: ids, fields (kept columns and flags, as text), values of the described metric
    columns (metric order first, aliases left out) and of the numeric flags, each value's family id (``diagnostic``
    for the flags)."""
    ids = metrics.get_column(id_col).cast(pl.String).to_list()
    shown = [d for d in described if not d.alias_of]
    names = [d.name for d in shown]
    numeric = [c for c in metric_order if c in names] + [c for c in names if c not in metric_order]
    flags = [c for c in metrics.columns if c in NOT_METRICS and metrics.schema[c].is_numeric()]
    skipped = {d.name for d in described if d.alias_of}
    fields = [c for c in metrics.columns if c != id_col and c not in numeric and c not in flags and c not in skipped]
    return {
        "ids": ids,
        "fields": {c: [_text(v) for v in metrics.get_column(c).to_list()] for c in fields},
        "values": {c: [compact(v) for v in metrics.get_column(c).cast(pl.Float64).to_list()] for c in numeric + flags},
        "families": column_families(shown) | {c: "diagnostic" for c in flags},
        "flags": [c for c in metrics.columns if c in NOT_METRICS],
    }


def nan_table(manifest: dict[str, Any], described: list[ColumnDescription]) -> dict[str, Any] | None:
    """The manifest's NaN counts as a table: metric, family, NaN, of (exchanges), share, why (reason: count).

    Example:
        >>> m = {"stats": {"n_exchanges": 4, "nan_counts": {"mattr": 3}, "nan_reasons": {"mattr": {"too_short": 3}}}}
        >>> nan_table(m, [ColumnDescription("mattr", "lexical_richness", "richness")])["rows"]
        [['mattr', 'lexical_richness', 3, 4, 0.75, 'too_short: 3']]
    """
    stats = manifest.get("stats") or {}
    counts, reasons = stats.get("nan_counts") or {}, stats.get("nan_reasons") or {}
    if not isinstance(counts, dict) or not counts:
        return None
    n = stats.get("n_exchanges") or None
    family = column_families(described)
    rows = []
    for col, k in counts.items():
        why = reasons.get(col) or {}
        rows.append([col, family.get(col, OTHER), k, n, compact(k / n) if n else None,
                     ", ".join(f"{r}: {c}" for r, c in why.items()) if isinstance(why, dict) else str(why)])
    return {"columns": ["metric", "family", "NaN", "of", "share", "why"], "rows": rows}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


#: Exchanges embedded by default; beyond it the drill-down holds a seeded random sample (the page stays usable).
MAX_EXCHANGES = 20_000


def _correlations(paths: list[Path], data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each correlation table split by ``control`` (raw first, ``correlations.csv`` first); the star legend of the first."""
    from tutormetrics.validity.heatmap import star_legend

    correlations = []
    for path in paths:
        df = read_table(path)
        data.setdefault("star_legend", star_legend(df))
        if "control" in df.columns:
            df = df.with_columns(pl.col("control").cast(pl.String).fill_null(""))
            for (control,), part in df.group_by("control", maintain_order=True):
                correlations.append({"file": path.name, "control": control or "", "table": table_payload(part.drop("control"))})
        else:
            correlations.append({"file": path.name, "control": "", "table": table_payload(df)})
    correlations.sort(key=lambda c: (c["control"] != "", c["file"] != "correlations.csv"))
    return correlations


def _metric_order(correlations: list[dict[str, Any]]) -> list[str]:
    """The metrics of the correlation tables in order of first appearance."""
    names = (row[c["table"]["columns"].index("metric")] for c in correlations for row in c["table"]["rows"])
    return list(dict.fromkeys(names))


def _input_texts(
    data: dict[str, Any], ex: dict[str, Any], source: Path | None, run: dict[str, Any], manifest: dict[str, Any],
    is_dialogue: bool, check: Any, notes: list[str],
) -> None:  # fmt: skip
    """Prompts and responses (or whole conversations) from the scored input, while it is the input that was scored."""
    if source is None:
        notes.append("prompts and responses not shown: the scored input is not recorded (pass --exchanges)")
    elif not source.is_file():
        notes.append(f"prompts and responses not shown: {source.name} not found (pass --exchanges)")
    elif check.input_matches("exchanges", source) is False:
        check.stale.append(f"prompts and responses not shown: {source.name} is not the input that was scored (its "
                           "SHA-256 differs from run.json); pass --exchanges with the scored file")  # fmt: skip
    elif is_dialogue:
        data["dialogues"] = _dialogues(source, manifest, notes)
        by_id = {t["exchange_id"]: t["text"] for d in data["dialogues"] for t in d["turns"]}
        _attach_texts(ex, {i: ("", by_id.get(i, "")) for i in ex["ids"] if i in by_id})
    else:
        texts = _exchange_texts(source, ex["ids"], manifest.get("options") or run.get("score_options") or {},
                                bool(manifest.get("generated_ids")), notes)
        _attach_texts(ex, texts)


@dataclass
class _Folder:
    """What every part of the page reads: the folder, its ``run.json``, what may be read, the tables by kind and the
    rating targets with their key."""

    outdir: Path
    run: dict[str, Any]
    check: Any
    found: dict[str, list[Path]]
    id_col: str
    targets: pl.DataFrame | None = None
    targets_key: str | None = None


def _exchange_section(data: dict[str, Any], folder: _Folder, metrics_path: Path, sample: tuple[int, int],
                      exchanges: Path | None) -> None:  # fmt: skip
    """The scored table's part of the page: its manifest, columns, NaN counts and the per-exchange drill-down
    (values, θ, the ratings ``run`` correlated, the texts); ``sample`` is ``(max_exchanges, seed)``."""
    notes: list[str] = data["notes"]
    id_col, check = folder.id_col, folder.check
    manifest_file = metrics_path.with_name(metrics_path.name + ".manifest.json")
    manifest = _read_json(manifest_file) if check.may_read(manifest_file) else {}
    data["manifest"] = manifest
    data["metrics_file"] = metrics_path.name
    metrics = read_keyed(metrics_path, id_col)
    described = describe_frame(metrics, source=metrics_path, exclude=not_metric_columns(id_col))
    data["columns"] = [d.to_dict() for d in described]
    nans = nan_table(manifest, described)
    if nans is not None:
        data["nan_table"] = nans
    max_exchanges, seed = sample
    if metrics.height > max_exchanges:
        notes.append(f"the exchange table and θ plots show a random sample of {max_exchanges:,} of {metrics.height:,} "
                     f"exchanges (seed {seed}); every statistic comes from all of them (--max-exchanges to change)")
        metrics = metrics.with_row_index("__row").sample(max_exchanges, seed=seed).sort("__row").drop("__row")
    ex = _exchanges(metrics, id_col, _metric_order(data["correlations"]), described)
    theta = theta_by_id(folder.found.get("theta", []), id_col, ex["ids"])
    if theta:
        ex["theta"] = theta
    targets = folder.targets if folder.targets_key == id_col else None
    ex["ratings"] = values_by_id(targets, id_col, ex["ids"], targets.columns) if targets is not None else {}
    is_dialogue = "tutor_turn" in metrics.columns and CONVERSATION_ID in metrics.columns
    _input_texts(data, ex, exchanges or _source(folder.run, manifest), folder.run, manifest, is_dialogue, check, notes)
    data["exchanges"] = ex


def _conversation_section(data: dict[str, Any], folder: _Folder, sample: tuple[int, int]) -> None:
    """The conversation rows (:mod:`tutormetrics.report.conversation_view`) when the folder has that level."""
    inputs = ConversationInputs(dialogues=data.get("dialogues"))
    tables = folder.found.get("conversations", [])
    named = _recorded_file(folder.run, "conversations")
    path = next((p for p in tables if p.name == named), None) or next((p for p in tables if p.stem == "conversations"), None)
    path = path or (tables[0] if tables else None)
    if path is not None:
        inputs.table, inputs.file = read_keyed(path, CONVERSATION_ID), path.name
        inputs.described = describe_frame(inputs.table, source=path, exclude=not_metric_columns())
    if folder.targets_key == CONVERSATION_ID:
        inputs.targets = folder.targets
    for theta_path in folder.found.get("theta", []):
        if CONVERSATION_ID in _header(theta_path) and folder.id_col not in _header(theta_path):
            inputs.theta = read_keyed(theta_path, CONVERSATION_ID)
            break
    view = conversation_view(inputs, notes=data["notes"], max_rows=sample[0], seed=sample[1])
    if view is None:
        return
    data["conversations"] = view
    if inputs.dialogues is not None:
        data["dialogues"] = keep_dialogues(inputs.dialogues, view["ids"])
    if (view["ratings"] or view["theta"]) and "exchanges" in data:
        data["notes"].append("The ratings and θ are per conversation: Every conversation shows them with each "
                             "conversation's measures and turns; the tutor turns carry their scores only.")  # fmt: skip


def _declared_sections(found: dict[str, list[Path]]) -> list[dict[str, Any]]:
    """The sections of the declared table kinds present (:mod:`tutormetrics.report.table_kinds`), each with its
    tables and the rows its flag marks."""
    sections = []
    for kind in DECLARED:
        tables = []
        for path in found.get(kind.name, []):
            table = read_table(path)
            tables.append({"file": path.name, "table": table_payload(table), "flagged": kind.flagged(table)})
        if tables:
            sections.append(kind.section() | {"tables": tables})
    return sections


def collect_study(outdir: Path, *, exchanges: Path | None = None, max_exchanges: int = MAX_EXCHANGES, seed: int = 0) -> dict[str, Any]:
    """Everything the report shows, read from ``outdir`` (plus the scored input for the texts).

    Raises :class:`InputSchemaError` only when ``outdir`` holds no table the report can show. No path of this machine
    is in it: files inside ``outdir`` are named relative to it, others by their name (``docs/commands/report.md#paths``).

    Args:
        outdir: A ``run`` folder, or a folder of tables written by the separate commands.
        exchanges: Overrides the input recorded in ``run.json`` / the metrics manifest (use it when the folder moved
            to another machine).
        max_exchanges: With more rows, the per-exchange (and per-conversation) parts hold a random sample of that many
            (input order kept) and a note says so; tables are never sampled.
        seed: The sample's seed.
    """
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise InputSchemaError(f"{outdir}: not a folder", hint="pass the output folder of `tutormetrics run` (or of score/validate/theta/agree)")
    run = _read_json(outdir / "run.json")
    id_col = _id_key(run.get("score_options") or {}).column
    from tutormetrics.report.provenance import check_folder

    check = check_folder(outdir, run)
    found = scan_folder(outdir, id_col, check.allowed, skip=[n for n in [_recorded_file(run, "targets")] if n])
    if not found:
        raise InputSchemaError(
            f"{outdir}: no table the report can show (metrics, correlations, agreement, theta, facets, summary, comparisons)",
            hint="run `tutormetrics run ... -o OUTDIR` first, or write those tables into OUTDIR",
        )
    notes: list[str] = []
    if check.unlisted:
        notes.append(f"not written by this run (run.json does not vouch for them): {', '.join(check.unlisted)}")
    data: dict[str, Any] = {"title": f"tutormetrics report: {outdir.resolve().name}", "run": run, "notes": notes,
                            "stale": check.stale}  # fmt: skip
    data["correlations"] = _correlations(found.get("correlations", []), data)
    level = level_banner(run)
    if level:
        notes.insert(0, level)
    for kind in ("agreement", "judge", "facets", "summary", "comparisons", "predictive"):
        if kind in found:
            data[kind] = [{"file": p.name, "table": table_payload(read_table(p))} for p in found[kind]]
    data["sections"] = _declared_sections(found)
    from tutormetrics.validity.heatmap import RHO_LIMIT, row_descriptions

    near = columns_near(outdir / "correlations.csv")  # every manifest in the folder (metrics, turns, conversations)
    rows = row_descriptions(_metric_order(data["correlations"]), near)
    data["families"] = family_labels(rows)  # the heatmap figure's family brackets: labels
    data["aliases"] = {d.name: d.alias_of for d in rows if d.alias_of}
    data["rho_limit"] = RHO_LIMIT
    folder = _Folder(outdir, run, check, found, id_col)
    folder.targets, folder.targets_key = _targets(outdir, run, check, id_col, notes)
    metrics_path = _pick_metrics(found.get("metrics", []), run)
    if metrics_path is not None:
        _exchange_section(data, folder, metrics_path, (max_exchanges, seed), exchanges)
    elif "theta" in found:
        data["theta_only"] = table_payload(read_table(found["theta"][0]))
    _conversation_section(data, folder, (max_exchanges, seed))
    return portable_page(data, outdir)


def level_banner(run: dict[str, Any]) -> str | None:
    """The level a dialogue run validated, in words (``docs/guide/dialogues.md``), from ``run.json``.

    >>> level_banner({"level": "conversation", "n_conversations": 12})[:60]
    'Validated per conversation: the ratings are keyed by convers'
    """
    if run.get("level") != "conversation":
        return None
    n = run.get("n_conversations")
    text = (f"Validated per conversation: the ratings are keyed by conversation_id, so correlations.csv and the heatmap "
            f"relate the conversation measures (counts, rates, mean_* of the turn metrics) to the ratings of "
            f"{n if n is not None else 'the'} conversations (n ≤ conversations).")  # fmt: skip
    if run.get("turn_level"):
        return text + (f" {run['turn_level']} is the turn level: each turn inherits its conversation's rating, the "
                       "intervals resample conversations and there is no p (reason inherited_rating).")  # fmt: skip
    return text + " The turn level needs --cluster-col conversation_id (intervals over conversations, no p)."


def _source(run: dict[str, Any], manifest: dict[str, Any]) -> Path | None:
    for value in (run.get("exchanges"), manifest.get("input")):
        if value:
            return Path(value)
    return None


def _attach_texts(ex: dict[str, Any], texts: dict[str, tuple[str, str]]) -> None:
    """Add ``texts`` (unique strings) and per-exchange ``prompt``/``response`` indexes into it (``-1``: none)."""
    if not texts:
        return
    pool: dict[str, int] = {}
    prompt_idx, response_idx = [], []
    for key in ex["ids"]:
        prompt, response = texts.get(key, (None, None))
        prompt_idx.append(-1 if prompt is None else pool.setdefault(prompt, len(pool)))
        response_idx.append(-1 if response is None else pool.setdefault(response, len(pool)))
    ex["texts"] = list(pool)
    ex["prompt"] = prompt_idx
    ex["response"] = response_idx
