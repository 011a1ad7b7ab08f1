"""Thin Typer commands for the validity layer: ``validate`` (Spearman matrix) and ``heatmap``.

The commands only parse options and call library functions from :mod:`tutormetrics.validity`.
Tables go to files; the join summary and a short summary of the results go to stderr. Expected
errors are :class:`~tutormetrics.errors.InputSchemaError` / :class:`~tutormetrics.errors.ConfigError`,
which the main CLI turns into one line plus a hint and exit code 2.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import log, split_list
from tutormetrics.errors import ConfigError
from tutormetrics.io import infer_format, read_table, write_table

__all__ = ["register", "validate", "heatmap"]




#: Id columns read as text in every table (ids such as 007 keep their zeros).
ID_COLUMNS = ("exchange_id", "conversation_id")


def dialogue_id_column(columns: list[str], id_col: str) -> str:
    """``conversation_id`` for a dialogue CONV table (no ``exchange_id`` column) when ``--id`` was left at
    its default; otherwise ``id_col``."""
    if id_col != "exchange_id":
        return id_col
    if "exchange_id" not in columns and "conversation_id" in columns:
        log("note: no exchange_id column; joining on conversation_id (a dialogue CONV table)")
        return "conversation_id"
    return id_col


def validate(
    metrics: Annotated[Path, typer.Argument(help="Metrics table (csv/parquet/jsonl) with an id column.", dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Tidy correlation table (.csv, .parquet or .jsonl).")],
    ratings: Annotated[
        Optional[Path], typer.Option("--ratings", help="Ratings: long (id, rater, criterion, score) or wide.", dir_okay=False)
    ] = None,
    theta: Annotated[
        Optional[list[Path]], typer.Option("--theta", help="Theta table(s) with id, theta[, theta_sd]; repeatable.", dir_okay=False)
    ] = None,
    targets_from: Annotated[
        Optional[str], typer.Option("--targets-from", help="Comma-separated criteria (long) or columns (wide) to use as targets.")
    ] = None,
    metrics_cols: Annotated[
        Optional[str], typer.Option("--metrics-cols", help="Comma-separated metric columns (default: all numeric).")
    ] = None,
    id_col: opt.TableIdColumn = "exchange_id",
    rater_col: opt.RaterColumn = "rater",
    criterion_col: opt.CriterionColumn = "criterion",
    score_col: opt.ScoreColumn = "score",
    aggregate: Annotated[str, typer.Option("--aggregate", help="Rater aggregation: mean, per_rater, min or max.")] = "mean",
    adjust: Annotated[str, typer.Option("--adjust", help="Multiplicity over the whole matrix: bh, holm, by or none.")] = "bh",
    ci: Annotated[str, typer.Option("--ci", help="Confidence interval: bca, percentile, fisher or none.")] = "bca",
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=2, help="Bootstrap resamples.")] = 9999,
    confidence_level: Annotated[float, typer.Option("--confidence-level", min=0.5, max=0.999, help="CI level.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Seed for bootstrap and permutation draws.")] = 0,
    permutation: Annotated[
        str, typer.Option("--permutation", help="auto (permutation p when n < 50), always or never.")
    ] = "auto",
    n_permutations: Annotated[int, typer.Option("--n-permutations", min=1, help="Permutations for a permutation p.")] = 9999,
    stars_on: Annotated[str, typer.Option("--stars-on", help="Column the stars refer to: p_adj or p.")] = "p_adj",
    n_min: Annotated[int, typer.Option("--n-min", min=3, help="Fewest complete pairs for a defined cell.")] = 10,
    top: Annotated[int, typer.Option("--top", min=0, help="Strongest correlations to list on stderr.")] = 5,
    estimate_theta: Annotated[
        bool,
        typer.Option(
            "--estimate-theta/--no-estimate-theta",
            help="Without --theta, also estimate θ from long ratings with the MFRM (written to <output stem>_theta.csv); `run` does this by default.",
        ),
    ] = False,
) -> None:
    """Spearman ρ of every metric against every rating criterion and theta, with CIs and adjusted p."""
    from tutormetrics.validity.correlate import rho_matrix, summarize_correlations
    from tutormetrics.validity.correlate import correlate_with_targets
    from tutormetrics.psychometrics.ratings import is_long_ratings, ratings_frame_to_targets, read_theta

    infer_format(output)  # fail on a bad output name before any work
    if ratings is None and not theta:
        raise ConfigError("nothing to correlate against", hint="pass --ratings and/or --theta")
    metrics_df = read_table(metrics, text_columns=ID_COLUMNS + (id_col,))
    id_col = dialogue_id_column(metrics_df.columns, id_col)
    tables, names = [], []
    if ratings is not None:
        raw_ratings = read_table(ratings, text_columns=ID_COLUMNS + (id_col,))
        tables.append(
            ratings_frame_to_targets(
                raw_ratings,
                source=str(ratings),
                id_col=id_col,
                rater_col=rater_col,
                criterion_col=criterion_col,
                score_col=score_col,
                aggregate=aggregate,  # type: ignore[arg-type]
                columns=split_list(targets_from),
            )
        )
        names.append("ratings")
    elif targets_from:
        raise ConfigError("--targets-from needs --ratings")
    for k, path in enumerate(theta or []):
        tables.append(read_theta(path, id_col=id_col))
        names.append("theta" if k == 0 else f"theta{k + 1}")
    if ratings is not None and not theta and estimate_theta:
        raw = raw_ratings
        if is_long_ratings(raw, criterion_col=criterion_col, score_col=score_col):
            from tutormetrics.pipeline import estimate_theta_targets

            theta_targets, fit = estimate_theta_targets(
                raw, id_col=id_col, rater_col=rater_col, criterion_col=criterion_col, score_col=score_col
            )
            theta_path = output.with_name(f"{output.stem}_theta.csv")
            write_table(fit.theta_table(), theta_path)
            log(f"no --theta given: estimated θ from the ratings with the MFRM (EAP reliability {fit.reliability:.3f}) -> {theta_path.name}")
            tables.append(theta_targets)
            names.append("theta")
    result = correlate_with_targets(
        metrics_df,
        tables,
        names=names,
        id_col=id_col,
        metrics_cols=split_list(metrics_cols),
        adjust=adjust,
        ci=ci,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
        permutation=permutation,
        n_permutations=n_permutations,
        n_min=n_min,
        stars_on=stars_on,
    )
    log(result.report.summary())
    table, mcols, target_cols = result.table, result.metric_cols, result.target_cols
    write_table(table, output)
    matrix_path = output.with_name(f"{output.stem}_rho_matrix.csv")
    write_table(rho_matrix(table), matrix_path)
    log(f"{len(mcols)} metrics x {len(target_cols)} targets -> {output} (matrix: {matrix_path.name})")
    if top:
        log(summarize_correlations(table, top=top))


def heatmap(
    corr: Annotated[Path, typer.Argument(help="Correlation table written by `validate`.", dir_okay=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Figure file: .png, .svg or .pdf.")],
    value: Annotated[str, typer.Option("--value", help="Column to colour: rho (default), ci_low, ci_high, ...")] = "rho",
    mask_nonsignificant: Annotated[
        bool, typer.Option("--mask-nonsignificant", help="Fade cells without stars.")
    ] = False,
    order: Annotated[str, typer.Option("--order", help="Metric order within families: given or cluster.")] = "given",
    title: Annotated[Optional[str], typer.Option("--title", help="Figure title.")] = None,
    note: Annotated[Optional[str], typer.Option("--note", help="Note printed under the figure.")] = None,
    width: Annotated[float, typer.Option("--width", min=1.0, max=20.0, help="Figure width in inches (3.5 = one column).")] = 3.5,
    dpi: Annotated[int, typer.Option("--dpi", min=50, max=1200, help="Resolution for PNG.")] = 300,
) -> None:
    """Draw the metrics x targets heatmap of a correlation table."""
    from tutormetrics.validity.heatmap import plot_heatmap

    if order not in ("given", "cluster"):
        raise ConfigError(f"unknown --order {order!r}", hint="use given or cluster")
    plot_heatmap(
        read_table(corr),
        output,
        value=value,
        mask_nonsignificant=mask_nonsignificant,
        order=order,  # type: ignore[arg-type]
        title=title,
        note=note,
        width_in=width,
        dpi=dpi,
    )
    log(f"heatmap -> {output}")


def register(app: typer.Typer) -> None:
    """Add the ``validate`` and ``heatmap`` commands to ``app``."""
    app.command("validate")(validate)
    app.command("heatmap")(heatmap)
