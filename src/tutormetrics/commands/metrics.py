"""``tutormetrics metrics``: list the metric registry (``docs/commands/metrics.md``).

Its own module, so listing the families imports neither the scoring engine nor polars (``docs/development.md#command-loading``).

Example:
    >>> app = typer.Typer()
    >>> register(app)
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["metrics", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``metrics`` command to ``app``."""
    app.command("metrics")(metrics)


def metrics(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every registered metric family with its description, output columns and direction."""
    import json

    from tutormetrics.metrics.registry import REGISTRY

    rows = []
    for name in REGISTRY.names():
        cls = REGISTRY.get_class(name)
        metric = cls()
        n_layers = 6 if "encoder" in cls.requires else None  # the bundled MiniLM-L6; real runs read the model
        directions = metric.column_directions(n_layers)
        rows.append(
            {
                "name": name,
                "description": cls.description,
                "requires": sorted(cls.requires),
                "columns": {c: directions.get(c) for c in metric.columns(n_layers)},
                "params": metric.get_params(),
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    arrow = {True: "↑ higher is better", False: "↓ lower is better", None: "· no direction"}
    for row in rows:
        typer.echo(f"{row['name']}  [{', '.join(row['requires']) or 'text'}]")
        typer.echo(f"    {row['description']}")
        if row["params"]:
            typer.echo("    params: " + ", ".join(f"{row['name']}.{k}={v!r}" for k, v in row["params"].items()))
        for col, direction in row["columns"].items():
            typer.echo(f"      {col:<26} {arrow[direction]}")
    typer.echo("\nGroups for --metrics: all, lexical (no encoder), encoder. sync_lNN columns follow the model's layer count.")
