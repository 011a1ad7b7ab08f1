"""Check that every citation in the code names a page of this repository's docs by path and anchor.

    python scripts/docs/check_citations.py [PATH ...] [--allow PREFIX ...] [--list]

The PATHs (default ``src``) are searched for citations in ``.py`` files:

* ``docs/<page>.md#<anchor>`` and ``docs/<page>.md``: resolve when ``docs/<page>.md`` exists and, with an anchor,
  when the page has a heading (or an element) of that id; a page without an anchor resolves but is counted apart;
* ``benchmarks/RESULTS.md §16`` (a repository file outside ``docs/`` by its numbered section): resolves when the
  file exists and has a heading numbered so (``## 16. …``, ``### 16b. …``);
* any other ``<name>.md``, with or without ``§x.y`` / ``Ex3`` sections (``effects.md §2.5``, ``metrics.md``,
  ``data/mrbench/README.md``): a document that is not in this repository, so it never resolves;
* a section sign without a document (``(§2.1)``) and the spec named in prose (``the spec's worked example``,
  ``(spec §1.2)``, ``Specs: …``): they never resolve.

Anchors are computed the way MkDocs' Markdown (``toc``, ``attr_list``) makes them: an explicit ``{#id}`` on a
heading, else the slug of its text (``## Spearman tables (`validate`)`` → ``spearman-tables-validate``; a repeated
slug gains ``_1``, ``_2``); ``{: #id}`` attributes and ``<a id=…>``/``<span id=…>`` count too; fenced code is
skipped. Each dangling citation is printed as ``file:line: citation: why``; the exit status is 1 when any is
dangling outside the ``--allow`` prefixes. Nothing is built and nothing is fetched; ``check_anchors.py`` checks the
``docs/`` citations against a built site.

Example:
    >>> slugify("Spearman tables (`validate`)")
    'spearman-tables-validate'
    >>> [c.text for c in citations_in("see ``effects.md`` §2.3, §2.5 and docs/statistics.md#p-values (§1.4)")]
    ['effects.md §2.3, §2.5', 'docs/statistics.md#p-values', '§1.4']
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: One section after a document or a section sign: ``2.5``, ``1.6–1.7`` is two, ``17b``, ``Ex4``.
_SECTION = r"(?:\d+[a-z]?(?:\.\d+[a-z]?)*|Ex\d+)"
#: ``§2.3, §2.5``, ``§1–§3``, ``§0 and §2``, ``§2-§3``, ``§6.2, §7``, ``Ex4`` after a document name.
_SECTIONS = (rf"(?:§\s*{_SECTION}|Ex\d+)(?:\s*(?:,|and|–|-|/)\s*(?:§\s*)?{_SECTION}(?![\w.]*\.md))*")
#: A document: ``docs/<page>.md#<anchor>`` or ``<name>.md`` (optional ``spec`` before it, optional backticks around it).
CITATION = re.compile(
    rf"(?:\bspec\s+)?(?P<tick>``|`)?(?<![\w/.-])(?P<path>(?:[\w.-]+/)*[\w-]+\.md)(?:#(?P<anchor>[\w-]+))?(?P=tick)?"
    rf"(?:\s*(?P<sections>{_SECTIONS}))?"
    rf"|(?P<prose>\bspec\s+§\s*{_SECTION}|\bspec's\b|\bSpecs?:(?=\s)|\bspec\s+(?=requires)|\bby the spec\b)"
    rf"|(?P<bare>§\s*{_SECTION}(?:\s*(?:,|and|–|-)\s*§?\s*{_SECTION})*)"
)
#: A ``.md`` name that is a file the user writes (``-o x.md``, ``"t.md"``), not a citation.
_FILE_ARG = re.compile(r"(?:-o\s+|--output\s+|[\"'])$")


@dataclass(frozen=True)
class Citation:
    """One citation as written, with its document, anchor and sections."""

    text: str
    kind: str  # "docs", "repo", "other", "bare", "prose"
    path: str = ""
    anchor: str = ""
    sections: tuple[str, ...] = ()


def citations_in(line: str) -> list[Citation]:
    """Every citation of one line, in order (see the module docstring for the forms)."""
    out: list[Citation] = []
    for m in CITATION.finditer(line):
        if m.group("bare"):
            out.append(Citation(m.group("bare"), "bare", sections=tuple(re.findall(_SECTION, m.group("bare")))))
            continue
        if m.group("prose"):
            out.append(Citation(m.group("prose").strip(), "prose"))
            continue
        path, anchor, sections = m.group("path"), m.group("anchor") or "", m.group("sections") or ""
        if not sections and "/" not in path and (_FILE_ARG.search(line[: m.start("path")]) or len(path) == 4):
            continue  # a file the user names (``-o x.md``, ``"t.md"``), not a document
        text = line[m.start("path"):m.end()].replace("`", "")
        secs = tuple(re.findall(_SECTION, sections))
        kind = "docs" if path.startswith("docs/") else "repo" if "/" in path and (ROOT / path).is_file() else "other"
        out.append(Citation(text, kind, path, anchor, secs))
    return out


def slugify(text: str) -> str:
    """The id Python-Markdown's ``toc`` gives a heading of this (Markdown) text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)", "", text)  # emphasis markers
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ATTR_ID = re.compile(r"\{:?\s*#([\w-]+)[^}]*\}")
_HTML_ID = re.compile(r"<(?:a|span|div)\b[^>]*\bid=[\"']?([\w-]+)")


