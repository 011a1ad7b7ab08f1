"""The embeddings side file of ``score --embeddings PATH`` (``docs/commands/predict.md#embeddings``).

The Scorer's one encoder pass per unique text already holds every text's mean-pooled last layer
(``EncodedTexts.pools[:, L]``, the sentence-transformers embedding). An :class:`EmbeddingSink` hooked into the
Scorer (``Scorer.encoded_observer``) copies, per exchange, the pooled vector of its **response**, of its
**prompt** and of each ``aux`` text (``prev_student`` under ``score --history-col``: the last student turn) into
memory — nothing is encoded again. :func:`write_embeddings` writes them as Parquet, one row per exchange in the
order of the metrics table: the id column, then one ``Array(Float32, d)`` column per view (an exchange without
that text gets a null), and ``PATH.manifest.json`` with the encoder's fingerprint and a hash of the ids, which
``predict`` checks against the metrics table (:func:`read_embeddings`).

Example:
    >>> import numpy as np
    >>> from tutormetrics.encoders.artifacts import EncodedTexts
    >>> from tutormetrics.metrics.base import ExchangeBatch
    >>> enc = EncodedTexts.empty_like(1, 2, 3)
    >>> enc.pools[:, 1] = [[1, 0], [0, 1], [1, 1]]
    >>> sink = EmbeddingSink()
    >>> sink.observe(ExchangeBatch(("e1", "e2"), np.array([0, 0]), np.array([1, 2])), enc)
    >>> sink.vectors(["e2", "e1"])["response"].tolist()
    [[1.0, 1.0], [0.0, 1.0]]
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.io.atomic import write_text_atomic
from tutormetrics.io.tables import write_table

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.encoders.artifacts import EncodedTexts
    from tutormetrics.engine.scorer import Scorer
    from tutormetrics.metrics.base import ExchangeBatch

#: The manifest's ``format``; a file of another format is refused.
FORMAT = "tutormetrics-embeddings/1"
#: The views every exchange has (aux views follow in the order the scorer names them).
BASE_VIEWS: tuple[str, ...] = ("response", "prompt")
MANIFEST_SUFFIX = ".manifest.json"
#: Which hidden states a side file keeps: the last layer (the sentence-transformers embedding) or all.
LAYERS: tuple[str, ...] = ("last", "all")


def embeddings_manifest_path(path: str | Path) -> Path:
    """``<path>.manifest.json``.

    >>> embeddings_manifest_path("emb.parquet").name
    'emb.parquet.manifest.json'
    """
    path = Path(path)
    return path.with_name(path.name + MANIFEST_SUFFIX)


def ids_digest(ids: Iterable[str]) -> str:
    """SHA-256 of the ids in order, one per line (what the manifest records and ``predict`` compares).

    >>> ids_digest(["a", "b"]) == ids_digest(["a", "b"]) != ids_digest(["b", "a"])
    True
    """
    h = hashlib.sha256()
    for i in ids:
        h.update(str(i).encode("utf8") + b"\n")
    return h.hexdigest()


@dataclass
class EmbeddingSink:
    """Collects each exchange's pooled vectors from the Scorer's encoder pass (``Scorer.encoded_observer``).

    ``rows`` maps an id to its views: ``(layers, d)`` float32 pools, or ``None`` for an aux text it lacks. ``layers``
    ``"last"`` keeps the last layer (the sentence-transformers embedding), ``"all"`` every hidden state ``0…L``.
    """

    layers: str = "last"
    rows: dict[str, dict[str, np.ndarray | None]] = field(default_factory=dict)
    views: list[str] = field(default_factory=lambda: list(BASE_VIEWS))
    hidden_size: int | None = None
    n_layers: int | None = None

    def observe(self, batch: ExchangeBatch, encoded: EncodedTexts) -> None:
        """Keep the pools of every exchange of a scored chunk (the Scorer calls it)."""
        pools = encoded.pools[:, -1:] if self.layers == "last" else encoded.pools
        self.hidden_size, self.n_layers = encoded.hidden_size, encoded.n_layers
        for name in batch.aux_idx:
            if name not in self.views:
                self.views.append(name)
        for k, ex_id in enumerate(batch.ids):
            views: dict[str, np.ndarray | None] = {
                "response": pools[batch.response_idx[k]].astype(np.float32),
                "prompt": pools[batch.prompt_idx[k]].astype(np.float32),
            }
            for name, idx in batch.aux_idx.items():
                views[name] = None if idx[k] < 0 else pools[idx[k]].astype(np.float32)
            self.rows[str(ex_id)] = views

    def missing(self, ids: Iterable[str]) -> list[str]:
        """The ids no scored chunk showed (chunks reused from a checkpoint)."""
        return [i for i in ids if str(i) not in self.rows]

    def columns(self) -> list[tuple[str, str, int]]:
        """``(column, view, layer index into the kept pools)``: ``view`` is the last layer, ``view_lNN`` layer NN."""
        if self.layers == "last":
            return [(v, v, 0) for v in self.views]
        n = int(self.n_layers or 0)
        return [(v if layer == n else f"{v}_l{layer:02d}", v, layer) for v in self.views for layer in range(n + 1)]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """``{column: (n, d) float32}`` in the order of ``ids`` (NaN rows where an exchange lacks the text)."""
        d = self.hidden_size or 0
        out: dict[str, np.ndarray] = {}
        for column, view, layer in self.columns():
            arr = np.full((len(ids), d), np.nan, dtype=np.float32)
            for r, i in enumerate(ids):
                v = self.rows[str(i)].get(view)
                if v is not None:
                    arr[r] = v[layer]
            out[column] = arr
        return out


@dataclass(frozen=True)
class EmbeddingRequest:
    """``score --embeddings PATH [--embedding-layers last|all]``: where the side file goes and which layers it keeps."""

    path: Path
    layers: str = "last"

    def __post_init__(self) -> None:
        if self.layers not in LAYERS:
            raise ConfigError(f"unknown --embedding-layers {self.layers!r}", hint=f"use one of {', '.join(LAYERS)}")
        if Path(self.path).suffix.lower() != ".parquet":
            raise ConfigError(f"--embeddings {self.path}: the side file is Parquet", hint="name it e.g. embeddings.parquet")


def attach_sink(scorer: Scorer, layers: str = "last") -> EmbeddingSink:
    """A new sink observing ``scorer``'s encoder pass (``layers``: ``last`` or ``all``); the scorer must run an
    encoder family."""
    if not scorer.needs_encoder:
        raise ConfigError(
            "--embeddings needs an encoder family: the vectors come from the scorer's encoder pass",
            hint="score with --metrics all (or a family of the encoder group)",
        )
    sink = EmbeddingSink(layers)
    scorer.encoded_observer = sink.observe
    return sink


def write_embeddings(
    path: Path, sink: EmbeddingSink, ids: Sequence[str], scorer: Scorer, *, id_column: str = "exchange_id",
    metrics_table: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Write the side file (Parquet, rows in the order of ``ids``) and its manifest; returns the manifest.

    Args:
        path: The Parquet file.
        sink: What the encoder pass showed (every id of ``ids``).
        ids: The metrics table's ids, in its order.
        scorer: The Scorer that ran (its encoder's description goes into the manifest).
        id_column: The id column's name (the metrics table's).
        metrics_table: The metrics table written beside it (recorded).
    """
    missing = sink.missing(ids)
    if missing:  # a bug, not bad input: every chunk is observed or completed
        raise RuntimeError(f"the embeddings of {len(missing)} exchanges were not observed, e.g. {missing[0]!r}")
    vectors = sink.vectors(ids)
    d = int(sink.hidden_size or 0)
    columns: dict[str, Any] = {id_column: pl.Series(list(map(str, ids)), dtype=pl.String)}
    for view, arr in vectors.items():
        present = np.isfinite(arr).all(axis=1)
        series = pl.Series(view, arr, dtype=pl.Array(pl.Float32, d))
        columns[view] = series if present.all() else pl.select(pl.when(pl.Series(present)).then(series)).to_series()
    write_table(pl.DataFrame(columns), path, "parquet")
    encoder = scorer.encoder.describe()
    manifest = {
        "format": FORMAT,
        "id_column": id_column,
        "n_rows": len(ids),
        "ids_sha256": ids_digest(ids),
        "views": list(vectors),
        "hidden_size": d,
        "layers": sink.layers,
        "n_layers": sink.n_layers,
        "pooling": encoder.get("pooling"),
        "encoder": {k: encoder.get(k) for k in ("fingerprint", "model_name_or_path", "backend", "quantize", "dtype")},
        "metrics_table": None if metrics_table is None else str(metrics_table),
    }
    write_text_atomic(embeddings_manifest_path(path), json.dumps(manifest, indent=2, default=str))
    return manifest


