"""Thin Typer commands for the psychometrics layer: ``theta`` (MFRM), ``agree`` and ``compare``.

Each command parses options, reads tables with :func:`tutormetrics.io.tables.read_table`, calls one library
function and writes the result with :func:`tutormetrics.io.tables.write_table`. Summaries go to stderr.
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
from typing import Annotated, Any, Optional

import polars as pl
import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands import theta
from tutormetrics.commands.options import split_list
from tutormetrics.errors import ConfigError, TutorMetricsError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import read_table, require_columns, write_table
from tutormetrics.psychometrics.ratings import Ratings
from tutormetrics.psychometrics.recode import apply_recode, parse_recode, recode_message

__all__ = ["register"]

_MODELS = {"auto": "auto", "binary": "binary", "partial-credit": "partial_credit", "partial_credit": "partial_credit"}
_ADJUST = ("holm", "bonferroni", "bh", "by", "none")
#: ``agree --raters`` also names the pair of the two-rater columns.
AGREE_OVERRIDES = {
    "raters": {
        "help": "'A,B': the two raters of the two-rater columns (default: the first two); or exchangeable: the labels are "
        "anonymous slots (e.g. uptake's slot1-3), so only the many-rater columns are filled (reason exchangeable_raters; "
        "the rater column may be absent; with --judge the reference is the human majority only).",
    }
}


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


def _clean(frame: pl.DataFrame, source: str, kwargs: dict[str, Any], exchangeable: bool = False) -> Ratings:
    """The long ratings of ``theta``/``agree`` (all four columns needed; the rater column may be absent with
    ``--raters exchangeable``) cleaned and scale-checked once (``--levels``, ``--drop-out-of-scale``); the fit
    and the agreement tables take the value as it is."""
    keys = ("id_col", "criterion_col", "score_col") if exchangeable else ("id_col", "rater_col", "criterion_col", "score_col")
    require_columns(frame, [kwargs[k] for k in keys], source="ratings")
    return Ratings.clean(
        frame, id_col=kwargs["id_col"], rater_col=kwargs["rater_col"], criterion_col=kwargs["criterion_col"],
        score_col=kwargs["score_col"], levels=opt.parse_levels(kwargs["levels"]), drop_out_of_scale=kwargs["drop_out_of_scale"],
        source=source, log=lambda m: typer.echo(m, err=True), exchangeable=exchangeable,
    )  # fmt: skip


def _is_exchangeable(raters: str | None) -> bool:
    """``--raters exchangeable`` (``datasets.md`` §5)."""
    from tutormetrics.psychometrics.exchangeable import EXCHANGEABLE

    return raters is not None and raters.strip() == EXCHANGEABLE


def recoded(frame: pl.DataFrame, recode: list[str] | None, *, score_col: str, id_col: str, source: str) -> pl.DataFrame:
    """``--recode`` applied to the score column right after reading (``effects.md`` §7), reported on stderr."""
    mapping = parse_recode(recode)
    if not mapping:
        return frame
    if score_col not in frame.columns:
        return frame  # the missing column is reported by the next step
    out, counts = apply_recode(frame, score_col, mapping, id_col=id_col, source=source)
    typer.echo(recode_message(mapping, counts), err=True)
    return out


def agree(
    ratings: Annotated[Path, typer.Argument(help="Long ratings table (exchange_id, rater, criterion, score); any number of raters, missing ratings allowed.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Agreement table (one row per criterion), or the judge table with --judge.")],
    judge: Annotated[
        Optional[list[str]],
        typer.Option("--judge", help="Rater NAME is an LLM judge (repeatable): agreement and leniency against each human rater and the human majority."),
    ] = None,
    confusion: Annotated[
        Optional[Path], typer.Option("--confusion", help="With --judge: also write the confusion counts (criterion x reference).")
    ] = None,
    n_resamples: Annotated[int, typer.Option("--n-resamples", min=0, help="Bootstrap resamples of units for the CIs.")] = 2000,
    n_boot: opt.OldNResamples = None,
    seed: Annotated[int, typer.Option("--seed", **opt.SEED_RANGE, help="Bootstrap seed.")] = 0,
    n_min: Annotated[int, typer.Option("--n-min", min=1, help="Fewer units with two ratings (or judge pairs) give NaN (too_few).")] = 10,
    na: Annotated[
        Optional[list[str]], typer.Option("--na", help="Scores meaning 'not applicable' (e.g. -1): those ratings are missing, dropped and counted.")
    ] = None,
    # --- κ-paradox and per-rater endorsement (effects.md §7, §8)
    recode: Annotated[
        Optional[list[str]], typer.Option("--recode", help="Recode scores FROM=TO before agreement (repeatable; TO empty = missing).")
    ] = None,
    per_rater: Annotated[
        Optional[Path], typer.Option("--per-rater", help="Also write the endorsement rate per criterion x rater here.")
    ] = None,
    **kwargs: Any,
) -> None:
    """Rater agreement per criterion: exact, Fleiss kappa, Krippendorff alpha (nominal/ordinal/interval), AC1 with CIs,
    plus the two-rater block (with PABAK, prevalence and bias indices, p_pos, p_neg); with --judge (repeatable), each
    LLM judge against each human and the human majority, with leniency columns (mean difference, % of maximum,
    over/under rates, sign, Bowker and Stuart-Maxwell tests)."""
    from tutormetrics.commands.studies import parse_codes
    from tutormetrics.ids import read_keyed
    from tutormetrics.psychometrics.na_codes import drop_na_codes, negative_category_warnings

    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    id_col, raters = kwargs["id_col"], kwargs["raters"]
    judges = split_list(judge) or []
    exchangeable = _is_exchangeable(raters)
    with _expected_errors():
        if confusion and not judge:
            raise ConfigError("--confusion needs --judge")
        if judge and raters and not exchangeable:
            raise ConfigError("--raters A,B and --judge cannot be combined", hint="--judge compares the judge with every human")
        if exchangeable and per_rater:
            raise ConfigError(
                "--per-rater needs named raters, but --raters exchangeable says the labels are anonymous slots",
                hint="drop --per-rater, or drop --raters exchangeable if the labels are people",
            )
        check_outputs([ratings], [output, confusion, per_rater])
        common = {"n_resamples": opt.renamed(n_resamples, n_boot, "--n-boot", "--n-resamples"), "seed": seed, "n_min": n_min}
        codes = parse_codes(na)
        both = sorted(set(codes or []) & set(parse_recode(recode) or {}))
        if both:
            raise ConfigError(f"score {both[0]:g} is given to both --na and --recode", hint="a score is either not applicable or recoded")
        raw = drop_na_codes(read_keyed(ratings, key, id_columns=[id_col], drop_parts=True), codes, score_col=kwargs["score_col"],
                            log=lambda m: typer.echo(m, err=True))  # fmt: skip
        frame = _clean(recoded(raw, recode, score_col=kwargs["score_col"], id_col=id_col, source=str(ratings)), str(ratings), kwargs,
                       exchangeable)  # fmt: skip
        columns = frame.columns()
        if not exchangeable and frame.long is not None:
            from tutormetrics.psychometrics.exchangeable import slot_warning

            slot = slot_warning(frame.long, exclude=judges)
            if slot:
                typer.echo(slot, err=True)
        if kwargs["levels"] is None:
            for line in negative_category_warnings(frame.frame, criterion_col=kwargs["criterion_col"], score_col=kwargs["score_col"]):
                typer.echo(line, err=True)
        if per_rater:
            from tutormetrics.psychometrics.agreement import clean_ratings
            from tutormetrics.psychometrics.kappa_paradox import per_rater_table

            long = clean_ratings(frame, **columns)
            per = per_rater_table(long, levels=opt.parse_levels(kwargs["levels"]))
            _write(per, per_rater)
            typer.echo(f"per-rater endorsement: {per.height} rows -> {per_rater}", err=True)
        if judges:
            _agree_judge(frame, judges, output, confusion, columns,
                         {**common, "levels": opt.parse_levels(kwargs["levels"]), "exchangeable": exchangeable})  # fmt: skip
        elif exchangeable:
            _agree_exchangeable(frame, output, columns, common)
        else:
            _agree_raters(frame, _parse_pair(raters), output, columns, common)


def _parse_pair(raters: str | None) -> tuple[str, str] | None:
    if not raters:
        return None
    parts = [r.strip() for r in raters.split(",") if r.strip()]
    if len(parts) != 2:
        raise ConfigError(f"--raters needs two names, got {raters!r}", hint="e.g. --raters alice,bob, or --raters exchangeable for anonymous slots")
    return parts[0], parts[1]


def _agree_raters(
    frame: Ratings, pair: tuple[str, str] | None, output: Path, columns: dict[str, str], common: dict[str, int]
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


def _agree_exchangeable(frame: Ratings, output: Path, columns: dict[str, str], common: dict[str, int]) -> None:
    """``agree --raters exchangeable``: the many-rater columns only (``datasets.md`` §5)."""
    from tutormetrics.psychometrics.agreement import agreement_table

    table = agreement_table(frame, **columns, **common, exchangeable=True)
    _write(table, output)
    flagged = table.filter(pl.col("reason").str.contains("one_rater|too_few|constant"))["criterion"].to_list()
    most = table["n_raters"].max()
    typer.echo(
        f"agreement: {table.height} criteria, up to {most} rating{'' if most == 1 else 's'} per unit; raters exchangeable "
        "(anonymous slots): the two-rater columns are empty"
        + (f"; see reason for {', '.join(flagged)}" if flagged else ""),
        err=True,
    )


def _agree_judge(
    frame: Ratings, judge: list[str], output: Path, confusion: Path | None, columns: dict[str, str], common: dict[str, object]
) -> None:
    from tutormetrics.psychometrics.judge import judge_table

    result = judge_table(frame, judge, **columns, **common)
    _write(result.table, output)
    if confusion:
        _write(result.confusion, confusion)
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    refs = result.table["reference"].unique(maintain_order=True).to_list()
    typer.echo(
        f"judge {', '.join(judge)}: {result.table['criterion'].n_unique()} criteria x {len(refs)} references ({', '.join(refs)})",
        err=True,
    )
    for r in result.table.filter(pl.col("reference") == "majority").iter_rows(named=True):
        if r["mean_judge"] is not None and r["pct_max_judge"] == r["pct_max_judge"]:
            typer.echo(
                f"leniency: {r['judge']} on {r['criterion']}: {r['pct_max_judge']:.1f}% of max vs humans {r['pct_max_ref']:.1f}% "
                f"(mean difference {r['mean_diff']:+.3f}, sign test p {r['sign_p']:.3g})",
                err=True,
            )


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
    seed: Annotated[int, typer.Option("--seed", **opt.SEED_RANGE, help="Seed for bootstrap and permutation p.")] = 0,
    # studies.md §2-§3 (issue 24): analysis subsets, families, directions and the bias summary
    strata: Annotated[
        Optional[list[str]], typer.Option("--strata", help="Split the rows by the crossed values of these columns (repeat or comma-separate), e.g. model,domain.")
    ] = None,
    family: Annotated[
        str, typer.Option("--family", help="Multiplicity family: metric (the pairs of one metric), dimension (one subset) or all (the table).")
    ] = "dimension",
    directions: Annotated[
        Optional[Path], typer.Option("--directions", help="CSV metric,desirable (higher|lower|neutral): fills the favoured column.")
    ] = None,
    summary: Annotated[
        Optional[Path], typer.Option("--summary", help="Also write the bias summary (|r_rb| per cell vs --threshold, violations, k of m improved).")
    ] = None,
    by: Annotated[Optional[list[str]], typer.Option("--by", help="--summary: one row per these keys (default metric).")] = None,
    cells: Annotated[Optional[list[str]], typer.Option("--cells", help="--summary: cell keys, must contain --by (default: --by).")] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="--summary: |r| at or above which a cell counts (default 0.10).")] = None,
    reduce: Annotated[Optional[str], typer.Option("--reduce", help="--summary: max or mean of the pairwise |r| of a 3+-level subset (default max).")] = None,
    violation_ci: Annotated[
        str,
        typer.Option("--violation-ci", help="Interval behind violation and the figure's mark: unadjusted (95%) or bonferroni (1 - 0.05/m per family)."),
    ] = "unadjusted",
) -> None:
    """Paired comparisons of groups matched on a block column, per analysis subset (--strata x --dimension): with
    3+ groups a Friedman row per metric (chi2, p, Kendall W), then corrected pairwise Wilcoxon rows (T+, p, r_rb, CI,
    violation, paired mean difference with its bootstrap CI); --summary writes the bias profile."""
    from tutormetrics.stats.paired import compare_groups, k_of_m_lines
    from tutormetrics.stats.studies import bias_summary
    from tutormetrics.metrics.columns import NOT_METRICS

    with _expected_errors():
        check_outputs([metrics, directions], [output, figure, summary])
        if adjust not in _ADJUST:
            raise ConfigError(f"unknown --adjust {adjust!r}", hint="use holm, bonferroni, bh, by or none")
        if family not in ("metric", "dimension", "all"):
            raise ConfigError(f"unknown --family {family!r}", hint="use metric, dimension or all")
        if violation_ci not in ("unadjusted", "bonferroni"):
            raise ConfigError(f"unknown --violation-ci {violation_ci!r}", hint="use unadjusted or bonferroni")
        summary_opts = {"--by": by, "--cells": cells, "--threshold": threshold, "--reduce": reduce}
        if summary is None and any(v is not None for v in summary_opts.values()):
            raise ConfigError(f"{', '.join(k for k, v in summary_opts.items() if v is not None)} need(s) --summary")
        if reduce is not None and reduce not in ("max", "mean"):
            raise ConfigError(f"unknown --reduce {reduce!r}", hint="use max or mean")
        strata_cols = split_list(strata) or []
        dims = split_list(dimension) or []
        allowed = {*strata_cols, "metric", *(("dimension", "dimension_value") if dims else ())}
        for opt_name, keys in (("--by", split_list(by)), ("--cells", split_list(cells))):
            bad = [k for k in keys or [] if k not in allowed]
            if bad:
                raise ConfigError(f"{opt_name}: unknown key(s) {bad}", hint=f"use {', '.join(sorted(allowed))}")
        dirs = _read_directions(directions) if directions else None
        if figure is not None and figure.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise ConfigError(f"{figure}: cannot tell the figure format", hint="name the figure .png, .svg or .pdf")
        pairs_min = opt.renamed(n_min, min_pairs, "--min-pairs", "--n-min")
        frame = read_table(metrics, id_columns=("exchange_id", "conversation_id", group_col, block_col))
        from tutormetrics.metrics.columns import describe_frame, metric_names

        described = describe_frame(frame, source=metrics, exclude={group_col, block_col, "exchange_id", "conversation_id"},
                                   log=lambda m: typer.echo(m, err=True), command="compare")  # fmt: skip
        cols = split_list(metrics_cols)
        if cols is None:  # the described metric columns (manifest, else the one fallback) but pairing, subsets, counts
            skip = {group_col, block_col, *strata_cols, *dims, *NOT_METRICS, "n_rows"}
            skip |= {f"{c}{suffix}" for c in frame.columns for suffix in ("_n", "_n_na")}
            cols = [c for c in metric_names(described) if c not in skip] or None
        if dirs is not None:
            missing = [c for c in cols or [] if c not in dirs]
            if missing:
                typer.echo(f"compare: no direction in {directions} for {', '.join(missing)} (favoured left empty)", err=True)
        table = compare_groups(
            frame,
            metric_cols=cols,
            group_col=group_col,
            block_col=block_col,
            groups=split_list([groups]) if groups else None,
            dimensions=dims,
            strata=strata_cols,
            adjust=adjust,  # type: ignore[arg-type]
            family=family,  # type: ignore[arg-type]
            directions=dirs,
            violation_ci=violation_ci,  # type: ignore[arg-type]
            n_min=pairs_min,
            n_resamples=n_resamples,
            seed=seed,
            log=lambda m: typer.echo(m, err=True),
        )
        metric_families = {d.name: d.family for d in described}
        table = table.insert_column(
            table.columns.index("metric") + 1,
            # the metric's family; ``family`` (studies.md §2.2) is the multiplicity family
            pl.Series("metric_family", [metric_families.get(m, "other") for m in table["metric"].to_list()], dtype=pl.String),
        )
        _write(table, output)
        for line in k_of_m_lines(table):
            typer.echo(line, err=True)
        if summary is not None:
            by_keys = split_list(by) or ["metric"]
            prof = bias_summary(
                table, by=by_keys, cells=split_list(cells) or by_keys, strata=strata_cols,
                threshold=0.10 if threshold is None else threshold, reduce=reduce or "max", directions=dirs,  # type: ignore[arg-type]
            )  # fmt: skip
            _write(prof, summary)
        if figure is not None:
            from tutormetrics.report.effects import plot_effect_matrix

            plot_effect_matrix(table, figure)
        n_friedman = int((table["test"] == "friedman").sum())
        n_violations = int(table["violation"].fill_null(False).sum())
        typer.echo(
            f"compare: {n_friedman} Friedman and {table.height - n_friedman} pairwise rows, adjust={adjust}, family={family}; "
            f"{n_violations} violation(s) ({'unadjusted 95%' if violation_ci == 'unadjusted' else 'Bonferroni-adjusted'} CI of r_rb "
            f"excludes 0 with n >= {pairs_min}; p_adj is {adjust}: the two can disagree)",
            err=True,
        )


def _read_directions(path: Path) -> dict[str, str]:
    """DIRS.csv (``metric, desirable``) as a dict; a desirable value other than higher|lower|neutral is exit 2."""
    from tutormetrics.io.tables import require_columns

    frame = read_table(path, string_columns=True)
    require_columns(frame, ["metric", "desirable"], source=str(path), option="--directions")
    out = {}
    for i, (metric, value) in enumerate(frame.select("metric", "desirable").iter_rows(), start=1):
        value = (value or "").strip().lower()
        if value not in ("higher", "lower", "neutral"):
            raise ConfigError(f"{path}: row {i}: desirable {value!r} for {metric!r}", hint="use higher, lower or neutral")
        out[str(metric)] = value
    return out


def register(app: typer.Typer) -> None:
    """Add the ``theta``, ``agree`` and ``compare`` commands to ``app``."""
    theta.register(app)  # the typed command (commands/theta.py)
    opt.command(app, "agree", agree, opt.COMMANDS["agree"], overrides=AGREE_OVERRIDES, outputs=("output", "confusion", "per_rater"))
    opt.command(app, "compare", compare, outputs=("output", "figure", "summary"))
