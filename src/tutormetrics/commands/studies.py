"""Thin Typer commands for the study designs (``studies.md`` §4, §6): ``aggregate`` (turn labels to rates)
and ``variability`` (ICC of repeated trials).

Example:
    >>> import typer
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import split_list
from tutormetrics.errors import ConfigError, TutorMetricsError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import read_table, write_table

__all__ = ["parse_codes", "register"]


def parse_codes(values: list[str] | None, option: str = "--na") -> list[float]:
    """``--na -1,-9`` (repeatable) as numbers; a non-number is exit 2."""
    out = []
    for v in split_list(values) or []:
        try:
            out.append(float(v))
        except ValueError:
            raise ConfigError(f"{option}: {v!r} is not a number", hint=f"e.g. {option} -1 or {option} -1,-9") from None
    return out


def aggregate(
    turns: Annotated[Path, typer.Argument(help="Turn-level table: key columns and numeric (0/1) label columns.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Rates table: keys, n_rows, then c, c_n, c_n_na per label column.")],
    by: Annotated[list[str], typer.Option("--by", help="Key column(s): one output row per combination (repeat or comma-separate).")],
    cols: Annotated[list[str] | None, typer.Option("--cols", help="Label columns (default: every numeric column but the keys and turn columns).")] = None,
    na: Annotated[list[str] | None, typer.Option("--na", help="Codes meaning 'not applicable' (missing), e.g. -1 or -1,-9.")] = None,
) -> None:
    """Turn labels to one rate per dialogue/condition: the mean of the non-missing values, with counts of values
    and of missing ones (--na codes and empty cells); feeds `tutormetrics compare`."""
    from tutormetrics.stats.aggregate import aggregate_labels

    try:
        check_outputs([turns], [output])
        keys = split_list(by) or []
        codes = parse_codes(na)
        res = aggregate_labels(read_table(turns, id_columns=keys), by=keys, cols=split_list(cols), na=codes)
        write_table(res.result, output)
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    for note in res.notes:
        typer.echo(note, err=True)
    n_cols = (len(res.result.columns) - len(keys) - 1) // 3
    typer.echo(f"aggregate: {res.result.height} group(s) x {n_cols} label column(s) -> {output}", err=True)


def variability(
    table: Annotated[Path, typer.Argument(help="One row per (group, unit, trial) with numeric columns, e.g. summarize --totals-out.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="ICC table: six forms per group x variable.")],
    unit_col: Annotated[str, typer.Option("--unit-col", help="Unit column (e.g. item).")] = "item",
    trial_col: Annotated[str, typer.Option("--trial-col", help="Trial column (repeated runs).")] = "trial",
    group_col: Annotated[str | None, typer.Option("--group-col", help="Analyse each group (e.g. model) separately.")] = None,
    cols: Annotated[list[str] | None, typer.Option("--cols", help="Columns (default: every numeric column but the keys).")] = None,
    units_out: Annotated[Path | None, typer.Option("--units-out", help="Also write the per-unit spread (mean, sd, min, max over trials).")] = None,
) -> None:
    """Response variability across repeated trials: the six ICC forms (Shrout-Fleiss ICC1..ICC3k and McGraw-Wong
    ICC(1,1)..ICC(C,k)) with F tests and 95% CIs, the pooled within-unit SD and the mean per-unit SD."""
    from tutormetrics.stats.variability import variability_table

    try:
        check_outputs([table], [output, units_out])
        ids = [unit_col, trial_col, *([group_col] if group_col else [])]
        result, units = variability_table(read_table(table, id_columns=ids), unit_col=unit_col, trial_col=trial_col,
                                          group_col=group_col, cols=split_list(cols))  # fmt: skip
        write_table(result, output)
        if units_out:
            write_table(units, units_out)
    except TutorMetricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exc.exit_code) from None
    flagged = result.filter(result["reason"] != "")
    typer.echo(
        f"variability: {result['group'].n_unique()} group(s) x {result['variable'].n_unique()} variable(s), six ICC forms each -> {output}"
        + (f"; {flagged.height // 6} with a reason (see the reason column)" if flagged.height else ""),
        err=True,
    )


def run_fairness_example(output: Path, *, n_resamples: int = 2000, seed: int = 0, log=lambda m: typer.echo(m, err=True)) -> dict[str, Path]:
    """``run --example fairness`` (``studies.md`` §9): the EduFair-Bench design on the bundled turn labels.

    aggregate (per question, model, domain, dimension, level; −1 missing) → compare per model × domain
    stratum and per dimension value (Friedman + pairwise Wilcoxon, ``--family metric``, directions) →
    the bias summary per model over (model, domain, dimension_value) cells → the effect figure.
    Writes ``rates.csv, fair.csv, cells.csv, effects.png`` under ``output``.
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
    opt.command(app, "aggregate", aggregate, outputs=("output",))
    opt.command(app, "variability", variability, outputs=("output",))
