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
    #: Metrics columns held fixed for the partial rows (``richness.md`` §1); empty = raw only.
    control: list[str] = field(default_factory=list)
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])


def run_pipeline(
    exchanges: Path,
    ratings: Path,
    outdir: Path,
    *,
    score_options: ScoreOptions,
    validate_options: ValidateOptions,
    theta: Path | None = None,
    log: Log = lambda _m: None,
) -> dict[str, Any]:
    """Run every step and return a summary (also written to ``outdir/run.json``)."""
    from tutormetrics.validity.correlate import correlate_with_targets, rho_matrix, split_by_control, summarize_correlations
    from tutormetrics.validity.heatmap import ceiling_note, plot_heatmap
    from tutormetrics.psychometrics.ratings import is_long_ratings, ratings_frame_to_targets, read_theta

    vo = validate_options
    id_col = score_options.id_column
    outdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    raw_ratings = read_table(ratings)
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
    metrics_path = outdir / "metrics.csv"
    score_file(exchanges, metrics_path, score_options, log=log)
    files["metrics"] = str(metrics_path)

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
    result = correlate_with_targets(
        read_table(metrics_path),
        tables,
        names=names,
        id_col=id_col,
        adjust=vo.adjust,
        ci=vo.ci,
        n_resamples=vo.n_resamples,
        seed=vo.seed,
        stars_on=vo.stars_on,
        n_min=vo.n_min,
        control=vo.control or None,
    )
    log("      " + result.report.summary().replace("\n", "\n      "))
    # With controls, correlations.csv holds the raw rows then the partial rows (richness.md §1.3);
    # the wide matrices and heatmaps come one per kind: raw, and *_partial.
    parts = split_by_control(result.table)
    write_table(result.table, outdir / "correlations.csv")
    files["correlations"] = str(outdir / "correlations.csv")
    kinds = [("", parts[""])] + ([("_partial", parts[",".join(vo.control)])] if vo.control else [])
    for suffix, part in kinds:
        write_table(rho_matrix(part), outdir / f"rho_matrix{suffix}.csv")
        files[f"rho_matrix{suffix}"] = str(outdir / f"rho_matrix{suffix}.csv")

    log("[4/4] drawing the heatmap" + ("s (raw and controlled)" if vo.control else ""))
    note = ceiling_note(result.joined, [c for c in result.target_cols if c != "theta"])
    for suffix, part in kinds:
        for fmt in vo.figure_formats:
            path = outdir / f"heatmap{suffix}.{fmt}"
            plot_heatmap(part, path, note=note or None, width_in=max(3.5, 1.6 + 0.55 * len(result.target_cols)))
            files[f"heatmap{suffix}_{fmt}"] = str(path)

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