def anchors_of(markdown: str) -> set[str]:
    """The ids of a Markdown page: headings (explicit or slugged), ``{: #id}`` attributes, HTML ``id``s."""
    ids: set[str] = set()
    fence = ""
    for line in markdown.splitlines():
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        prose = re.sub(r"`+[^`]*`+", "", line)  # an id written inside inline code is no id
        ids.update(_HTML_ID.findall(prose))
        m = _HEADING.match(line)
        if m:
            attr = _ATTR_ID.search(m.group(2))
            if attr:
                ids.add(attr.group(1))
                continue
            slug = base = slugify(m.group(2)) or "_"
            n = 0
            while slug in ids:
                n += 1
                slug = f"{base}_{n}"
            ids.add(slug)
        else:
            ids.update(_ATTR_ID.findall(prose))
    return ids


def numbered_sections(markdown: str) -> set[str]:
    """The numbers of a page's numbered headings: ``## 16. The onnx backend`` → ``16``; ``### 17b. …`` → ``17b``."""
    return {m.group(1) for m in re.finditer(r"^#{1,6}\s+(\d+[a-z]?(?:\.\d+[a-z]?)*)\.?\s", markdown, re.M)}


class Resolver:
    """Whether a citation resolves, with the pages read once."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self._pages: dict[str, str | None] = {}

    def _page(self, path: str) -> str | None:
        if path not in self._pages:
            f = self.root / path
            self._pages[path] = f.read_text(encoding="utf-8") if f.is_file() else None
        return self._pages[path]

    def problem(self, c: Citation) -> str | None:
        """Why ``c`` does not resolve, or ``None`` when it does."""
        if c.kind == "bare":
            return "a section without a document"
        if c.kind == "prose":
            return "names the spec, not a page of docs/"
        page = self._page(c.path)
        if page is None:
            return "no such page in this repository"
        if c.kind == "docs":
            if c.sections:
                return "a section number on a docs page (use #anchor)"
            if c.anchor and c.anchor not in anchors_of(page):
                return f"no anchor #{c.anchor} in {c.path}"
            return None
        if c.anchor:
            return "an anchor on a page outside docs/"
        if not c.sections:
            return "a page outside docs/ without a section"
        missing = [s for s in c.sections if s not in numbered_sections(page)]
        return f"no section {', '.join(missing)} in {c.path}" if missing else None


def scan(paths: list[Path], root: Path = ROOT) -> list[tuple[str, int, Citation, str | None]]:
    """``(file, line, citation, problem)`` for every citation in the ``.py`` files under ``paths``."""
    resolver = Resolver(root)
    found = []
    for p in paths:
        files = [p] if p.is_file() else sorted(p.rglob("*.py"))
        for f in files:
            rel = f.resolve().relative_to(root).as_posix() if f.resolve().is_relative_to(root) else str(f)
            for no, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                for c in citations_in(line):
                    found.append((rel, no, c, resolver.problem(c)))
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the dangling citations and the counts; 1 when any is dangling outside ``--allow``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", type=Path, nargs="*", help="files or folders to search (default: src)")
    ap.add_argument("--allow", action="append", default=[], metavar="PREFIX",
                    help="files under this path (relative to the repository root) may still dangle; repeatable")
    ap.add_argument("--list", action="store_true", help="also print the page-only citations (no anchor)")
    args = ap.parse_args(argv)
    found = scan(args.paths or [ROOT / "src"])
    dangling = [(f, n, c, why) for f, n, c, why in found if why]
    allowed = [d for d in dangling if any(d[0].startswith(a) for a in args.allow)]
    failing = [d for d in dangling if d not in allowed]
    for f, n, c, why in failing:
        print(f"{f}:{n}: {c.text}: {why}")
    page_only = [(f, n, c) for f, n, c, why in found if not why and c.kind == "docs" and not c.anchor]
    if args.list:
        for f, n, c in page_only:
            print(f"{f}:{n}: {c.text}: a page without an anchor")
    print(f"{len(found)} citations, {len(dangling)} dangling ({len(allowed)} in allowed files), "
          f"{len(page_only)} page-only", file=sys.stderr)
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
