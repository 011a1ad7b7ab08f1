"""The command ``predict``: grouped cross-validated predictive validity (``docs/commands/predict.md``).

The command parses :class:`PredictArgs`, reads the ratings once (:func:`~tutormetrics.psychometrics.ratings_input.read_ratings`)
and calls :func:`tutormetrics.validity.predict_files.predict_files`; scikit-learn is imported there, only when the
command runs. Tables go to files; a summary to stderr.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import check_table_path, write_data, write_result
from tutormetrics.commands.terminal import log
from tutormetrics.flags import argument, caption_flag, flag, ratings_file_flag, theta_files_flag
from tutormetrics.ids import TableIds
from tutormetrics.io.paths import check_outputs
from tutormetrics.progress import ProgressOptions, step_progress
from tutormetrics.psychometrics.ratings_input import RatingOptions
from tutormetrics.validity.predict_options import PredictColumns, PredictOptions

__all__ = ["PredictArgs", "predict", "register", "summarize_prediction"]


@dataclass(kw_only=True)
class PredictArgs:
    """The options of ``predict``: its files, the tables' ids, how ratings become targets, the columns used and
    the models (``docs/commands/predict.md``)."""

    metrics: Path = argument(help="Metrics table (csv/parquet/jsonl) with an id and a group column.", dir_okay=False)
    output: Path = flag("--output", "-o", help="PRED table: target x model x measure (.csv, .parquet, .jsonl; .md or .tex: paper table).")
    predictions: Path | None = flag(
        "--predictions", default=None, dir_okay=False,
        help="Also write the out-of-sample predictions (one row per target x model x row).",
    )
    ratings: Path | None = ratings_file_flag("Targets")
    theta: list[Path] = theta_files_flag("Targets")
    embeddings: Path | None = flag(
        "--embeddings", default=None, panel="Representation", dir_okay=False, show_default=False,
        help="Embeddings side file written with the metrics table by `score --embeddings`.",
    )
    ids: TableIds = field(default_factory=TableIds)
    rating: RatingOptions = field(default_factory=RatingOptions)
    columns: PredictColumns = field(default_factory=lambda: PredictColumns(group_col=""))
    fit: PredictOptions = field(default_factory=PredictOptions)
    shown: ProgressOptions = field(default_factory=ProgressOptions)
    caption: str | None = caption_flag()


def predict(args: PredictArgs) -> None:
    """How well the metrics together predict each criterion out of sample (grouped K-fold).

    Every step (imputation, standardisation, the choice of the best single metric) is fitted on the
    training folds only. Models: all metrics, the best single metric, controls alone, a judge, and
    each family left out (--importance drop). Measures (rho, AUC, exact and lenient macro-F1,
    accuracy, ...) are computed on the pooled out-of-sample predictions, with intervals that resample
    whole groups. Example:

        tutormetrics predict metrics.csv --ratings ratings.csv --group-col conversation_id -o pred.csv
    """
    from tutormetrics.psychometrics.ratings_input import read_ratings
    from tutormetrics.validity.predict_files import predict_files

    outputs = [args.output, *([args.predictions] if args.predictions is not None else [])]
    check_table_path(args.output)
    check_table_path(args.predictions, data=True, what="--predictions")
    check_outputs([args.metrics, args.ratings, args.embeddings, *(args.theta or [])], outputs)
    args.fit.check()  # a bad option stops before any table is read
    key = args.ids.key  # --id (repeatable: a composite exchange_id, docs/guide/datasets.md)
    ratings = read_ratings(args.ratings, args.rating, key, log=log) if args.ratings is not None else None
    with step_progress("predict", unit="fits", progress=args.shown.progress, every=args.shown.progress_every) as fits:
        result = predict_files(
            args.metrics, columns=args.columns, ratings=ratings, theta=args.theta or [], embeddings=args.embeddings,
            key=key, rating_options=args.rating, options=args.fit, log=log, progress=fits,
        )  # fmt: skip
    write_result(result.table, args.output, "predict", args.caption)
    if args.predictions is not None:
        write_data(result.predictions, args.predictions, "--predictions")
    log(summarize_prediction(result.table))
    log(f"-> {args.output}" + (f" (out-of-sample predictions: {args.predictions})" if args.predictions is not None else ""))


def summarize_prediction(table: pl.DataFrame) -> str:
    """One line per target: the headline measure of ``all`` and ``best_single``, their difference, and ``all-metrics``
    (the representation's incremental validity) when ``--features`` uses it.

    >>> t = pl.DataFrame({"target": ["y"] * 3, "kind": ["binary"] * 3, "model": ["all", "best_single", "all-best_single"],
    ...                   "measure": ["macro_f1"] * 3, "estimate": [0.8, 0.7, 0.1], "ci_low": [0.7, 0.6, 0.0],
    ...                   "ci_high": [0.9, 0.8, 0.2], "reason": [""] * 3})
    >>> print(summarize_prediction(t))
    y (binary) macro_f1: all .800 [.700, .900]; best_single .700; all-best_single +.100 [.000, .200]
    """
    lines = []
    for target in table.get_column("target").unique(maintain_order=True).to_list():
        sub = table.filter(pl.col("target") == target)
        kind = sub["kind"][0] or ""
        if sub["measure"][0] is None:
            lines.append(f"{target}: not fitted ({sub['reason'][0]})")
            continue
        measure = "rho" if kind == "continuous" else "macro_f1"
        parts = []
        for model in ("all", "best_single", "all-best_single", "all-metrics"):
            row = sub.filter((pl.col("model") == model) & (pl.col("measure") == measure))
            if not row.height:
                continue
            est, lo, hi = row["estimate"][0], row["ci_low"][0], row["ci_high"][0]
            text = f"{model} {_num(est, model.startswith('all-'))}"
            if model != "best_single" and lo is not None and lo == lo:  # noqa: PLR0124  (not NaN)
                text += f" [{_num(lo)}, {_num(hi)}]"
            parts.append(text)
        lines.append(f"{target} ({kind}) {measure}: " + "; ".join(parts))
    return "\n".join(lines)


def _num(v: float | None, signed: bool = False) -> str:
    if v is None or v != v:  # noqa: PLR0124  (NaN)
        return "NaN"
    text = f"{abs(v):.3f}"
    text = text[1:] if text.startswith("0.") else text
    sign = "-" if v < 0 else ("+" if signed else "")
    return sign + text


def register(app: typer.Typer) -> None:
    """Add the ``predict`` command to ``app``."""
    command(app, "predict", predict, outputs=("output", "predictions"))
