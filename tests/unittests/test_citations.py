"""Every citation in ``src/`` names a page of this repository's docs by path and anchor (``docs/development.md#citations``).

Runs ``scripts/docs/check_citations.py`` on the tree: no build, no network.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_citations", ROOT / "scripts" / "docs" / "check_citations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_citations"] = module
    spec.loader.exec_module(module)
    return module


def test_no_dangling_citation_in_src(checker):
    found = checker.scan([ROOT / "src"], ROOT)
    assert len(found) > 300  # the scan sees the citations at all
    dangling = [f"{f}:{n}: {c.text}: {why}" for f, n, c, why in found if why]
    assert dangling == []


def test_slugs_as_mkdocs_makes_them(checker):
    assert checker.slugify("Spearman tables (`validate`)") == "spearman-tables-validate"
    assert checker.slugify("One response after its history (`--history-col`)") == "one-response-after-its-history-history-col"
    assert checker.slugify("κ paradox and endorsement per rater (`agree`)") == "paradox-and-endorsement-per-rater-agree"
    page = "# Title {#top}\n\n## Atomic writes\n\n```\n## not a heading\n```\n\n## Atomic writes\n<a id=\"here\"></a>\n"
    assert checker.anchors_of(page) == {"top", "atomic-writes", "atomic-writes_1", "here"}


@pytest.mark.parametrize(("line", "kinds", "dangling"), [
    ("(``docs/statistics.md#multiplicity``)", ["docs"], [False]),
    ("(``docs/statistics.md" + "#no-such-anchor``)", ["docs"], [True]),  # split: check_anchors.py reads this file
    ("(``effects.md`` §2.3, §2.5)", ["other"], [True]),
    ("the rule of §2.1 and the spec's example", ["bare", "prose"], [True, True]),
    ("(``benchmarks/RESULTS.md`` §16)", ["repo"], [False]),
    ("(``benchmarks/RESULTS.md`` §999)", ["repo"], [True]),
    ("(``benchmarks/RESULTS.md``)", ["repo"], [True]),
    ('write_data_table(df, "t.md") and -o x.md', [], []),
])
def test_citation_forms(checker, line, kinds, dangling):
    resolver = checker.Resolver(ROOT)
    cites = checker.citations_in(line)
    assert [c.kind for c in cites] == kinds
    assert [resolver.problem(c) is not None for c in cites] == dangling