@dataclass
class EmbeddingTable:
    """A side file read back: ids in file order, ``{view: (n, d) float64}`` (NaN rows: no such text), manifest."""

    ids: list[str]
    views: dict[str, np.ndarray]
    manifest: dict[str, Any]

    @property
    def fingerprint(self) -> str | None:
        return (self.manifest.get("encoder") or {}).get("fingerprint")


def read_embeddings(path: str | Path, views: Sequence[str] | None = None) -> EmbeddingTable:
    """Read a side file (the columns of ``views``, default every view) and its manifest; anything else (no manifest,
    another format, ids that do not match the manifest's hash, a view it lacks, a vector of the wrong width) is an
    :class:`~tutormetrics.errors.InputSchemaError` (exit 2)."""
    path = Path(path)
    hint = "write it with `tutormetrics score ... --embeddings PATH` together with the metrics table"
    if not path.is_file():
        raise InputSchemaError(f"embeddings file {path} does not exist", hint=hint)
    try:
        manifest = json.loads(embeddings_manifest_path(path).read_text(encoding="utf8"))
    except (OSError, ValueError):
        raise InputSchemaError(f"embeddings file {path} has no readable manifest {embeddings_manifest_path(path).name}",
                               hint=hint) from None  # fmt: skip
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputSchemaError(f"{path} is not a tutormetrics embeddings file (format {FORMAT})", hint=hint)
    id_col, d = str(manifest.get("id_column", "exchange_id")), int(manifest.get("hidden_size", 0))
    held = [str(v) for v in manifest.get("views", [])]
    lacking = [v for v in views or () if v not in held]
    if lacking:
        raise InputSchemaError(f"the embeddings file {path} holds no view {', '.join(map(repr, lacking))}",
                               hint=f"views: {', '.join(held)} (score with --embedding-layers all for every layer)")  # fmt: skip
    views = list(dict.fromkeys(views)) if views else held
    try:
        frame = pl.read_parquet(path, columns=[id_col, *views])
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputSchemaError(f"embeddings file {path} could not be read: {str(exc).splitlines()[0]}", hint=hint) from exc
    ids = frame.get_column(id_col).cast(pl.String).to_list()
    if ids_digest(ids) != manifest.get("ids_sha256"):
        raise InputSchemaError(f"embeddings file {path}: its ids do not match its manifest (edited or mixed files)", hint=hint)
    out: dict[str, np.ndarray] = {}
    for view in views:
        col = frame.get_column(view)
        if not isinstance(col.dtype, pl.Array) or col.dtype.size != d:
            raise InputSchemaError(f"embeddings file {path}: column {view!r} is {col.dtype}, not {d}-wide vectors", hint=hint)
        out[view] = np.asarray(col.to_numpy(), dtype=np.float64).reshape(frame.height, d)  # a null row reads as NaN
    return EmbeddingTable(ids, out, manifest)


