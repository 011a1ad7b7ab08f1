"""``tutormetrics run``: score → (θ by MFRM) → agreement → validate → heatmap, into one output folder.

Every step is the same library call the single commands make, so the pipeline and the commands
cannot drift apart. Scoring is checkpointed, so a rerun after an interruption resumes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tutormetrics import __version__
from tutormetrics.errors import InputSchemaError
from tutormetrics.io import read_table, write_table
from tutormetrics.engine.files import ScoreOptions, score_file

Log = Callable[[str], None]


@dataclass
class ValidateOptions:
    """Options of the validation step (same names as ``tutormetrics validate``)."""

    rater_col: str = "rater"
    criterion_col: str = "criterion"
    score_col: str = "score"
    aggregate: str = "mean"
    adjust: str = "bh"
    ci: str = "bca"
    n_resamples: int = 9999
    seed: int = 0
    stars_on: str = "p_adj"
    n_min: int = 10
    estimate_theta: bool = True
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])


def run_pipeline(
    exchanges: Path,
    ratings: Path,
    outdir: Path,
    *,
    score_options: ScoreOptions,
    validate_options: ValidateOptions,
    theta: Path | None = None,
    dialogue: Any = None,
    log: Log = lambda _m: None,
) -> dict[str, Any]:
    """Run every step and return a summary (also written to ``outdir/run.json``).

    With ``dialogue`` (a :class:`tutormetrics.dialogue.files.DialogueOptions`) the input holds
    conversations: scoring writes ``turns.csv`` and ``conversations.csv``; the ratings are keyed by
    ``exchange_id`` (``"{conversation_id}:{turn}"``, one tutor turn) or by ``conversation_id``. The turn
    level is always validated (``correlations.csv``, ``heatmap.*``); with conversation-keyed ratings the
    conversation level is validated too (``conversations_correlations.csv``, ``conversations_heatmap.*``).
    """
    from tutormetrics.validity.correlate import summarize_correlations
    from tutormetrics.psychometrics.ratings import is_long_ratings, ratings_frame_to_targets, read_theta

    vo = validate_options
    id_col = score_options.id_column
    outdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    raw_ratings = read_table(ratings, text_columns=("exchange_id", "conversation_id", id_col))
    if dialogue is not None:
        id_col = dialogue_ratings_key(raw_ratings, id_col, str(ratings))
    targets = ratings_frame_to_targets(
        raw_ratings,
        source=str(ratings),
        id_col=id_col,
        rater_col=vo.rater_col,
        criterion_col=vo.criterion_col,
        score_col=vo.score_col,
        aggregate=vo.aggregate,  # type: ignore[arg-type]
    )

    log("[1/4] scoring")
    levels: list[tuple[str, Path]] = []
    if dialogue is None:
        metrics_path = outdir / "metrics.csv"
        score_file(exchanges, metrics_path, score_options, log=log)
        files["metrics"] = str(metrics_path)
        levels.append(("", metrics_path))
    else:
        from tutormetrics.dialogue.files import score_dialogue_file

        turns_path, conv_path = outdir / "turns.csv", outdir / "conversations.csv"
        score_dialogue_file(exchanges, turns_path, score_options, dialogue, conversations_output=conv_path, log=log)
        files.update(turns=str(turns_path), conversations=str(conv_path))
        levels.append(("", turns_path))
        if id_col == "conversation_id":
            levels.append(("conversations_", conv_path))

    tables, names = [targets], ["ratings"]
    summary: dict[str, Any] = {"tutormetrics": __version__, "exchanges": str(exchanges), "ratings": str(ratings)}
    long = is_long_ratings(raw_ratings, criterion_col=vo.criterion_col, score_col=vo.score_col)
    if theta is not None:
        tables.append(read_theta(theta, id_col=id_col))
        names.append("theta")
        summary["theta"] = {"source": str(theta)}
    elif vo.estimate_theta and long:
        log("[2/4] no --theta given: estimating θ from the ratings with a many-facet Rasch model (MML, EAP)")
        theta_targets, fit = estimate_theta_targets(
            raw_ratings, id_col=id_col, rater_col=vo.rater_col, criterion_col=vo.criterion_col, score_col=vo.score_col
        )
        write_table(fit.theta_table(), outdir / "theta.csv")
        write_table(fit.facets_table(), outdir / "facets.csv")
        files.update(theta=str(outdir / "theta.csv"), facets=str(outdir / "facets.csv"))
        tables.append(theta_targets)
        names.append("theta")
        summary["theta"] = {"source": "mfrm", "reliability": fit.reliability, "converged": fit.converged}
        log(f"      {fit.summary()}")
    else:
        log("[2/4] θ: none given and not estimated (ratings are wide or --no-estimate-theta)")

    if long and vo.rater_col in raw_ratings.columns and raw_ratings[vo.rater_col].n_unique() >= 2:
        from tutormetrics.psychometrics.agreement import agreement_table

        agreement = agreement_table(
            raw_ratings, id_col=id_col, rater_col=vo.rater_col, criterion_col=vo.criterion_col, score_col=vo.score_col
        )
        write_table(agreement, outdir / "agreement.csv")
        files["agreement"] = str(outdir / "agreement.csv")

    log("[3/4] correlating metrics with ratings" + (" and θ" if len(tables) > 1 else ""))
    results = {}
    for prefix, path in levels:
        if prefix:
            log(f"      conversation level ({path.name})")
        results[prefix] = correlate_level(
            read_table(path, text_columns=("exchange_id", "conversation_id", id_col)),
            tables, names, id_col=id_col, outdir=outdir, prefix=prefix, vo=vo, files=files, log=log,
        )  # fmt: skip
    result = results[""]

    summary.update(
        files=files,
        join=result.report.summary(),
        n_metrics=len(result.metric_cols),
        targets=result.target_cols,
        score_options=asdict(score_options),
        validate_options=asdict(vo),
    )
    (outdir / "run.json").write_text(json.dumps(summary, indent=2, default=str))
    log(summarize_correlations(result.table, top=5))
    return summary


def correlate_level(
    metrics: pl.DataFrame,
    tables: list[pl.DataFrame],
    names: list[str],
    *,
    id_col: str,
    outdir: Path,
    prefix: str,
    vo: ValidateOptions,
    files: dict[str, str],
    log: Log,
) -> Any:
    """Correlate one metrics table with the targets; write ``{prefix}correlations.csv``,
    ``{prefix}rho_matrix.csv`` and ``{prefix}heatmap.*``. Returns the correlation result."""
    from tutormetrics.validity.correlate import correlate_with_targets, rho_matrix
    from tutormetrics.validity.heatmap import ceiling_note, plot_heatmap

    result = correlate_with_targets(
        metrics,
        tables,
        names=names,
        id_col=id_col,
        adjust=vo.adjust,
        ci=vo.ci,
        n_resamples=vo.n_resamples,
        seed=vo.seed,
        stars_on=vo.stars_on,
        n_min=vo.n_min,
    )
    log("      " + result.report.summary().replace("\n", "\n      "))
    write_table(result.table, outdir / f"{prefix}correlations.csv")
    write_table(rho_matrix(result.table), outdir / f"{prefix}rho_matrix.csv")
    files[f"{prefix}correlations"] = str(outdir / f"{prefix}correlations.csv")
    files[f"{prefix}rho_matrix"] = str(outdir / f"{prefix}rho_matrix.csv")
    if prefix == "":
        log("[4/4] drawing the heatmap")
    note = ceiling_note(result.joined, [c for c in result.target_cols if c != "theta"])
    for fmt in vo.figure_formats:
        path = outdir / f"{prefix}heatmap.{fmt}"
        plot_heatmap(result.table, path, note=note or None, width_in=max(3.5, 1.6 + 0.55 * len(result.target_cols)))
        files[f"{prefix}heatmap_{fmt}"] = str(path)
    return result


def dialogue_ratings_key(ratings: pl.DataFrame, id_col: str, source: str) -> str:
    """The id a dialogue run's ratings are keyed by: ``id_col`` (default ``exchange_id``, one tutor turn)
    when present, else ``conversation_id``.

    >>> dialogue_ratings_key(pl.DataFrame({"conversation_id": ["c1"], "score": [1]}), "exchange_id", "r.csv")
    'conversation_id'
    """
    if id_col in ratings.columns:
        return id_col
    if "conversation_id" in ratings.columns:
        return "conversation_id"
    raise InputSchemaError(
        f"{source}: ratings have neither {id_col!r} nor 'conversation_id'",
        hint="key dialogue ratings by exchange_id ('<conversation_id>:<turn>') or by conversation_id",
    )


def check_ratings_path(ratings: Path | None, example: bool) -> None:
    if ratings is None and not example:
        raise InputSchemaError("run needs ratings", hint="pass --ratings RATINGS, or --example for the bundled data")


def estimate_theta_targets(
    ratings: pl.DataFrame,
    *,
    id_col: str = "exchange_id",
    rater_col: str = "rater",
    criterion_col: str = "criterion",
    score_col: str = "score",
) -> tuple[pl.DataFrame, Any]:
    """θ (EAP of the descriptive MFRM, statistics.md §2.2) from long ratings, as a target table plus the fit.

    Returns ``(targets, fit)`` where ``targets`` has ``id_col`` and ``theta``.
    """
    from tutormetrics.psychometrics.mfrm import fit_mfrm
    from tutormetrics.psychometrics.ratings import theta_to_targets

    rater = rater_col if rater_col in ratings.columns else None
    fit = fit_mfrm(ratings, id_col=id_col, rater_col=rater, criterion_col=criterion_col, score_col=score_col)
    return theta_to_targets(fit.theta_table(), id_col=id_col), fit
