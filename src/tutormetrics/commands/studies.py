"""Thin Typer commands for the study designs: ``aggregate`` (turn labels to rates, ``docs/commands/aggregate.md``)
and ``variability`` (ICC of repeated trials, ``docs/commands/variability.md``).

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import filter_rows, write_data, write_result
from tutormetrics.flags import argument, caption_flag, flag, where_flag
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import read_table, write_table
from tutormetrics.progress import Log
from tutormetrics.stats.aggregate import AggregateOptions, aggregate_rates
from tutormetrics.stats.variability import VariabilityOptions, trial_variability

__all__ = ["AggregateArgs", "VariabilityArgs", "aggregate", "register", "variability"]


@dataclass(kw_only=True)
class AggregateArgs:
    """``aggregate``'s input, output and options."""

    turns: Path = argument(help="Turn-level table: key columns and numeric (0/1) label columns.")
    output: Path = flag("--output", "-o", help="Rates table: keys, n_rows, then c, c_n, c_n_na per label column.")
    rates: AggregateOptions
    where: list[str] | None = where_flag()


def aggregate(args: AggregateArgs) -> None:
    """Turn labels to one rate per dialogue/condition: the mean of the non-missing values, with counts of values
    and of missing ones (--na codes and empty cells); feeds `tutormetrics compare`."""
    keys = args.rates.by
    check_outputs([args.turns], [args.output])
    res = aggregate_rates(filter_rows(read_table(args.turns, id_columns=keys), args.where, args.turns), args.rates)
    write_data(res.result, args.output, "aggregate -o")
    for note in res.notes:
        typer.echo(note, err=True)
    n_cols = (len(res.result.columns) - len(keys) - 1) // 3
    typer.echo(f"aggregate: {res.result.height} group(s) x {n_cols} label column(s) -> {args.output}", err=True)


@dataclass(kw_only=True)
class VariabilityArgs:
    """``variability``'s input, outputs and options."""

    table: Path = argument(help="One row per (group, unit, trial) with numeric columns, e.g. summarize --totals-out.")
    output: Path = flag("--output", "-o", help="ICC table: six forms per group x variable (.csv, .parquet, .jsonl; .md or .tex: paper table).")
    trials: VariabilityOptions = field(default_factory=VariabilityOptions)
    units_out: Path | None = flag("--units-out", default=None, help="Also write the per-unit spread (mean, sd, min, max over trials).")
    caption: str | None = caption_flag()
    where: list[str] | None = where_flag()


def variability(args: VariabilityArgs) -> None:
    """Response variability across repeated trials: the six ICC forms (Shrout-Fleiss ICC1..ICC3k and McGraw-Wong
    ICC(1,1)..ICC(C,k)) with F tests and 95% CIs, the pooled within-unit SD and the mean per-unit SD."""
    check_outputs([args.table], [args.output, args.units_out])
    frame = filter_rows(read_table(args.table, id_columns=args.trials.id_columns), args.where, args.table)
    result = trial_variability(frame, args.trials, log=_echo)
    write_result(result.icc, args.output, "variability", args.caption)
    if args.units_out:
        write_data(result.units, args.units_out, "--units-out")
    icc = result.icc
    flagged = icc.filter(icc["reason"] != "")
    typer.echo(
        f"variability: {icc['group'].n_unique()} group(s) x {icc['variable'].n_unique()} variable(s), six ICC forms each -> {args.output}"
        + (f"; {flagged.height // 6} with a reason (see the reason column)" if flagged.height else ""),
        err=True,
    )


def _echo(message: str) -> None:
    typer.echo(message, err=True)


def run_fairness_example(output: Path, *, n_resamples: int = 2000, seed: int = 0, log: Log = _echo) -> dict[str, Path]:
    """``run --example fairness`` (``docs/studies.md#fairness-audit``): the EduFair-Bench design on the bundled turn labels.

    aggregate (per question, model, domain, dimension, level; −1 missing) → compare per model × domain
    stratum and per dimension value (Friedman + pairwise Wilcoxon, ``--family metric``, directions) →
    the bias summary per model over (model, domain, dimension_value) cells → the effect figure.
    Writes ``rates.csv, fair.csv, cells.csv, effects.png`` under ``output``.

    Args:
        output: The folder the four files are written to (created if missing).
        n_resamples: Resamples of the pairwise tests (``--n-resamples``).
        seed: Seed of the resampling.
        log: Where the progress lines go (default: stderr).
    """
    from tutormetrics.examples import fairness_example_paths
    from tutormetrics.report.effects import plot_effect_matrix
    from tutormetrics.stats.aggregate import aggregate_labels
    from tutormetrics.stats.paired import compare_groups, k_of_m_lines
    from tutormetrics.stats.studies import bias_summary

    paths = fairness_example_paths()
    output = Path(output)
    files = {name: output / f"{name}.{ext}" for name, ext in (("rates", "csv"), ("fair", "csv"), ("cells", "csv"), ("effects", "png"))}
    check_outputs([paths["turns"], paths["directions"]], list(files.values()))
    output.mkdir(parents=True, exist_ok=True)
    keys = ["question_id", "model", "domain", "dimension", "level"]
    labels = ["step_scaffolded", "corrective_tone", "answer_leakage"]
    rates = aggregate_labels(read_table(paths["turns"], id_columns=keys), by=keys, cols=labels, na=[-1])
    for note in rates.notes:
        log(note)
    write_table(rates.result, files["rates"])
    directions = dict(read_table(paths["directions"], string_columns=True).select("metric", "desirable").iter_rows())
    log(f"fairness example: {rates.result.height} dialogues; comparing levels per model x domain x dimension ...")
    table = compare_groups(
        rates.result, metric_cols=labels, group_col="level", block_col="question_id", strata=["model", "domain"],
        dimensions=["dimension"], groups=["female", "male", "low", "mid", "high"], family="metric", directions=directions,
        n_resamples=n_resamples, seed=seed, log=log,
    )  # fmt: skip
    write_table(table, files["fair"])
    for line in k_of_m_lines(table):
        log(line)
    cells = bias_summary(table, by=["model"], cells=["model", "domain", "dimension_value"], strata=["model", "domain"], directions=directions)
    write_table(cells, files["cells"])
    plot_effect_matrix(table, files["effects"])
    for r in cells.iter_rows(named=True):
        log(f"{r['model']}: mean |r| {r['mean_abs_r']:.3f}, {r['n_ge_threshold']} of {r['n_cells']} domain-dimension cells >= {r['threshold']:g} "
            f"(max {r['max_abs_r']:.3f} at {r['max_cell']}); {r['n_violations']} violation(s) in {r['n_contrasts']} contrasts")
    log(f"done: {output}/ ({', '.join(p.name for p in files.values())})")
    return files


def register(app: typer.Typer) -> None:
    """Add the ``aggregate`` and ``variability`` commands to ``app``."""
    command(app, "aggregate", aggregate, outputs=("output",))
    command(app, "variability", variability, outputs=("output", "units_out"))