def check_matches(table: EmbeddingTable, ids: Sequence[str], metrics_manifest: Mapping[str, Any] | None, source: str) -> np.ndarray:
    """Row index into ``table`` of each metrics row; refuses (exit 2) another model's vectors or other ids.

    The model: the metrics table's manifest records the encoder's fingerprint when it ran an encoder family; the
    side file's must equal it. The ids: every metrics id has a row, and the side file holds no other id.

    Args:
        table: the embeddings side file, read.
        ids: the metrics table's ids, in its order.
        metrics_manifest: the metrics table's manifest, or ``None`` (no encoder check).
        source: the metrics file's name, for the messages.

    >>> t = EmbeddingTable(["a", "b"], {}, {"encoder": {"fingerprint": "f"}})
    >>> check_matches(t, ["b", "a"], {"encoder": {"fingerprint": "f"}}, "m.csv").tolist()
    [1, 0]
    """
    scored_with = ((metrics_manifest or {}).get("encoder") or {}).get("fingerprint")
    if scored_with is not None and table.fingerprint != scored_with:
        raise InputSchemaError(
            f"the embeddings come from encoder {table.fingerprint} but {source} was scored with encoder {scored_with}",
            hint="write both in one run: `tutormetrics score ... -o METRICS --embeddings PATH`",
        )
    where = {i: k for k, i in enumerate(table.ids)}
    lacking = [i for i in ids if i not in where]
    extra = len(set(table.ids) - set(map(str, ids)))
    if lacking or extra:
        head = f"{len(lacking):,} metrics row(s) have no embedding (e.g. {lacking[0]!r})" if lacking else ""
        tail = f"{extra:,} embedding row(s) are not in {source}" if extra else ""
        raise InputSchemaError(f"the embeddings file does not match {source}: " + "; ".join(p for p in (head, tail) if p),
                               hint="write both in one run: `tutormetrics score ... -o METRICS --embeddings PATH`")  # fmt: skip
    return np.array([where[str(i)] for i in ids], dtype=np.intp)


