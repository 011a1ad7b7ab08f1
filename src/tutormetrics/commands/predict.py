"""Thin Typer command ``predict``: grouped cross-validated predictive validity (``predictive.md`` §1).

The command parses options and calls :func:`tutormetrics.validity.predict_study.predict_study`;
scikit-learn is imported there, only when the command runs. Tables go to files; a summary to stderr.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import polars as pl
import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import log, split_list
from tutormetrics.errors import ConfigError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import infer_format, write_table

__all__ = ["register", "predict"]

# predict's own options, declared here together (plain Typer options).
GroupCol = Annotated[str, typer.Option("--group-col", help="METRICS column of dialogue labels (compared as text); folds and intervals keep a group together.")]
Folds = Annotated[int, typer.Option("--folds", help="Grouped folds K (at least 2).")]
Model = Annotated[str, typer.Option("--model", help="logistic (L2; ridge for continuous targets), ridge or hgb (gradient boosting).")]
ClassWeight = Annotated[str, typer.Option("--class-weight", help="none or balanced (n / (L·n_k) per row of level k).")]
Judge = Annotated[Optional[str], typer.Option("--judge", help="Rater NAME of the long ratings is an LLM judge: its scores are predictions, targets use the other raters.")]
JudgeCol = Annotated[Optional[list[str]], typer.Option("--judge-col", help="[TARGET=]COL: a METRICS column with a judge's value (bare COL: every target); repeatable.", show_default=False)]
Importance = Annotated[str, typer.Option("--importance", help="none or drop (refit without each metric family).")]
Predictions = Annotated[Optional[Path], typer.Option("--predictions", help="Also write the out-of-sample predictions (one row per target x model x row).", dir_okay=False)]
PredictCI = Annotated[str, typer.Option("--ci", help="percentile (cluster bootstrap over groups) or none.")]
PredictResamples = Annotated[int, typer.Option("--n-resamples", min=2, help="Cluster-bootstrap resamples.")]
Features = Annotated[str, typer.Option("--features", help="metrics, embedding (the encoder's representation, needs --embeddings) or both; with the representation a model 'metrics' and the difference all-metrics are added.")]
Embeddings = Annotated[Path | None, typer.Option("--embeddings", help="Embeddings side file written with the metrics table by `score --embeddings`.", dir_okay=False, show_default=False)]
Representation = Annotated[str, typer.Option("--representation", help="The representation block: comma-separated views of the embeddings file (response, prompt, prev_student, response_l04 ...), VIEW-VIEW or VIEW*VIEW, e.g. response,response-prompt,response*prompt.")]
Components = Annotated[int, typer.Option("--components", min=1, help="Principal components of the representation, fitted inside each training fold.")]
Decision = Annotated[str, typer.Option("--decision", help="argmax (most probable level) or ordinal (thresholds on the score tuned for macro-F1 by inner grouped CV on the training folds).")]


def predict(
    metrics: Annotated[Path, typer.Argument(help="Metrics table (csv/parquet/jsonl) with an id and a group column.", dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="PRED table: target x model x measure (.csv, .parquet or .jsonl).")],
    group_col: GroupCol,
    folds: Folds = 5,
    model: Model = "logistic",
    class_weight: ClassWeight = "none",
    judge: Judge = None,
    judge_col: JudgeCol = None,
    importance: Importance = "none",
    predictions: Predictions = None,
    ci: PredictCI = "percentile",
    n_resamples: PredictResamples = 2000,
    features: Features = "metrics",
    embeddings: Embeddings = None,
    representation: Representation = "response",
    components: Components = 128,
    decision: Decision = "argmax",
    **kwargs: Any,
) -> None:
    """How well the metrics together predict each criterion out of sample (grouped K-fold).

    Every step (imputation, standardisation, the choice of the best single metric) is fitted on the
    training folds only. Models: all metrics, the best single metric, controls alone, a judge, and
    each family left out (--importance drop). Measures (rho, AUC, exact and lenient macro-F1,
    accuracy, ...) are computed on the pooled out-of-sample predictions, with intervals that resample
    whole groups. Example:

        tutormetrics predict metrics.csv --ratings ratings.csv --group-col conversation_id -o pred.csv
    """
    from tutormetrics.ids import read_keyed
    from tutormetrics.psychometrics.ratings import theta_to_targets

    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    ratings, theta, id_col, control = kwargs["ratings"], kwargs["theta"], kwargs["id_col"], kwargs["control"]
    confidence_level, seed, n_min = kwargs["confidence_level"], kwargs["seed"], kwargs["n_min"]
    metrics_cols = kwargs["metrics_cols"]
    from tutormetrics.psychometrics.ratings_input import RatingOptions
    from tutormetrics.validity.predict_study import predict_study
    from tutormetrics.validity.predictive import PredictOptions

    infer_format(output)
    if predictions is not None:
        infer_format(predictions)
    if ratings is None and not theta:
        raise ConfigError("nothing to predict", hint="pass --ratings and/or --theta")
    check_outputs([metrics, ratings, embeddings, *(theta or [])], [output, predictions])
    options = PredictOptions(
        folds=folds, model=model, class_weight=class_weight, importance=importance, ci=ci, n_resamples=n_resamples,
        confidence_level=confidence_level, seed=seed, n_min=n_min, features=features, components=components,
        representation=representation, decision=decision,
    )  # fmt: skip
    options.check()
    from tutormetrics.validity.representation import check_features, load_representation

    source = load_representation(embeddings, metrics, representation) if embeddings is not None and features != "metrics" else None
    check_features(features, source)
    if embeddings is not None and features == "metrics":
        log("note: --embeddings is read only with --features embedding or both")
    ro = opt.from_kwargs(RatingOptions, kwargs)
    ids = ("exchange_id", "conversation_id", id_col, group_col)
    metrics_df = read_keyed(metrics, key, id_columns=ids)
    metrics_df = metrics_df.drop([p for p in key.id_parts if p != group_col and p in metrics_df.columns])  # ids, not features
    from tutormetrics.metrics.columns import describe_frame, metric_names

    # the metric columns and families of the table's manifest (else the one fallback): never guessed here
    described = describe_frame(metrics_df, source=metrics, exclude={id_col, group_col, "exchange_id", "conversation_id"},
                               log=log, command="predict")  # fmt: skip
    result = predict_study(
        metrics_df,
        group_col=group_col,
        ratings=read_keyed(ratings, key, id_columns=ids, drop_parts=True) if ratings is not None else None,
        theta=[theta_to_targets(read_keyed(p, key, drop_parts=True), id_col=id_col) for p in theta or []],
        id_col=id_col,
        metrics_cols=split_list(metrics_cols) or metric_names(described) or None,
        controls=split_list(control) or [],
        judge=judge,
        judge_cols=judge_col,
        rating_options=ro,
        options=options,
        ratings_source=str(ratings),
        families={d.name: d.family for d in described if d.family != "other"},  # an unknown column: its own family
        log=log,
        representation=source,
    )
    write_table(result.table, output)
    if predictions is not None:
        write_table(result.predictions, predictions)
    log(summarize_prediction(result.table))
    log(f"-> {output}" + (f" (out-of-sample predictions: {predictions})" if predictions is not None else ""))


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
            if model != "best_single" and lo is not None and lo == lo:
                text += f" [{_num(lo)}, {_num(hi)}]"
            parts.append(text)
        lines.append(f"{target} ({kind}) {measure}: " + "; ".join(parts))
    return "\n".join(lines)


def _num(v: float | None, signed: bool = False) -> str:
    if v is None or v != v:
        return "NaN"
    text = f"{abs(v):.3f}"
    text = text[1:] if text.startswith("0.") else text
    sign = "-" if v < 0 else ("+" if signed else "")
    return sign + text


def register(app: typer.Typer) -> None:
    """Add the ``predict`` command to ``app``."""
    opt.command(app, "predict", predict, opt.COMMANDS["predict"], outputs=("output", "predictions"))
