"""Every anchor of ``docs/measurement.md`` that the code and the fixtures cite exists on the page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def _anchors(page: Path) -> set[str]:
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            continue
        explicit = re.search(r"\{#([a-z0-9-]+)\}", line)
        if explicit:
            found.add(explicit.group(1))
        else:  # Python-Markdown's toc slug: lower case, punctuation dropped, spaces to hyphens
            text = re.sub(r"[^\w\s-]", "", line.lstrip("#").strip().lower())
            found.add(re.sub(r"[\s]+", "-", text).strip("-"))
    return found


def test_cited_anchors_exist():
    anchors = _anchors(ROOT / "docs" / "measurement.md")
    cited: dict[str, set[str]] = {}
    for folder in ("src", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".R") and path.is_file():
                for anchor in re.findall(r"measurement\.md#([a-z0-9-]+)", path.read_text(encoding="utf-8")):
                    cited.setdefault(anchor, set()).add(str(path.relative_to(ROOT)))
    assert cited, "no citations found"
    missing = {a: sorted(p) for a, p in cited.items() if a not in anchors}
    assert not missing, missing
