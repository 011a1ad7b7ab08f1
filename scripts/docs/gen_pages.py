"""Pages mkdocs-gen-files writes at build time, so they cannot drift from the code.

- ``reference/cli.md``: the CLI reference, walked from the click command tree (``cli_reference.py``);
- ``reference/metrics.md``: every registered metric family, its columns, directions, ranges and parameters;
- ``api/*.md``: one page per public module, one ``:::`` block per name in its ``__all__``. Names are looked up
  by importing the public module and reading the object's ``__module__``/``__qualname__``, so a module that
  moves inside the package moves on the page too; pages only name the public modules below.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "src"))  # document this checkout, as griffe reads it (mkdocs.yml paths)

import cli_reference  # noqa: E402

#: Public module → (page, title, one line).
API_MODULES = {
    "tutormetrics": ("api/tutormetrics.md", "tutormetrics", "Scoring from Python: the Scorer, score_texts, score_file."),
    "tutormetrics.metrics": ("api/metrics.md", "tutormetrics.metrics",
                             "The Metric protocol, the registry, every family and its pure functions."),
    "tutormetrics.stats": ("api/stats.md", "tutormetrics.stats", "p-value adjustment and significance stars."),
    "tutormetrics.psychometrics": ("api/psychometrics.md", "tutormetrics.psychometrics",
                                   "Ratings, many-facet Rasch models (θ), rater agreement and LLM judges."),
    "tutormetrics.validity": ("api/validity.md", "tutormetrics.validity",
                              "Joining metrics to targets, Spearman matrices and heatmaps."),
}

_DIRECTION = {True: "↑ higher", False: "↓ lower", None: "·"}


def _fmt(value: float) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:g}".replace("-", "−")


def metric_rows() -> list[dict[str, Any]]:
    """One row per registered family: name, description, requires, groups, params and per-column facts."""
    from tutormetrics.metrics import GROUPS, REGISTRY

    rows = []
    for name in REGISTRY.names():
        cls = REGISTRY.get_class(name)
        metric = cls()
        n_layers = 6 if "encoder" in cls.requires else None  # the bundled MiniLM-L6 (sync_l00..sync_l06)
        directions = metric.column_directions(n_layers)
        ranges = metric.column_ranges(n_layers)
        rows.append({
            "name": name, "description": cls.description, "requires": sorted(cls.requires),
            "groups": _groups(name, GROUPS),
            "params": metric.get_params(),
            "columns": [(c, directions.get(c), ranges.get(c, (-math.inf, math.inf))) for c in metric.columns(n_layers)],
        })
    return rows


def _groups(name: str, groups: dict[str, tuple[str, ...]]) -> list[str]:
    member_of = [g for g, members in groups.items() if name in members]
    return (["all"] if member_of and "all" not in groups else []) + member_of


def render_metrics() -> str:
    """The metric registry page."""
    rows = metric_rows()
    out = ["# Metric registry", "",
           "Generated at build time from `tutormetrics.metrics.REGISTRY` (`scripts/docs/gen_pages.py`), the table",
           "`tutormetrics metrics` prints. Encoder columns are shown for the bundled MiniLM-L6 (six blocks:",
           "`sync_l00..sync_l06`); `sync_lNN` follows the model's layer count. Definitions: [Metrics](../metrics.md).",
           "", "| family | needs | groups | parameters (`--metric-param family.name=value`) |", "|---|---|---|---|"]
    for row in rows:
        params = "<br>".join(f"`{k}={v!r}`" for k, v in row["params"].items()) or "—"
        groups = ", ".join(f"`{g}`" for g in row["groups"]) or "opt-in"
        out.append(f"| [`{row['name']}`](#{row['name']}) | {', '.join(row['requires']) or 'text'} | {groups} | {params} |")
    out.append("")
    for row in rows:
        out += [f"## `{row['name']}`", "", row["description"], "",
                "| column | direction | range |", "|---|---|---|"]
        for column, direction, (low, high) in row["columns"]:
            out.append(f"| `{column}` | {_DIRECTION[direction]} | [{_fmt(low)}, {_fmt(high)}] |")
        out.append("")
    return "\n".join(out)


def api_targets(module_name: str) -> list[tuple[str, str]]:
    """``(public name, import path of the object)`` for every name in the module's ``__all__``."""
    module = importlib.import_module(module_name)
    targets = []
    for name in module.__all__:
        obj = getattr(module, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", "").startswith("tutormetrics"):
            targets.append((name, f"{obj.__module__}.{obj.__qualname__}"))
        else:
            targets.append((name, ""))
    return targets


def render_api(module_name: str) -> str:
    """One API page: the module's docstring, then every public name."""
    _, title, line = API_MODULES[module_name]
    module = importlib.import_module(module_name)
    out = [f"# `{title}`", "", line, "",
           f"::: {module_name}", "    options:", "      members: false", "      show_root_heading: false", ""]
    constants = []
    for name, path in api_targets(module_name):
        if not path:
            value = getattr(module, name)
            constants.append(f"| `{name}` | `{type(value).__name__}` | `{_short(value)}` |")
            continue
        out += [f"::: {path}", "    options:", "      show_root_heading: true", "      heading_level: 2",
                "      show_root_full_path: false", ""]
    if constants:
        out[9:9] = ["## Constants", "", "| name | type | value |", "|---|---|---|", *constants, ""]
    return "\n".join(out)


def _short(value: Any) -> str:
    if isinstance(value, dict):
        text = "{" + ", ".join(map(repr, value)) + "}"
    elif type(value).__repr__ is object.__repr__:
        text = f"{type(value).__name__}()"
    else:
        text = repr(value)
    text = text.replace("|", "\\|").replace("`", "'")
    return text if len(text) <= 90 else text[:87] + "..."


def render_api_index() -> str:
    out = ["# Python API", "", "Generated from the docstrings. Every page is one public module; import from these,",
           "not from the modules inside them (those may move).", "", "| module | holds |", "|---|---|"]
    for page, title, line in API_MODULES.values():
        out.append(f"| [`{title}`]({Path(page).name}) | {line} |")
    return "\n".join(out) + "\n"


def pages() -> dict[str, str]:
    """Every generated page: path under docs/ → Markdown."""
    out = {"reference/cli.md": cli_reference.render(cli_reference.tutormetrics_command()),
           "reference/metrics.md": render_metrics(), "api/index.md": render_api_index()}
    for module_name, (page, _, _) in API_MODULES.items():
        out[page] = render_api(module_name)
    return out


def main() -> None:
    import mkdocs_gen_files

    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as handle:
            handle.write(text)
        mkdocs_gen_files.set_edit_path(path, "../scripts/docs/gen_pages.py")


if __name__ in ("__main__", "<run_path>"):  # run by mkdocs-gen-files (runpy.run_path)
    main()