def finish_embeddings(
    path: Path, sink: EmbeddingSink, scorer: Scorer, chunks: Iterable[tuple[Any, ...]], *, id_column: str,
    metrics_table: Path | None,
) -> dict[str, Any]:  # fmt: skip
    """After a run: the ids of every chunk in output order, the chunks a resume reused from its checkpoint observed
    now (``scorer.score_chunk``: their texts come from the text cache the resume replayed), then
    :func:`write_embeddings`. ``chunks``: the run's chunks again, in order.

    Args:
        path: the Parquet side file to write.
        sink: what the encoder pass showed.
        scorer: the Scorer of the run (closed here).
        chunks: the run's chunks again, in output order.
        id_column: the id column's name (the metrics table's).
        metrics_table: the metrics table written beside it (recorded).
    """
    ids: list[str] = []
    try:
        for chunk in chunks:
            ids.extend(map(str, chunk[0]))
            if sink.missing(chunk[0]):
                scorer.score_chunk(chunk)
    finally:
        scorer.close()
    return write_embeddings(path, sink, ids, scorer, id_column=id_column, metrics_table=metrics_table)


class EmbeddingOutput:
    """A scoring job's side file: the sink attached to its Scorer now, the file written by the job's
    ``write_more`` step (after the output, before its manifest) from the job's chunks in order.

    Args:
        request: where the file goes and which layers it keeps.
        scorer: the job's Scorer (its encoder pass is observed).
        id_column: the output's id column.
    """

    def __init__(self, request: EmbeddingRequest, scorer: Scorer, id_column: str) -> None:
        self.request, self.scorer, self.id_column = request, scorer, id_column
        self.sink = attach_sink(scorer, request.layers)

    def write(self, chunks: Iterable[tuple[Any, ...]], metrics_table: Path | None) -> dict[str, Any]:
        """:func:`finish_embeddings` over ``chunks`` (the job's chunks again)."""
        return finish_embeddings(self.request.path, self.sink, self.scorer, chunks, id_column=self.id_column,
                                 metrics_table=metrics_table)  # fmt: skip
