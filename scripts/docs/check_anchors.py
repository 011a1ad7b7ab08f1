"""Check that every ``docs/<page>.md#<anchor>`` the code cites exists in the built site.

    python scripts/docs/check_anchors.py SITE_DIR [--map citation_map.tsv] [PATH ...]

SITE_DIR is the output of ``mkdocs build`` (directory URLs: ``docs/design/effects.md`` is
``SITE_DIR/design/effects/index.html``, ``docs/index.md`` is ``SITE_DIR/index.html``). The PATHs (default ``src``,
``tests``, ``benchmarks``, ``scripts``) are searched for citations ``docs/<page>.md`` and ``docs/<page>.md#<anchor>``;
``--map`` adds the targets of a tab-separated file whose column ``target`` holds such citations. A page that was not
built, or an anchor that is no ``id`` of its page, is printed; the exit status is 1 when any is missing.

Example:
    >>> citations_in("see ``docs/statistics.md#multiplicity`` and docs/guide/judges.md")
    [('statistics.md', 'multiplicity'), ('guide/judges.md', '')]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

CITATION = re.compile(r"docs/((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
SOURCES = (".py", ".md", ".toml", ".yml", ".sh", ".R")


def citations_in(text: str) -> list[tuple[str, str]]:
    """``(page, anchor)`` of every ``docs/<page>.md[#anchor]`` in ``text`` (anchor ``""`` when absent)."""
    return [(m.group(1), m.group(2) or "") for m in CITATION.finditer(text)]


class _Ids(HTMLParser):
    """Every ``id`` attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(v for k, v in attrs if k == "id" and v)


def page_html(site: Path, page: str) -> Path:
    """The built file of ``docs/<page>`` under mkdocs' directory URLs."""
    stem = page[: -len(".md")]
    if stem == "index" or stem.endswith("/index"):
        return site / stem.removesuffix("index") / "index.html"
    return site / stem / "index.html"


def page_ids(site: Path, page: str, cache: dict[str, set[str] | None]) -> set[str] | None:
    """The ids of a built page, or ``None`` when it was not built."""
    if page not in cache:
        html = page_html(site, page)
        if html.is_file():
            parser = _Ids()
            parser.feed(html.read_text(encoding="utf-8"))
            cache[page] = parser.ids
        else:
            cache[page] = None
    return cache[page]


def cited(paths: list[Path], map_file: Path | None) -> dict[tuple[str, str], list[str]]:
    """Every cited ``(page, anchor)`` with the places (``file:line``) that cite it."""
    found: dict[tuple[str, str], list[str]] = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in SOURCES)
        for f in files:
            for no, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                for key in citations_in(line):
                    found.setdefault(key, []).append(f"{f}:{no}")
    if map_file is not None:
        with map_file.open(encoding="utf-8", newline="") as fh:
            for no, row in enumerate(csv.DictReader(fh, delimiter="\t"), 2):
                for key in citations_in(row["target"]):
                    found.setdefault(key, []).append(f"{map_file}:{no}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the missing pages and anchors; 0 when every citation resolves."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="the mkdocs build directory")
    ap.add_argument("paths", type=Path, nargs="*", help="files or folders to search (default: src tests benchmarks scripts)")
    ap.add_argument("--map", type=Path, default=None, help="a TSV with a 'target' column of docs/<page>.md#<anchor>")
    args = ap.parse_intermixed_args(argv)
    paths = args.paths or [p for p in (Path("src"), Path("tests"), Path("benchmarks"), Path("scripts")) if p.exists()]
    cache: dict[str, set[str] | None] = {}
    missing = 0
    found = cited(paths, args.map)
    for (page, anchor), where in sorted(found.items()):
        ids = page_ids(args.site, page, cache)
        if ids is None or (anchor and anchor not in ids):
            missing += 1
            what = f"docs/{page}" + (f"#{anchor}" if anchor else "")
            print(f"{what}: {'no such page' if ids is None else 'no such anchor'} (cited at {where[0]}"
                  + (f" and {len(where) - 1} more" if len(where) > 1 else "") + ")")
    print(f"{len(found)} distinct citations, {missing} missing", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
