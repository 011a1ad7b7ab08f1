"""Thin Typer commands for the psychometrics layer: ``theta`` (MFRM), ``agree`` and ``compare``.

Each command parses options, reads tables with :func:`tutormetrics.io.read_table`, calls one library
function and writes the result with :func:`tutormetrics.io.write_table`. Summaries go to stderr.
Expected errors (:class:`~tutormetrics.errors.TutorMetricsError`) print one line plus a hint and exit 2.

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import split_list
from tutormetrics.errors import ConfigError, TutorMetricsError
from tutormetrics.io import check_outputs, read_table, write_table
from tutormetrics.psychometrics.ratings import check_scale, parse_levels

__all__ = ["register"]

_MODELS = {"auto": "auto", "binary": "binary", "partial-credit": "partial_credit", "partial_credit": "partial_credit"}
_ADJUST = ("holm", "bh", "by", "none")


def _write(table: pl.DataFrame, path: Path) -> None:
    """Write a result table (CSV text cells that a spreadsheet would run as formulas are guarded)."""
    write_table(table, path)


@contextlib.contextmanager
def _expected_errors() -> Iterator[None]:
    """Turn expected errors into one stderr message and their exit code (2); let typer.Exit through."""
    try:
        yield
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None


def theta(
    ratings: Annotated[Path, typer.Argument(help="Long ratings table (exchange_id, rater, criterion, score).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Theta table (csv/parquet/jsonl).")],
    facets: Annotated[Optional[Path], typer.Option("--facets", help="Also write the facet estimates here.")] = None,
    covariates: Annotated[Optional[Path], typer.Option("--covariates", help="Exchange-level covariate table.")] = None,
    covariate_col: Annotated[Optional[str], typer.Option("--covariate-col", help="Covariate column (default: all numeric).")] = None,
    groups: Annotated[Optional[Path], typer.Option("--groups", help="Exchange-level group table.")] = None,
    group_col: Annotated[Optional[str], typer.Option("--group-col", help="Group column in --groups.")] = None,
    model: Annotated[str, typer.Option("--model", help="auto, binary or partial-credit.")] = "auto",
    id_col: opt.TableIdColumn = "exchange_id",
    rater_col: opt.RaterColumn = "rater",
    criterion_col: opt.CriterionColumn = "criterion",
    score_col: opt.ScoreColumn = "score",
    levels: opt.Levels = None,
    drop_out_of_scale: opt.DropOutOfScale = False,
    method: Annotated[str, typer.Option("--method", help="mml (Gauss-Hermite MML + EAP) or nuts (Bayesian, needs the bayes extra).")] = "mml",
    draws: Annotated[int, typer.Option("--draws", min=1, help="nuts: draws kept per chain.")] = 1000,
    tune: Annotated[int, typer.Option("--tune", min=0, help="nuts: warm-up iterations per chain.")] = 1000,
    chains: Annotated[int, typer.Option("--chains", min=1, help="nuts: number of chains.")] = 4,
    sampler: Annotated[str, typer.Option("--sampler", help="nuts: nutpie or pymc.")] = "nutpie",
    seed: Annotated[int, typer.Option("--seed", help="nuts: random seed.")] = 0,
    compare_models_path: Annotated[
        Optional[Path],
        typer.Option("--compare-models", help="nuts: write the PSIS-LOO comparison of the nested models (needs --covariates and/or --groups)."),
    ] = None,
) -> None:
    """Estimate theta (EAP) per exchange with a many-facet Rasch model (MML, Gauss-Hermite; or Bayesian NUTS).

    With ``--method nuts`` the sampler diagnostics are written to ``<output stem>_diagnostics.csv``
    next to the output and summarised on stderr.
    """
    from tutormetrics.psychometrics.mfrm import fit_theta

    with _expected_errors():
        if model not in _MODELS:
            raise ConfigError(f"unknown --model {model!r}", hint="use auto, binary or partial-credit")
        if method not in ("mml", "nuts"):
            raise ConfigError(f"unknown --method {method!r}", hint="use mml or nuts")
        if sampler not in ("nutpie", "pymc"):
            raise ConfigError(f"unknown --sampler {sampler!r}", hint="use nutpie or pymc")
        diagnostics = output.with_name(f"{output.stem}_diagnostics.csv") if method == "nuts" else None
        check_outputs([ratings, covariates, groups], [output, facets, diagnostics, compare_models_path])
        if compare_models_path and method != "nuts":
            raise ConfigError("--compare-models needs --method nuts")
        if compare_models_path and covariates is None and groups is None:
            raise ConfigError("--compare-models needs --covariates and/or --groups")
        if covariate_col and covariates is None:
            raise ConfigError("--covariate-col needs --covariates")
        if group_col and groups is None:
            raise ConfigError("--group-col needs --groups")
        nuts = {"draws": draws, "tune": tune, "chains": chains, "sampler": sampler, "seed": seed} if method == "nuts" else {}
        ids = [id_col]
        ratings_df = check_scale(
            read_table(ratings, id_columns=ids), criterion_col=criterion_col, score_col=score_col, id_col=id_col,
            levels=parse_levels(levels), drop=drop_out_of_scale, source=str(ratings), log=lambda m: typer.echo(m, err=True),
        )  # fmt: skip
        cov_df = read_table(covariates, id_columns=ids) if covariates else None
        grp_df = read_table(groups, id_columns=ids) if groups else None
        columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
        result = fit_theta(
            ratings_df,
            **columns,
            covariates=cov_df,
            covariate_cols=covariate_col,
            groups=grp_df,
            group_col=group_col,
            model=_MODELS[model],  # type: ignore[arg-type]
            method=method,  # type: ignore[arg-type]
            **nuts,  # type: ignore[arg-type]
        )
        write_table(result.theta_table(), output)
        if facets:
            write_table(result.facets_table(), facets)
        if method == "nuts":
            diag_path = diagnostics
            write_table(result.diagnostics(), diag_path)  # type: ignore[union-attr]
            typer.echo(f"{result.diagnostic_summary}; per-parameter diagnostics: {diag_path}", err=True)  # type: ignore[union-attr]
        if compare_models_path:
            from tutormetrics.psychometrics.mfrm.bayes import compare_models

            loo = compare_models(
                ratings_df,
                **columns,
                covariates=cov_df,
                covariate_cols=covariate_col,
                groups=grp_df,
                group_col=group_col,
                model=_MODELS[model],
                **nuts,
            )
            write_table(loo, compare_models_path)
            best = loo.row(0, named=True)
            typer.echo(
                f"PSIS-LOO: best {best['model']} (elpd_loo {best['elpd_loo']:.1f} +/- {best['se']:.1f}); "
                + "; ".join(
                    f"{r['model']} elpd_diff {r['elpd_diff']:.1f} +/- {r['dse']:.1f}, p_loo {r['p_loo']:.1f}, "
                    f"{r['n_high_pareto_k']} ratings with Pareto k > {r['pareto_k_threshold']:.2f}"
                    for r in loo.iter_rows(named=True)
                    if r["rank"] > 0
                ),
                err=True,
            )
        typer.echo(
            f"MFRM {result.model}: {result.n_obs} observations, {result.n_items} exchanges, "
            f"{len(result.criteria)} criteria, {len(result.raters)} raters"
            + (" (rater facet dropped)" if len(result.raters) == 1 else "")
            + f"; EAP reliability {result.reliability:.3f}; converged {result.converged}",
            err=True,
        )
        if result.dropped_criteria:
            typer.echo(f"dropped criteria with a single observed score: {', '.join(result.dropped_criteria)}", err=True)
        if not result.converged:
            if method == "nuts":
                typer.echo("warning: NUTS diagnostics miss the thresholds; increase --draws/--tune before using the estimates", err=True)
            else:
                typer.echo(f"warning: optimiser did not converge ({result.message})", err=True)  # type: ignore[union-attr]


def agree(
    ratings: Annotated[Path, typer.Argument(help="Long ratings table (exchange_id, rater, criterion, score); any number of raters, missing ratings allowed.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Agreement table (one row per criterion), or the judge table with --judge.")],
    judge: Annotated[
        Optional[str],
        typer.Option("--judge", help="Rater NAME is an LLM judge: compare it with each human rater and the human majority."),
    ] = None,
    confusion: Annotated[
        Optional[Path], typer.Option("--confusion", help="With --judge: also write the confusion counts (criterion x reference).")
    ] = None,
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=0, help="Bootstrap resamples of units for the CIs.")] = 2000,
    n_boot: opt.OldNResamples = None,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    n_min: Annotated[int, typer.Option("--n-min", min=1, help="Fewer units with two ratings (or judge pairs) give NaN (too_few).")] = 10,
    raters: Annotated[Optional[str], typer.Option("--raters", help="The two raters of the two-rater columns, 'A,B' (default: the first two).")] = None,
    id_col: opt.TableIdColumn = "exchange_id",
    rater_col: opt.RaterColumn = "rater",
    criterion_col: opt.CriterionColumn = "criterion",
    score_col: opt.ScoreColumn = "score",
    levels: opt.Levels = None,
    drop_out_of_scale: opt.DropOutOfScale = False,
) -> None:
    """Rater agreement per criterion: exact, Fleiss kappa, Krippendorff alpha (nominal/ordinal/interval), AC1 with CIs,
    plus the two-rater block; with --judge, an LLM judge against each human and the human majority."""
    with _expected_errors():
        if confusion and not judge:
            raise ConfigError("--confusion needs --judge")
        if judge and raters:
            raise ConfigError("--raters and --judge cannot be combined", hint="--judge compares the judge with every human")
        check_outputs([ratings], [output, confusion])
        columns = {"id_col": id_col, "rater_col": rater_col, "criterion_col": criterion_col, "score_col": score_col}
        common = {"n_resamples": opt.renamed(n_resamples, n_boot, "--n-boot", "--n-resamples"), "seed": seed, "n_min": n_min}
        frame = check_scale(
            read_table(ratings, id_columns=[id_col]), criterion_col=criterion_col, score_col=score_col, id_col=id_col,
            levels=parse_levels(levels), drop=drop_out_of_scale, source=str(ratings), log=lambda m: typer.echo(m, err=True),
        )  # fmt: skip
        if judge:
            _agree_judge(frame, judge, output, confusion, columns, common)
        else:
            _agree_raters(frame, _parse_pair(raters), output, columns, common)


def _parse_pair(raters: str | None) -> tuple[str, str] | None:
    if not raters:
        return None
    parts = [r.strip() for r in raters.split(",") if r.strip()]
    if len(parts) != 2:
        raise ConfigError(f"--raters needs two names, got {raters!r}", hint="e.g. --raters alice,bob")
    return parts[0], parts[1]


def _agree_raters(
    frame: pl.DataFrame, pair: tuple[str, str] | None, output: Path, columns: dict[str, str], common: dict[str, int]
) -> None:
    from tutormetrics.psychometrics.agreement import agreement_table

    table = agreement_table(frame, raters=pair, **columns, **common)
    _write(table, output)
    flagged = table.filter(pl.col("reason").str.contains("one_rater|too_few|constant"))["criterion"].to_list()
    rater_a, rater_b = table["rater_a"][0], table["rater_b"][0]
    typer.echo(
        f"agreement: {table.height} criteria, up to {table['n_raters'].max()} raters; two-rater columns: "
        + (f"{rater_a} vs {rater_b}" if rater_b is not None else "none (one rater)")
        + (f"; see reason for {', '.join(flagged)}" if flagged else ""),
        err=True,
    )


def _agree_judge(
    frame: pl.DataFrame, judge: str, output: Path, confusion: Path | None, columns: dict[str, str], common: dict[str, int]
) -> None:
    from tutormetrics.psychometrics.judge import judge_table

    result = judge_table(frame, judge, **columns, **common)
    _write(result.table, output)
    if confusion:
        _write(result.confusion, confusion)
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    refs = result.table["reference"].unique(maintain_order=True).to_list()
    typer.echo(f"judge {judge}: {result.table['criterion'].n_unique()} criteria x {len(refs)} references ({', '.join(refs)})", err=True)


def compare(
    metrics: Annotated[Path, typer.Argument(help="Metrics table with one row per exchange.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Comparison table.")],
    group_col: Annotated[str, typer.Option("--group-col", help="Column with the groups, e.g. tutor.")] = "tutor",
    block_col: Annotated[str, typer.Option("--block-col", help="Pairing column, e.g. conversation_id.")] = "conversation_id",
    metrics_cols: Annotated[
        Optional[list[str]], typer.Option("--metrics-cols", help="Metric columns (repeat or comma-separate); default: all numeric.")
    ] = None,
    groups: Annotated[Optional[str], typer.Option("--groups", help="Groups to compare, 'A,B[,C]'; default: all.")] = None,
    dimension: Annotated[
        Optional[list[str]],
        typer.Option("--dimension", help="Run the analysis per value of this column (repeat for several), e.g. a demographic dimension."),
    ] = None,
    figure: Annotated[
        Optional[Path], typer.Option("--figure", help="Also draw the effect matrix (r_rb by metric x contrast): .png, .svg or .pdf.")
    ] = None,
    adjust: Annotated[str, typer.Option("--adjust", help="holm, bh, by or none.")] = "holm",
    n_min: Annotated[
        int, typer.Option("--n-min", min=1, help="Fewer complete pairs give NaN (too_few); a violation needs at least this many.")
    ] = 15,
    min_pairs: opt.OldMinPairs = None,
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=0, help="Bootstrap resamples for the r_rb CI.")] = 9999,
    seed: Annotated[int, typer.Option("--seed", help="Seed for bootstrap and permutation p.")] = 0,
) -> None:
    """Paired comparisons of groups matched on a block column: with 3+ groups a Friedman row per metric (chi2, p,
    Kendall W), then Holm-corrected pairwise Wilcoxon rows (T+, p, r_rb, CI, violation)."""
    from tutormetrics.stats.paired import compare_groups

    with _expected_errors():
        check_outputs([metrics], [output, figure])
        if adjust not in _ADJUST:
            raise ConfigError(f"unknown --adjust {adjust!r}", hint="use holm, bh, by or none")
        if figure is not None and figure.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise ConfigError(f"{figure}: cannot tell the figure format", hint="name the figure .png, .svg or .pdf")
        pairs_min = opt.renamed(n_min, min_pairs, "--min-pairs", "--n-min")
        frame = read_table(metrics, id_columns=("exchange_id", "conversation_id", group_col, block_col))
        from tutormetrics.metrics.columns import describe_frame, metric_names

        described = describe_frame(frame, source=metrics, exclude={group_col, block_col, "exchange_id", "conversation_id"})
        cols = split_list(metrics_cols)
        if cols is None:  # the described metric columns (manifest, else the one fallback)
            cols = metric_names(described) or None
        table = compare_groups(
            frame,
            metric_cols=cols,
            group_col=group_col,
            block_col=block_col,
            groups=split_list([groups]) if groups else None,
            dimensions=split_list(dimension),
            adjust=adjust,  # type: ignore[arg-type]
            n_min=pairs_min,
            n_resamples=n_resamples,
            seed=seed,
        )
        family = {d.name: d.family for d in described}
        table = table.insert_column(
            table.columns.index("metric") + 1,
            pl.Series("family", [family.get(m, "other") for m in table["metric"].to_list()], dtype=pl.String),
        )
        _write(table, output)
        if figure is not None:
            from tutormetrics.report.effects import plot_effect_matrix

            plot_effect_matrix(table, figure)
        n_friedman = int((table["test"] == "friedman").sum())
        n_violations = int(table["violation"].fill_null(False).sum())
        typer.echo(
            f"compare: {n_friedman} Friedman and {table.height - n_friedman} pairwise rows, adjust={adjust}; "
            f"{n_violations} violation(s) (CI of r_rb excludes 0 with n >= {pairs_min})",
            err=True,
        )


def register(app: typer.Typer) -> None:
    """Add the ``theta``, ``agree`` and ``compare`` commands to ``app``."""
    app.command("theta")(theta)
    app.command("agree")(agree)
    app.command("compare")(compare)
