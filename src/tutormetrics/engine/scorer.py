"""The scoring suite: dedupe texts, build each shared artifact once, run every family, keep row order.

1. Texts are NFC-normalised and deduplicated (MRBench: 1,655 exchanges share 200 prompts).
2. ``T(x)`` and ``S(x)`` run once per unique text; the encoder runs once per unique text
   (one forward pass feeds the embedding and synchrony families). Each row gets a ``lang``
   (``docs/guide/languages.md``) from its response; under ``segmenter="rjieba"`` the texts of Chinese rows are
   kept apart from the same texts in other rows, since their tokens differ.
3. Every family scores the same read-only :class:`~tutormetrics.metrics.base.Artifacts`.
4. Input is processed in chunks of ``chunk_size`` exchanges, so memory stays flat as input grows.
5. A prompt may be a list of parts (a dialogue's context turns): the text families see the parts joined
   with ``"\n"``, the encoder encodes each part once and pools the prompt over its parts
   (:func:`tutormetrics.encoders.compose.pool_parts`, ``docs/guide/dialogues.md`` for the split at turn boundaries).
   A :class:`~tutormetrics.engine.prompt_parts.JoinedParts` prompt is its joined text for every family, the encoder
   included; either way ``T(x)`` of the prompt is built from its parts' tokens (``docs/design/dialogue.md#context-memory``).
6. ``aux`` texts (e.g. a dialogue's previous student turn) join the same pass; families read their
   indices from ``ExchangeBatch.aux_idx``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tutormetrics.engine.artifacts import score_text_families
from tutormetrics.engine.concurrency import parallel_map, worker_process
from tutormetrics.engine.prompt_parts import PART_SEPARATOR, JoinedParts
from tutormetrics.engine.run_stats import ScoreStats, merge_counts
from tutormetrics.engine.run_warnings import (
    MostlyNaNWarning,
    WindowingWarning,
    long_text_warning,
    mostly_nan_warnings,
)
from tutormetrics.errors import ConfigError
from tutormetrics.metrics.base import Artifacts, ExchangeBatch, Metric
from tutormetrics.metrics.columns import MANIFEST_KEY, ColumnDescription, describe_columns
from tutormetrics.metrics.registry import REGISTRY, MetricRegistry
from tutormetrics.progress import DEFAULT_EVERY, RunProgress, run_progress
from tutormetrics.text import check_lang, normalize, require_segmenter, segmenter_info, text_language

if TYPE_CHECKING:  # pragma: no cover
    from tutormetrics.encoders.artifacts import EncodedTexts
    from tutormetrics.encoders.config import EncoderConfig
    from tutormetrics.encoders.hf import TextEncoder
    from tutormetrics.encoders.resolve import ResolvedEncoder

DEFAULT_CHUNK_SIZE = 2048

#: A prompt: one text, or a list of parts (joined with "\n" for the text families, pooled for the encoder; a
#: :class:`JoinedParts` is its joined text for the encoder too).
Prompt = str | None | Sequence[str]


class Scorer:
    """Score exchanges with a set of metric families.

    With the text cache on, the texts of ``ENCODE_AHEAD_ROWS`` rows (2,048; whole chunks) are encoded together
    however small ``chunk_size`` is (:attr:`encode_ahead`).

    Args:
        metrics: family names, groups (``"all"``, ``"lexical"``, ``"encoder"``), or :class:`Metric` instances.
        encoder: an :class:`~tutormetrics.encoders.hf.EncoderConfig`, the
            :class:`~tutormetrics.encoders.resolve.ResolvedEncoder` of one (what a file run hands in: backend,
            export and fingerprint decided once) or a ready :class:`~tutormetrics.encoders.hf.TextEncoder`; only used
            when an encoder family is selected.
        chunk_size: exchanges per chunk (memory bound; texts are deduplicated within a chunk).
        progress: ``None`` shows a bar only on a terminal, ``True``/``False`` force it.
        n_jobs: worker processes for runs without an encoder family (encoder runs overlap the CPU
            families with the forward passes instead).
        cpu_overlap: where the CPU families run during the encoder pass: ``"thread"``, ``"process"``
            (one persistent worker), or ``"auto"`` (process when the encoder is on CUDA, else thread).
        lang: ``"auto"`` (the rule of ``docs/guide/languages.md`` on each response) or ``"en"``, ``"zh"``, ``"ja"``
            for every row; written to the ``lang`` column. Readability is NaN unless ``lang`` is ``en``.
        segmenter: ``"char"`` (one token per CJK character) or ``"rjieba"`` (Chinese word segmentation
            of Han runs in rows whose ``lang`` is ``zh``; extra ``tutormetrics[zh]``).
        cache_mb: memory for encoder results kept across chunks (:mod:`tutormetrics.engine.text_cache`):
            ``None`` sizes it for the machine, ``0`` turns the cache off (each chunk encodes its own texts).

    Example:
        >>> s = Scorer(["length", "overlap"])
        >>> s.score(["e1"], ["Where did the cat sit?"], ["The cat sat on the mat."])["jaccard_1"][0]
        0.25
    """

    #: Rows whose texts are encoded in one pass when the text cache is on (see :attr:`encode_ahead`).
    ENCODE_AHEAD_ROWS = DEFAULT_CHUNK_SIZE

    def __init__(
        self,
        metrics: str | Sequence[str | Metric] | None = None,
        *,
        encoder: EncoderConfig | ResolvedEncoder | TextEncoder | None = None,
        registry: MetricRegistry = REGISTRY,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: bool | None = None,
        id_column: str = "exchange_id",
        n_jobs: int = 1,
        cpu_overlap: str = "auto",
        lang: str = "auto",
        segmenter: str = "char",
        cache_mb: float | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ConfigError("chunk_size must be at least 1")
        if n_jobs < 1:
            raise ConfigError("n_jobs must be at least 1")
        self.n_jobs = n_jobs
        if cpu_overlap not in ("auto", "thread", "process"):
            raise ConfigError(f"cpu_overlap must be auto, thread or process, got {cpu_overlap!r}")
        self.cpu_overlap = cpu_overlap
        self.lang = check_lang(lang)
        self.segmenter = require_segmenter(segmenter)  # ConfigError now when rjieba is missing
        self._pool: Any = None
        self.families = _instantiate(metrics, registry)
        self.chunk_size = chunk_size
        self.progress = progress
        #: seconds between progress lines off a terminal (``docs/design/scoring.md#progress``), and what the rows are called in them
        self.progress_every = DEFAULT_EVERY
        self.progress_unit = "exchanges"
        self._run_progress: RunProgress | None = None  # the progress of the run under way (iter_scores)
        self.id_column = id_column
        self.stats = ScoreStats()
        self._encoder_arg = encoder
        self._encoder: TextEncoder | None = None
        self._resolved: ResolvedEncoder | None = None
        if cache_mb is not None and not cache_mb >= 0:
            raise ConfigError(f"cache_mb must be >= 0, got {cache_mb!r}")
        self.cache_mb = cache_mb
        self._text_cache: Any = None
        self._cache_ops: list[Any] = []  # text-cache lookups since take_cache_ops (the file scorer checkpoints them)
        #: Keep the text-cache lookups for :meth:`take_cache_ops` (set by the checkpointing file scorer).
        self.record_cache_ops = False
        #: Called with each chunk's batch and encoder values (``score --embeddings``: :mod:`tutormetrics.engine.embedding_file`).
        self.encoded_observer: Callable[[ExchangeBatch, EncodedTexts], None] | None = None
        self.requires = frozenset().union(*(f.requires for f in self.families))
        self._check_columns()

    # -- configuration -------------------------------------------------------------------------
    @property
    def needs_encoder(self) -> bool:
        return "encoder" in self.requires

    @property
    def encoder(self) -> TextEncoder:
        """The shared encoder (loaded on first use)."""
        if self._encoder is None:
            from tutormetrics.encoders.backend import make_encoder

            arg = self._encoder_arg
            self._encoder = arg if _is_text_encoder(arg) else make_encoder(self.resolved_encoder)
        return self._encoder

    @property
    def encoder_config(self) -> EncoderConfig:
        """The encoder's configuration (cheap: nothing is imported or loaded)."""
        from tutormetrics.encoders.config import EncoderConfig
        from tutormetrics.encoders.resolve import ResolvedEncoder

        if self._encoder is not None or _is_text_encoder(self._encoder_arg):
            return self.encoder.config
        arg = self._encoder_arg
        if isinstance(arg, ResolvedEncoder):
            return arg.config
        return arg if isinstance(arg, EncoderConfig) else EncoderConfig()

    @property
    def resolved_encoder(self) -> ResolvedEncoder:
        """The encoder's backend, export and fingerprint, decided once for this scorer (handed in, taken from a ready
        encoder, or resolved here on first use) and read by every layer: the encoder, the text cache, the run key,
        the manifest (``docs/design/scoring.md#the-run-key``)."""
        if self._resolved is None:
            from tutormetrics.encoders.resolve import ResolvedEncoder, resolve_encoder

            arg = self._encoder_arg
            if self._encoder is not None or _is_text_encoder(arg):
                self._resolved = self.encoder.resolved
            elif isinstance(arg, ResolvedEncoder):
                self._resolved = arg
            else:
                self._resolved = resolve_encoder(self.encoder_config)
        return self._resolved

    @property
    def n_layers(self) -> int | None:
        """The encoder's block count, read from the model folder until the encoder is loaded (no torch import)."""
        if not self.needs_encoder:
            return None
        if self._encoder is None and not _is_text_encoder(self._encoder_arg):
            from tutormetrics.encoders.config import read_layer_count

            n = read_layer_count(self.encoder_config.resolved_model_path())
            if n is not None:
                return n
        return self.encoder.n_layers

    def metric_columns(self) -> list[str]:
        n_layers = self.n_layers
        return [c for f in self.families for c in f.columns(n_layers)]

    def diagnostic_columns(self) -> list[str]:
        """Flags, not metrics: empty texts and ``lang`` always; encoder windows (and truncation) with an encoder."""
        cols = ["prompt_empty", "resp_empty", "lang"]
        if not self.needs_encoder:
            return cols
        cols += ["prompt_windows", "resp_windows"]
        if self.encoder_config.long_text == "truncate":
            cols += ["prompt_truncated", "resp_truncated"]
        return cols

    def columns(self) -> list[str]:
        """Output columns in order: id, metric columns by family, diagnostics."""
        return [self.id_column, *self.metric_columns(), *self.diagnostic_columns()]

    def column_directions(self) -> dict[str, bool | None]:
        return {c: d for f in self.families for c, d in f.column_directions(self.n_layers).items()}

    def nan_hints(self) -> dict[str, str]:
        """Each family's hint for a column that is NaN for most exchanges (``Metric.nan_hints``)."""
        return {c: h for f in self.families for c, h in f.nan_hints.items()}

    def column_families(self) -> dict[str, str]:
        return {c: f.name for f in self.families for c in f.columns(self.n_layers)}

    def column_descriptions(self, level: str | None = None) -> list[ColumnDescription]:
        """Family, label, direction, level, parameters and alias of every metric column (the manifest's ``columns``)."""
        return describe_columns(self.families, self.n_layers, level=level)

    def manifest(self, stats: Mapping[str, Any] | None = None, *, load_encoder: bool = True) -> dict[str, Any]:
        """Versions, parameters, encoder and syllable backend: everything needed to reproduce a run.

        ``stats``: the run's counts when this scorer did not count them (default: :attr:`stats`);
        ``load_encoder=False`` describes the encoder by its configuration (a driver that never loads the model).
        """
        import platform
        from importlib.metadata import version

        from tutormetrics import __version__

        info: dict[str, Any] = {
            "tutormetrics": __version__,
            "python": platform.python_version(),
            "polars": version("polars"),
            "numpy": np.__version__,
            "metrics": {f.name: {"class": type(f).__name__, "params": f.get_params()} for f in self.families},
            "chunk_size": self.chunk_size,
            "text": {"lang": self.lang, **segmenter_info(self.segmenter)},
            "stats": dict(vars(self.stats)) if stats is None else dict(stats),
            MANIFEST_KEY: [d.to_dict() for d in self.column_descriptions()],
        }
        if load_encoder and self.text_cache is not None:
            info["text_cache"] = self.text_cache.describe()
        for f in self.families:
            describe = getattr(f, "describe", None)
            if callable(describe):
                info["metrics"][f.name].update(describe())
        if self.needs_encoder and load_encoder:
            info["encoder"] = self.encoder.describe()
        elif self.needs_encoder:
            info["encoder"] = {"config": self.encoder_config.to_dict(), "fingerprint": self.resolved_encoder.fingerprint}
        return info

    # -- scoring -------------------------------------------------------------------------------
    def score(
        self,
        ids: Sequence[str],
        prompts: Sequence[Prompt],
        responses: Sequence[str | None],
        aux: Mapping[str, Sequence[str | None]] | None = None,
    ) -> pl.DataFrame:
        """Score aligned sequences of ids, prompts and responses; one output row per input row, same order.

        A prompt may be a list of parts (see the module docstring); ``aux`` maps a name to one further
        text per exchange (``None`` = none), encoded in the same pass and read by families through
        ``ExchangeBatch.aux_idx``.

        Args:
            ids: one id per exchange.
            prompts: one prompt (or list of parts) per exchange.
            responses: one response per exchange.
            aux: further texts by name, one per exchange (``None``: none).

        Example:
            >>> round(Scorer(["overlap"]).score(["e"], [["a rose", "is a rose"]], ["a rose"])["jaccard_1"][0], 6)
            0.666667
        """
        if not (len(ids) == len(prompts) == len(responses)):
            raise ConfigError("ids, prompts and responses must have the same length")
        if aux and any(len(v) != len(ids) for v in aux.values()):
            raise ConfigError("every aux text list must have one entry per exchange")
        chunks = _chunks(ids, prompts, responses, self.chunk_size, aux)
        if self.needs_encoder and self.encode_ahead > 1:
            chunks = _prefetched(self, chunks)
        frames = list(self.iter_scores(chunks, total=len(ids)))
        if not frames:
            return self.empty_frame()
        return pl.concat(frames, how="vertical")

    def iter_scores(
        self,
        chunks: Iterable[tuple[Any, ...]],
        *,
        total: int | None = None,
        initial: int = 0,
    ) -> Iterator[pl.DataFrame]:
        """Score an iterable of ``(ids, prompts, responses[, aux])`` chunks, yielding one frame per chunk, in order.

        With ``n_jobs > 1`` and no encoder family, chunks are scored in worker processes (results are
        identical: every metric is a pure function of its exchange).

        Args:
            chunks: ``(ids, prompts, responses[, aux])`` chunks.
            total: rows in all chunks (the progress total).
            initial: rows already done (a resumed run).
        """
        bar = run_progress(
            total, stage="score", unit=self.progress_unit, progress=self.progress, every=self.progress_every, initial=initial
        )
        self._run_progress = bar if isinstance(bar, RunProgress) else None  # the encoder reports its batches into it
        try:
            for frame, delta in self._scored_chunks(chunks):
                self.stats.merge(delta)
                bar.update(frame.height)
                yield frame
        finally:
            bar.close()
            self._run_progress = None
            self.close()
            self._warn_long_texts()
            self._warn_mostly_nan(self.stats)  # all chunks of the output, reused checkpoint chunks included

    def _scored_chunks(
        self, chunks: Iterable[tuple[Any, ...]]
    ) -> Iterator[tuple[pl.DataFrame, ScoreStats]]:
        yield from parallel_map(self.score_chunk, chunks, 1 if self.needs_encoder else self.n_jobs)

    def score_chunk(self, chunk: tuple[Any, ...]) -> tuple[pl.DataFrame, ScoreStats]:
        """One ``(ids, prompts, responses[, aux])`` chunk (as :meth:`score` takes them): its frame and its counts
        (not merged into :attr:`stats`)."""
        batch, art, parts, row_langs = self._artifacts(chunk)
        stripped = np.array([not t.strip() for t in art.texts], dtype=bool)
        p_idx, r_idx = batch.prompt_idx, batch.response_idx
        delta = ScoreStats(
            n_exchanges=len(batch),
            n_unique_texts=len(set(art.texts)),
            n_empty_prompts=int(stripped[p_idx].sum()),
            n_empty_responses=int(stripped[r_idx].sum()),
            n_lang_zh=row_langs.count("zh"),
            n_lang_ja=row_langs.count("ja"),
        )
        outputs = self._family_outputs(batch, art, parts, delta)
        n_layers = art.encoded.n_layers if art.encoded is not None else None
        data: dict[str, Any] = {self.id_column: list(batch.ids)}
        diagnostics: dict[str, Any] = {
            "prompt_empty": stripped[p_idx],
            "resp_empty": stripped[r_idx],
            "lang": pl.Series("lang", row_langs, dtype=pl.String),
        }
        for family in self.families:
            out = outputs[family.name]
            for col in family.columns(n_layers):
                if col not in out:
                    raise RuntimeError(f"metric {family.name!r} did not return column {col!r}")
                values = np.asarray(out[col], dtype=np.float64)
                if values.shape != (len(batch),):
                    raise RuntimeError(f"metric {family.name!r} returned {values.shape} values for {col!r}")
                data[col] = values + 0.0  # clamp -0.0
                n_nan = int(np.isnan(values).sum())
                if n_nan:
                    delta.nan_counts[col] = n_nan
            merge_counts(delta.nan_reasons, family.nan_reasons(batch, art))
        if art.encoded is not None:
            from tutormetrics.metrics.embedding import window_diagnostics

            diagnostics.update(window_diagnostics(art.encoded, p_idx, r_idx))
        for col in self.diagnostic_columns():
            data[col] = diagnostics[col]
        return pl.DataFrame(data), delta

    def _artifacts(self, chunk: tuple[Any, ...]) -> tuple[ExchangeBatch, Artifacts, list[tuple[str, ...] | None], list[str]]:
        """The chunk's distinct texts (NFC; rjieba rows apart) with each row's indices into them, each text's parts
        (a prompt of several turns; ``None`` for a plain text), and each row's ``lang`` (from its response)."""
        ids, prompts, responses = chunk[:3]
        aux: Mapping[str, Sequence[str | None]] | None = chunk[3] if len(chunk) > 3 else None
        texts: list[str] = []
        flags: list[bool] = []  # per text: segmented (rjieba) tokens rather than character tokens
        parts: list[tuple[str, ...] | None] = []  # per text: its parts when it is a joined prompt
        pieces: list[tuple[str, ...] | None] = []  # per text: the parts it joins (a list or JoinedParts prompt)
        index: dict[tuple[str | tuple[str, ...], bool], int] = {}
        langs: dict[str, str] = {}

        def lang_of(t: str) -> str:
            lang = langs.get(t)
            if lang is None:
                lang = langs[t] = text_language(t, self.lang)
            return lang

        def intern(t: Prompt, segmented: bool) -> int:
            key: str | tuple[str, ...]
            joined: tuple[str, ...] | None = None  # the parts of a JoinedParts prompt (its tokens are theirs)
            if isinstance(t, str) or t is None:
                key = normalize(t)
            elif isinstance(t, JoinedParts):  # scored as the joined text; only T(x) is built from the parts
                key = normalize(t.text())
                joined = tuple(normalize(x) for x in t) if len(t) > 1 else None
            else:
                key = tuple(normalize(x) for x in t)
                if len(key) <= 1:  # one part is that text; no parts is the empty text
                    key = key[0] if key else ""
            i = index.get((key, segmented))
            if i is None:
                i = index[(key, segmented)] = len(texts)
                texts.append(key if isinstance(key, str) else PART_SEPARATOR.join(key))
                parts.append(None if isinstance(key, str) else key)
                pieces.append(joined if isinstance(key, str) else key)
                flags.append(segmented)
            return i

        norm_responses = [normalize(r) for r in responses]
        row_langs = [lang_of(r) for r in norm_responses]
        seg = self.segmenter != "char"
        row_seg = [seg and lang == "zh" for lang in row_langs]
        p_idx = np.fromiter((intern(p, s) for p, s in zip(prompts, row_seg, strict=True)), dtype=np.int64, count=len(prompts))
        r_idx = np.fromiter((intern(r, s) for r, s in zip(norm_responses, row_seg, strict=True)), dtype=np.int64, count=len(responses))
        aux_idx = {
            name: np.array([-1 if v is None else intern(v, s) for v, s in zip(values, row_seg, strict=True)], dtype=np.int64)
            for name, values in (aux or {}).items()
        }
        batch = ExchangeBatch(tuple(str(i) for i in ids), p_idx, r_idx, aux_idx)
        art = Artifacts(texts=texts, langs=[lang_of(t) for t in texts], segmented=flags if seg else None,
                        pieces=pieces if any(p is not None for p in pieces) else None)  # fmt: skip
        return batch, art, parts, row_langs

    def _family_outputs(
        self, batch: ExchangeBatch, art: Artifacts, parts: list[tuple[str, ...] | None], delta: ScoreStats
    ) -> dict[str, Any]:
        """Every family's columns for the chunk; with encoder families, the CPU families run beside the encoder and
        ``delta`` gets the encoder's counts."""
        cpu_families = [f for f in self.families if "encoder" not in f.requires]
        encoder_families = [f for f in self.families if "encoder" in f.requires]
        if not encoder_families:
            return score_text_families(cpu_families, batch, art)
        texts = art.texts
        # The CPU families run beside the encoder so the lexical work hides under the forward
        # passes: in a thread on CPU (torch releases the GIL), in a worker process on a GPU,
        # where the encoder loop itself is Python-bound and a thread would contend for the GIL.
        if cpu_families and self._cpu_in_process():
            texts_only = Artifacts(texts=texts, langs=art.langs, segmented=art.segmented, pieces=art.pieces)  # not art: it gets the encoder values
            cpu_future = self._cpu_pool().submit(score_text_families, cpu_families, batch, texts_only)
            art.encoded, atoms = self._encode(texts, parts)
            outputs = {f.name: f.score(batch, art) for f in encoder_families}
            outputs.update(cpu_future.result())
        else:
            with ThreadPoolExecutor(max_workers=1) as pool:
                cpu_future = pool.submit(score_text_families, cpu_families, batch, art)
                art.encoded, atoms = self._encode(texts, parts)
                outputs = {f.name: f.score(batch, art) for f in encoder_families}
                outputs.update(cpu_future.result())
        if self.encoded_observer is not None:
            self.encoded_observer(batch, art.encoded)
        delta.n_encoded_texts = int((atoms.n_windows > 0).sum())
        delta.n_long_texts = int(((atoms.n_windows > 1) | atoms.truncated).sum())
        delta.n_encoded_tokens = int(atoms.n_content_tokens.sum() + self.encoder.n_special_tokens * atoms.n_windows.sum())
        return outputs

    def _encode(self, texts: list[str], parts: list[tuple[str, ...] | None]) -> tuple[EncodedTexts, EncodedTexts]:
        """Encoder values of every text, and of the texts actually encoded ("atoms").

        Without joined prompts the two are the same. Otherwise every distinct part and plain text is
        encoded once and each joined prompt is pooled over its parts.
        """
        if all(p is None for p in parts):
            unique = list(dict.fromkeys(texts))  # a text kept twice (segmented and not) is encoded once
            encoded = self._encode_atoms(unique)
            if len(unique) == len(texts):
                return encoded, encoded
            where = {t: i for i, t in enumerate(unique)}
            return encoded.subset([where[t] for t in texts]), encoded
        from tutormetrics.encoders.compose import pool_parts

        atoms: dict[str, int] = {}
        groups = [[atoms.setdefault(x, len(atoms)) for x in (p if p is not None else (t,))] for t, p in zip(texts, parts, strict=True)]
        encoded = self._encode_atoms(list(atoms))
        return pool_parts(encoded, groups, self.encoder.n_special_tokens), encoded

    @property
    def text_cache(self) -> Any:
        """The run's :class:`~tutormetrics.engine.text_cache.TextCache` (``None`` without encoder or with ``cache_mb=0``)."""
        if self._text_cache is None and self.needs_encoder and self.cache_mb != 0:
            from tutormetrics.engine.text_cache import TextCache, default_cache_mb

            mb = default_cache_mb() if self.cache_mb is None else self.cache_mb
            self._text_cache = TextCache(int(mb * 2**20), self.resolved_encoder.fingerprint)
        return self._text_cache

    def _encode_atoms(self, atoms: list[str]) -> EncodedTexts:
        """Encode distinct texts, through the text cache when there is one."""
        cache = self.text_cache
        if cache is None or not atoms:
            return self._encode_now(atoms)
        encoded, *op = cache.encode(atoms, self._encode_now)
        if self.record_cache_ops:
            self._cache_ops.append(tuple(op))
        return encoded

    def _encode_now(self, texts: list[str]) -> EncodedTexts:
        """The encoder on ``texts``, its batches reported into the run's progress (within the chunk) when there is one."""
        run = self._run_progress
        if run is None or not texts:
            return self.encoder.encode(texts, progress=self.progress)
        run.encoding(len(texts))
        return self.encoder.encode(texts, progress=run)  # type: ignore[arg-type]  # progress_bar takes a RunProgress

    @property
    def encode_ahead(self) -> int:
        """Chunks whose texts are encoded together (``ceil(ENCODE_AHEAD_ROWS / chunk_size)`` with the text cache, else 1).

        Small chunks (fine-grained checkpoints) would otherwise pad a few short replies to the length of a
        long shared prompt in every forward batch; encoding a window of chunks at once, longest first, and
        serving each chunk from the cache keeps the batches as full as with 2,048-row chunks.
        """
        if self.text_cache is None or self.chunk_size >= self.ENCODE_AHEAD_ROWS:
            return 1
        return -(-self.ENCODE_AHEAD_ROWS // self.chunk_size)

    @property
    def prefetch_piece(self) -> int:
        """Texts per piece of a window's encoder pass: ``chunk_size`` rounded up to whole forward batches.

        A window is encoded piece by piece, longest texts first, and each piece's results can be checkpointed
        (:meth:`prefetch` ``pieces``), so a kill loses at most one piece — about one chunk's encoding work —
        while the batches stay as full as one pass over the window (benchmarks/RESULTS.md §10).
        """
        batch = max(int(getattr(self.encoder_config, "batch_size", 32) or 32), 1)
        return -(-max(self.chunk_size, batch) // batch) * batch

    def prefetch(self, chunks: Sequence[tuple[Any, ...]], pieces: Any = None) -> None:
        """Encode the texts of ``chunks`` (``(ids, prompts, responses[, aux])``) into the text cache, in pieces of
        :attr:`prefetch_piece` texts, longest first. ``pieces`` (the file scorer's checkpoint of this window):
        ``pieces.load(k)`` gives piece k's cache lookups saved by an interrupted run (replayed, not encoded
        again) or ``None``; ``pieces.save(k, ops)`` keeps those of a piece just encoded."""
        if self.text_cache is None:
            return
        atoms: dict[str, None] = {}
        for chunk in chunks:
            prompts, responses = chunk[1], chunk[2]
            aux = chunk[3] if len(chunk) > 3 else None
            for p in prompts:
                if p is None or isinstance(p, str):
                    atoms[normalize(p)] = None
                elif isinstance(p, JoinedParts):
                    atoms[normalize(p.text())] = None
                else:
                    parts = [normalize(x) for x in p]
                    atoms.update(dict.fromkeys(parts or [""]))
            atoms.update(dict.fromkeys(normalize(r) for r in responses))
            for values in (aux or {}).values():
                atoms.update(dict.fromkeys(normalize(v) for v in values if v is not None))
        ordered = sorted(atoms, key=len, reverse=True)  # stable: ties keep their first-seen order
        size = self.prefetch_piece
        for k, start in enumerate(range(0, len(ordered), size)):
            saved = pieces.load(k) if pieces is not None else None
            if saved is not None:  # encoded by an interrupted run: rebuild the cache state it left
                self.text_cache.replay(saved)
                if self.record_cache_ops:
                    self._cache_ops.extend(saved)
                continue
            before = len(self._cache_ops)
            self._encode_atoms(ordered[start : start + size])
            if pieces is not None and self.record_cache_ops:
                pieces.save(k, self._cache_ops[before:])

    def take_cache_ops(self) -> list[Any]:
        """The text-cache lookups since the last call (what a chunk's checkpoint keeps), and forget them."""
        ops, self._cache_ops = self._cache_ops, []
        return ops

    def _cpu_in_process(self) -> bool:
        """Whether the CPU families get a worker process; decided without loading the model, so that the
        worker starts while the model loads."""
        if self.cpu_overlap != "auto":
            return self.cpu_overlap == "process"
        if self._encoder is not None and self._encoder.is_loaded:
            return self._encoder.device.type == "cuda"
        from tutormetrics.encoders.resolve import torch_installed

        if self.resolved_encoder.backend == "onnx" or not torch_installed():  # CPU only; no torch import
            return False  # (without torch the encoder itself says what to install)
        from tutormetrics.encoders.hf import resolve_device

        return resolve_device(self.encoder_config.device).type == "cuda"

    def _cpu_pool(self) -> Any:
        """One persistent worker process (forked or spawned) that scores the CPU families (created on first use)."""
        if self._pool is None:
            self._pool = worker_process()
        return self._pool

    def close(self) -> None:
        """Stop the CPU worker process, if one was started."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_pool"] = None
        state["encoded_observer"] = None  # the sink stays with the process that writes the side file
        state["_run_progress"] = None  # a worker process reports nothing (its heartbeat thread stays here)
        state["_text_cache"], state["_cache_ops"] = None, []  # a copy (a worker process) starts with an empty cache
        return state

    def empty_frame(self) -> pl.DataFrame:
        schema: dict[str, Any] = {self.id_column: pl.String}
        schema.update({c: pl.Float64 for c in self.metric_columns()})
        for c in self.diagnostic_columns():
            schema[c] = pl.Int64 if c.endswith("_windows") else pl.String if c == "lang" else pl.Boolean
        return pl.DataFrame(schema=schema)

    # -- helpers ---------------------------------------------------------------------------------
    def _check_columns(self) -> None:
        seen: dict[str, str] = {}
        n_layers = self.n_layers
        for f in self.families:
            for c in f.columns(n_layers):
                if c in seen:
                    raise ConfigError(f"metrics {seen[c]!r} and {f.name!r} both produce column {c!r}")
                if c == self.id_column:
                    raise ConfigError(f"metric {f.name!r} produces a column named like the id column {c!r}")
                seen[c] = f.name

    def _warn_mostly_nan(self, stats: ScoreStats) -> None:
        """One warning per metric column that is NaN for most exchanges of a run, with the reasons when known."""
        for message in mostly_nan_warnings(stats, self.nan_hints()):
            warnings.warn(message, MostlyNaNWarning, stacklevel=2)

    def _warn_long_texts(self) -> None:
        if not self.needs_encoder or not self.stats.n_long_texts:
            return
        enc = self.encoder
        message = long_text_warning(self.stats.n_long_texts, self.stats.n_encoded_texts, enc.max_seq_length, enc.config.long_text)
        warnings.warn(message, WindowingWarning, stacklevel=2)


def score_texts(
    prompts: Sequence[str | None],
    responses: Sequence[str | None],
    *,
    metrics: str | Sequence[str | Metric] | None = "lexical",
    ids: Sequence[str] | None = None,
    **kwargs: Any,
) -> pl.DataFrame:
    """Score two aligned lists of texts; returns a polars DataFrame keyed by ``exchange_id``.

    Args:
        prompts: one prompt per exchange.
        responses: one response per exchange.
        metrics: families or groups, as for :class:`Scorer`.
        ids: exchange ids (``0, 1, ...`` when ``None``).
        kwargs: further :class:`Scorer` arguments.

    >>> score_texts(["a rose is a flower which is a rose"], ["a rose is a rose is a rose"])["jaccard_2"][0]
    0.5
    """
    ids = list(ids) if ids is not None else [str(i) for i in range(len(prompts))]
    return Scorer(metrics, **kwargs).score(ids, prompts, responses)


def _instantiate(metrics: str | Sequence[str | Metric] | None, registry: MetricRegistry) -> list[Metric]:
    if metrics is None or isinstance(metrics, str):
        return [registry.get(n) for n in registry.resolve(metrics)]
    out: list[Metric] = []
    for m in metrics:
        if isinstance(m, Metric):
            out.append(m)
        elif isinstance(m, str):
            out.extend(registry.get(n) for n in registry.resolve(m))
        else:
            raise ConfigError(f"not a metric: {m!r}")
    if not out:
        raise ConfigError("no metrics selected")
    return out


def _is_text_encoder(obj: object) -> bool:
    """Whether ``obj`` is a ready encoder of either backend, without importing torch to find out."""
    from tutormetrics.encoders.backend import is_encoder

    return is_encoder(obj)


def _chunks(
    ids: Sequence[str],
    prompts: Sequence[Prompt],
    responses: Sequence[str | None],
    size: int,
    aux: Mapping[str, Sequence[str | None]] | None = None,
) -> Iterator[tuple[Any, ...]]:
    for start in range(0, len(ids), size):
        stop = start + size
        chunk: tuple[Any, ...] = (ids[start:stop], prompts[start:stop], responses[start:stop])
        yield chunk + ({k: v[start:stop] for k, v in aux.items()},) if aux else chunk


def _prefetched(scorer: Scorer, chunks: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The chunks, with the texts of each window of ``scorer.encode_ahead`` chunks encoded before its first."""
    from itertools import islice

    while window := list(islice(chunks, scorer.encode_ahead)):
        scorer.prefetch(window)
        yield from window

