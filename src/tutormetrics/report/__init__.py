"""Reports for people: the self-contained HTML report of a study (one file, no network, every user text
shown as text), per-group paper tables (Markdown, LaTeX; :mod:`.tables`) and the effect-matrix figure
(:mod:`.effects`).

``write_report("demo-out")`` writes ``demo-out/report.html`` from the tables of a study folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tutormetrics.report.collect import MAX_EXCHANGES, collect_study
from tutormetrics.report.html import render_html

__all__ = ["build_report", "collect_study", "facets_figure", "render_html", "report_inputs", "write_report"]


def __getattr__(name: str) -> Callable[..., Any]:  # matplotlib only when the facets figure is asked for
    if name == "facets_figure":
        from tutormetrics.report.facets_plot import facets_figure

        return facets_figure
    raise AttributeError(name)


def report_inputs(outdir: str | Path, exchanges: str | Path | None = None) -> list[Path]:
    """Every file a report of ``outdir`` may read: the folder's files (but its own ``report.html``), the scored input
    and ratings recorded in ``run.json``, and ``exchanges`` — the files ``report -o`` must never overwrite."""
    import json

    folder = Path(outdir)
    found = [p for p in folder.iterdir() if p.is_file() and p.name != "report.html"] if folder.is_dir() else []
    try:
        run = json.loads((folder / "run.json").read_text(encoding="utf8"))
    except (OSError, ValueError):
        run = {}
    recorded = [run.get(key) for key in ("exchanges", "ratings", "theta")] if isinstance(run, dict) else []
    found += [Path(v) for v in recorded if isinstance(v, str) and v]
    if exchanges is not None:
        found.append(Path(exchanges))
    return found


def build_report(
    outdir: str | Path, *, exchanges: str | Path | None = None, max_exchanges: int = MAX_EXCHANGES,
    on_stale: Callable[[str], None] | None = None,
) -> str:
    """The report page (HTML text) for a study output folder; ``on_stale`` gets each line of the page's stale banner
    (parts left out because ``run.json`` does not vouch for them: :mod:`tutormetrics.report.provenance`).

    Args:
        outdir: The study output folder.
        exchanges: The scored input, overriding the one recorded in ``run.json``; ``None``: the recorded one.
        max_exchanges: With more rows, the per-exchange parts show a random sample of this many.
        on_stale: Gets each line of the stale banner; ``None``: not told.
    """
    data = collect_study(Path(outdir), exchanges=Path(exchanges) if exchanges else None, max_exchanges=max_exchanges)
    for line in data.get("stale") or []:
        if on_stale is not None:
            on_stale(line)
    return render_html(data)


def write_report(
    outdir: str | Path, output: str | Path | None = None, *, exchanges: str | Path | None = None, max_exchanges: int = MAX_EXCHANGES,
    on_stale: Callable[[str], None] | None = None,
) -> Path:
    """Write the report of ``outdir`` to ``output`` (default ``outdir/report.html``) atomically; return its path.

    Args:
        outdir: The study output folder.
        output: The HTML file; ``None``: ``outdir/report.html``.
        exchanges: The scored input, overriding the one recorded in ``run.json``; ``None``: the recorded one.
        max_exchanges: With more rows, the per-exchange parts show a random sample of this many.
        on_stale: Gets each line of the stale banner; ``None``: not told.
    """
    from tutormetrics.io.atomic import write_text_atomic

    target = Path(output) if output is not None else Path(outdir) / "report.html"
    page = build_report(outdir, exchanges=exchanges, max_exchanges=max_exchanges, on_stale=on_stale)
    return write_text_atomic(target, page)
