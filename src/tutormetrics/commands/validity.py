"""Thin Typer commands for the validity layer: ``validate`` (Spearman matrix) and ``heatmap``
(``docs/commands/validate.md``).

The commands only parse options and call library functions from :mod:`tutormetrics.validity`.
Tables go to files; the join summary and a short summary of the results go to stderr. Expected
errors are :class:`~tutormetrics.errors.InputSchemaError` / :class:`~tutormetrics.errors.ConfigError`,
which the main CLI turns into one line plus a hint and exit code 2.

Example:
    >>> ValidateArgs(metrics=Path("m.csv"), output=Path("c.csv")).validate.estimate_theta
    False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from tutormetrics.commands.flag_groups import Targets
from tutormetrics.commands.registration import command
from tutormetrics.commands.table_output import check_table_path, filter_rows, write_result
from tutormetrics.commands.terminal import log
from tutormetrics.errors import ConfigError
from tutormetrics.flags import argument, caption_flag, flag, metrics_cols_flag, split_list, where_flag
from tutormetrics.ids import TableIds
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import read_table, write_table
from tutormetrics.progress import ProgressOptions, step_progress
from tutormetrics.validity.options import ValidateOptions

__all__ = ["HeatmapArgs", "ValidateArgs", "register", "validate", "heatmap"]

#: Id columns read as text in every table (ids such as 007 keep their zeros).
ID_COLUMNS = ("exchange_id", "conversation_id")


@dataclass
class ValidateStudyOptions(ValidateOptions):
    """:class:`ValidateOptions` as ``validate`` offers them: θ is estimated on request only (``run`` estimates it
    by default), so ``validate`` writes only the files it is told."""

    estimate_theta: bool = flag(
        "--estimate-theta/--no-estimate-theta", default=False, panel="Targets",
        help="Without --theta, also estimate θ from long ratings with the MFRM (written to <output stem>_theta.csv); "
        "off here so validate writes only what you name, on in `run`.",
    )


@dataclass(kw_only=True)
class ValidateArgs(Targets):
    """What ``validate`` is told: the metrics table, the output, the targets (:class:`Targets`), the id columns and
    the study's :class:`ValidateOptions`."""

    metrics: Path = argument(help="Metrics table (csv/parquet/jsonl) with an id column.", dir_okay=False)
    output: Path = flag("--output", "-o", help="Tidy correlation table (.csv, .parquet, .jsonl; .md or .tex: the ρ matrix as a paper table).")
    facets: Path | None = flag(
        "--facets", default=None, dir_okay=False, panel="Targets",
        help="--theta-pv with --theta: the FACETS.csv theta wrote with the first --theta table.",
    )
    caption: str | None = caption_flag()
    where: list[str] | None = where_flag()
    ids: TableIds = field(default_factory=TableIds)
    validate: ValidateStudyOptions = field(default_factory=ValidateStudyOptions)
    shown: ProgressOptions = field(default_factory=ProgressOptions)

    def side_file(self, suffix: str) -> Path:
        """``<output stem><suffix>`` beside the output: ``_rho_matrix.csv``, ``_rho_matrix_partial.csv``, ``_theta.csv``."""
        return self.output.with_name(f"{self.output.stem}{suffix}")


def dialogue_id_column(columns: list[str], id_col: str) -> str:
    """``conversation_id`` for a dialogue CONV table (no ``exchange_id`` column) when ``--id`` was left at
    its default; otherwise ``id_col``."""
    if id_col != "exchange_id":
        return id_col
    if "exchange_id" not in columns and "conversation_id" in columns:
        log("note: no exchange_id column; joining on conversation_id (a dialogue CONV table)")
        return "conversation_id"
    return id_col


