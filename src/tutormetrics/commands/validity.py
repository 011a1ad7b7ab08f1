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
from typing import Annotated, Any, Optional

import typer

from tutormetrics.commands import options as opt
from tutormetrics.commands.options import log, split_list
from tutormetrics.errors import ConfigError
from tutormetrics.io.paths import check_outputs
from tutormetrics.io.tables import infer_format, read_table, write_table

__all__ = ["register", "validate", "heatmap"]

#: ``validate`` writes only what it is told: θ is estimated on request (``run`` estimates it by default).
VALIDATE_OVERRIDES = {
    "estimate_theta": {
        "default": False,
        "help": "Without --theta, also estimate θ from long ratings with the MFRM (written to <output stem>_theta.csv); "
        "off here so validate writes only what you name, on in `run`.",
    },
    "theta": {"help": "Theta table(s) with id, theta[, theta_sd]; repeatable."},
}

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
    **kwargs: Any,
) -> None:
    """Spearman ρ of every metric against every rating criterion and theta, with CIs and adjusted p.

    With --control COL the table holds the raw rows and then the partial rows (ρ with COL held fixed),
    marked in the `control` column; p_adj adjusts within each.
    """
    from tutormetrics.ids import read_keyed
    from tutormetrics.validity.study import ValidateOptions, validate_metrics
    from tutormetrics.psychometrics.ratings import theta_to_targets
    from tutormetrics.validity.correlate import rho_matrix, split_by_control, summarize_correlations

    infer_format(output)  # fail on a bad output name before any work
    options = opt.from_kwargs(ValidateOptions, kwargs)
    key = opt.table_key(kwargs)  # --id (repeatable: a composite exchange_id, datasets.md §3.1)
    ratings, theta, id_col, top, controls = kwargs["ratings"], kwargs["theta"], kwargs["id_col"], kwargs["top"], options.control
    if ratings is None and not theta:
        raise ConfigError("nothing to correlate against", hint="pass --ratings and/or --theta")
    theta_out = output.with_name(f"{output.stem}_theta.csv") if options.estimate_theta and not theta else None
    partial_out = output.with_name(f"{output.stem}_rho_matrix_partial.csv") if controls else None
    check_outputs(
        [metrics, ratings, *(theta or [])],
        [output, output.with_name(f"{output.stem}_rho_matrix.csv"), partial_out, theta_out],
    )
    from tutormetrics.metrics.columns import check_named_columns, describe_frame, metric_names, read_manifest_roles

    cluster_col = options.cluster_col
    metrics_df = read_keyed(metrics, key, id_columns=ID_COLUMNS + (id_col,) + ((cluster_col,) if cluster_col else ()))
    id_col = dialogue_id_column(metrics_df.columns, id_col)
    metric_cols = split_list(kwargs["metrics_cols"])
    roles = read_manifest_roles(metrics)
    check_named_columns(metric_cols, "--metrics-cols", roles)
    check_named_columns(controls, "--control", roles, what="control")
    if metric_cols is None:  # the manifest's metric columns (else the registry fallback)
        described = describe_frame(metrics_df, source=metrics, exclude=ID_COLUMNS + (id_col, *key.id_parts) + ((cluster_col,) if cluster_col else ()),
                                   log=log)
        metric_cols = metric_names(described) or None
    study = validate_metrics(
        metrics_df,
        ratings=read_keyed(ratings, key, id_columns=ID_COLUMNS + (id_col,), drop_parts=True) if ratings is not None else None,
        theta=[theta_to_targets(read_keyed(path, key, drop_parts=True), id_col=id_col) for path in theta or []],
        options=options,
        id_col=id_col,
        metric_cols=metric_cols,
        ratings_source=str(ratings),
        log=log,
    )
    if study.theta_fit is not None:
        theta_path = output.with_name(f"{output.stem}_theta.csv")
        write_table(study.theta_fit.theta_table(), theta_path)
        log(f"θ (EAP reliability {study.theta_fit.reliability:.3f}) -> {theta_path.name}")
    result = study.validity
    log(result.report.summary())
    table, mcols, target_cols = result.table, result.metric_cols, result.target_cols
    write_table(table, output)
    parts = split_by_control(table)
    matrix_path = output.with_name(f"{output.stem}_rho_matrix.csv")
    write_table(rho_matrix(parts[""]), matrix_path)
    extra = ""
    if controls:
        partial_path = output.with_name(f"{output.stem}_rho_matrix_partial.csv")
        write_table(rho_matrix(parts[",".join(controls)]), partial_path)
        extra = f", controlling for {', '.join(controls)}: {partial_path.name}"
    log(f"{len(mcols)} metrics x {len(target_cols)} targets -> {output} (matrix: {matrix_path.name}{extra})")
    if top:
        log(summarize_correlations(result.table, top=top))


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
    compare_control: Annotated[
        bool,
        typer.Option(
            "--compare-control",
            help="Draw raw ρ and partial ρ (a table from `validate --control`) side by side; width defaults to 7 in.",
        ),
    ] = False,
    columns: Annotated[
        Optional[Path],
        typer.Option(
            "--columns",
            help="Metrics table (or its .manifest.json) whose column descriptions group the rows "
            "(default: the manifests beside the correlation table).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Draw the metrics x targets heatmap of a correlation table.

    A table with partial rows (from `validate --control`) is drawn with its partial ρ, and the note says
    so; --compare-control puts the raw and the partial matrix side by side.
    """
    from tutormetrics.metrics.columns import columns_near, read_manifest_columns
    from tutormetrics.validity.heatmap import plot_compare_control, plot_heatmap

    if order not in ("given", "cluster"):
        raise ConfigError(f"unknown --order {order!r}", hint="use given or cluster")
    check_outputs([corr, columns], [output])
    described = read_manifest_columns(columns) if columns is not None else columns_near(corr)
    if columns is not None and described is None:
        raise ConfigError(f"{columns}: no column descriptions found", hint="pass a metrics table written by `tutormetrics score` (it has a .manifest.json)")
    if compare_control:
        plot_compare_control(
            read_table(corr),
            output,
            value=value,
            mask_nonsignificant=mask_nonsignificant,
            order=order,
            title=title,
            note=note,
            width_in=width if width != 3.5 else 7.0,
            dpi=dpi,
            columns=described,
        )
        log(f"heatmap (raw | controlled) -> {output}")
        return
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
        columns=described,
    )
    log(f"heatmap -> {output}")


def register(app: typer.Typer) -> None:
    """Add the ``validate`` and ``heatmap`` commands to ``app``."""
    opt.command(app, "validate", validate, opt.COMMANDS["validate"], overrides=VALIDATE_OVERRIDES, outputs=("output",))
    opt.command(app, "heatmap", heatmap, outputs=("output",))