def validate(args: ValidateArgs) -> None:
    """Spearman ρ of every metric against every rating criterion and theta, with CIs and adjusted p.

    With --control COL the table holds the raw rows and then the partial rows (ρ with COL held fixed),
    marked in the `control` column; p_adj adjusts within each.
    """
    from tutormetrics.ids import read_keyed
    from tutormetrics.psychometrics.ratings import theta_to_targets
    from tutormetrics.validity.study import validate_metrics

    check_table_path(args.output)  # fail on a bad output name before any work
    options, key, ratings = args.validate, args.ids.key, args.ratings
    if ratings is None and not args.theta:
        raise ConfigError("nothing to correlate against", hint="pass --ratings and/or --theta")
    check_outputs(
        [args.metrics, ratings, *args.theta, args.facets],
        [args.output, args.side_file("_rho_matrix.csv"), args.side_file("_rho_matrix_partial.csv") if options.control else None,
         args.side_file("_theta.csv") if options.estimate_theta and not args.theta else None],
    )  # fmt: skip
    metrics_df, id_col, metric_cols = _metrics_table(args)
    with step_progress("validate", progress=args.shown.progress, every=args.shown.progress_every) as steps:
        study = validate_metrics(
            metrics_df,
            ratings=read_keyed(ratings, key, id_columns=ID_COLUMNS + (id_col,), drop_parts=True) if ratings is not None else None,
            theta=[theta_to_targets(read_keyed(path, key, drop_parts=True), id_col=id_col) for path in args.theta],
            options=options,
            id_col=id_col,
            metric_cols=metric_cols,
            ratings_source=str(ratings),
            fit_tables=_fit_tables(args),
            log=log,
            progress=steps,
        )
    _write_study(args, study)


def _fit_tables(args: ValidateArgs) -> tuple[Any, Any] | None:
    """``--theta-pv`` with ``--theta``: the first THETA table and ``--facets`` (``docs/measurement.md#theta-pv``)."""
    if not args.validate.theta_pv or not args.theta or args.facets is None:
        return None
    from tutormetrics.ids import read_keyed

    return read_keyed(args.theta[0], args.ids.key, drop_parts=True), read_table(args.facets)


def _metrics_table(args: ValidateArgs) -> tuple[Any, str, list[str] | None]:
    """The metrics table keyed by ``--id``, the id column the tables join on, and the metric columns: ``--metrics-cols``
    (checked against the manifest's roles), else the manifest's metric columns (``docs/guide/datasets.md``)."""
    from tutormetrics.ids import read_keyed
    from tutormetrics.metrics.columns import check_named_columns, describe_frame, metric_names, read_manifest_roles

    key, cluster = args.ids.key, (args.validate.cluster_col,) if args.validate.cluster_col else ()
    frame = filter_rows(read_keyed(args.metrics, key, id_columns=ID_COLUMNS + (key.column,) + cluster), args.where, args.metrics)
    id_col = dialogue_id_column(frame.columns, key.column)
    roles = read_manifest_roles(args.metrics)
    check_named_columns(args.metrics_cols, "--metrics-cols", roles)
    check_named_columns(args.validate.control, "--control", roles, what="control")
    if args.metrics_cols is not None:
        return frame, id_col, args.metrics_cols
    described = describe_frame(frame, source=args.metrics, exclude=ID_COLUMNS + (id_col, *key.id_parts) + cluster, log=log)
    return frame, id_col, metric_names(described) or None


def _write_study(args: ValidateArgs, study: Any) -> None:
    """θ (when estimated), the tidy table, its ρ matrix (and the partial one under ``--control``), and the summary
    lines on stderr."""
    from tutormetrics.validity.correlate import rho_matrix, split_by_control, summarize_correlations

    if study.theta_fit is not None:
        theta_path = args.side_file("_theta.csv")
        write_table(study.theta_fit.theta_table(), theta_path)
        log(f"θ (EAP reliability {study.theta_fit.reliability:.3f}) -> {theta_path.name}")
    result, controls = study.validity, args.validate.control
    log(result.report.summary())
    write_result(result.table, args.output, "validate", args.caption)
    parts = split_by_control(result.table)
    matrix_path = args.side_file("_rho_matrix.csv")
    write_table(rho_matrix(parts[""]), matrix_path)
    extra = ""
    if controls:
        partial_path = args.side_file("_rho_matrix_partial.csv")
        write_table(rho_matrix(parts[",".join(controls)]), partial_path)
        extra = f", controlling for {', '.join(controls)}: {partial_path.name}"
    log(f"{len(result.metric_cols)} metrics x {len(result.target_cols)} targets -> {args.output} (matrix: {matrix_path.name}{extra})")
    if args.top:
        log(summarize_correlations(result.table, top=args.top))


@dataclass(kw_only=True)
class HeatmapArgs:
    """What ``heatmap`` is told: the correlation table, the figure file and how the figure looks."""

    corr: Path = argument(help="Correlation table written by `validate`.", dir_okay=False)
    output: Path = flag("--output", "-o", help="Figure file: .png, .svg or .pdf.")
    value: str = flag("--value", default="rho", help="Column to colour: rho (default), ci_low, ci_high, ...")
    mask_nonsignificant: bool = flag("--mask-nonsignificant", default=False, help="Fade cells without stars.")
    order: str = flag("--order", default="given", help="Metric order within families: given or cluster.")
    title: str | None = flag("--title", default=None, help="Figure title.")
    note: str | None = flag("--note", default=None, help="Note printed under the figure.")
    width: float = flag("--width", default=3.5, min=1.0, max=7.0, help="Figure width in inches (3.5 = one column, at most 7).")
    dpi: int = flag("--dpi", default=300, min=50, max=1200, help="Resolution for PNG.")
    compare_control: bool = flag(
        "--compare-control", default=False,
        help="Draw raw ρ and partial ρ (a table from `validate --control`) side by side; width defaults to 7 in.",
    )
    columns: Path | None = flag(
        "--columns", default=None, dir_okay=False,
        help="Metrics table (or its .manifest.json) whose column descriptions group the rows "
        "(default: the manifests beside the correlation table).",
    )
    metrics_cols: list[str] | None = metrics_cols_flag()
    families: list[str] | None = flag(
        "--families", default=None, parse=split_list, cli_type=list[str] | None, show_default=False,
        help="Draw these metric families (name or figure label), repeat or comma-separate; with --metrics-cols: the union.",
    )
    targets: list[str] | None = flag(
        "--targets", default=None, parse=split_list, cli_type=list[str] | None, show_default=False,
        help="Draw these targets as the columns, in this order; repeat or comma-separate (default: every target).",
    )


def heatmap(args: HeatmapArgs) -> None:
    """Draw the metrics x targets heatmap of a correlation table.

    A table with partial rows (from `validate --control`) is drawn with its partial ρ, and the note says
    so; --compare-control puts the raw and the partial matrix side by side.
    """
    from tutormetrics.metrics.columns import columns_near, read_manifest_columns
    from tutormetrics.validity.heatmap import plot_compare_control, plot_heatmap, select_cells

    if args.order not in ("given", "cluster"):
        raise ConfigError(f"unknown --order {args.order!r}", hint="use given or cluster")
    check_outputs([args.corr, args.columns], [args.output])
    described = read_manifest_columns(args.columns) if args.columns is not None else columns_near(args.corr)
    if args.columns is not None and described is None:
        raise ConfigError(f"{args.columns}: no column descriptions found",
                          hint="pass a metrics table written by `tutormetrics score` (it has a .manifest.json)")  # fmt: skip
    style = {"value": args.value, "mask_nonsignificant": args.mask_nonsignificant, "order": args.order, "title": args.title,
             "note": args.note, "dpi": args.dpi, "columns": described, "metrics": args.metrics_cols, "families": args.families}  # fmt: skip
    table = select_cells(read_table(args.corr), targets=args.targets) if args.targets else read_table(args.corr)
    if args.compare_control:
        plot_compare_control(table, args.output, width_in=args.width if args.width != 3.5 else 7.0, **style)
        log(f"heatmap (raw | controlled) -> {args.output}")
        return
    plot_heatmap(table, args.output, width_in=args.width, **style)
    log(f"heatmap -> {args.output}")


def register(app: typer.Typer) -> None:
    """Add the ``validate`` and ``heatmap`` commands to ``app``."""
    command(app, "validate", validate, outputs=("output",))
    command(app, "heatmap", heatmap, outputs=("output",))
