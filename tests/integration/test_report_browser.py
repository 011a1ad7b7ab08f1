"""The HTML report in a real browser (headless Chromium over the DevTools protocol; skipped without Chromium).

Real MRBench rows the other tests do not use (a seeded sample of conversations), with hostile strings salted
into replies, a prompt, an id and a tutor name; the bundled example when ../shared is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from cdp_chromium import Chromium, find_chromium
from report_study import HOSTILE, HOSTILE_ID, HOSTILE_TUTOR, MARKER, build_study, salt

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (apt-get install -y chromium)")
ROOT = Path(__file__).resolve().parents[2]
MRBENCH = ROOT.parent / "shared" / "data" / "mrbench"


def _inputs() -> tuple[pl.DataFrame, pl.DataFrame]:
    if (MRBENCH / "exchanges.csv").exists():
        ex = pl.read_csv(MRBENCH / "exchanges.csv")
        convs = ex["conversation_id"].unique().sort().sample(24, seed=1717)
        ex = ex.filter(pl.col("conversation_id").is_in(convs.implode()))
        ratings = pl.read_csv(MRBENCH / "ratings.csv").select("exchange_id", "rater", "criterion", "score")
        ratings = ratings.filter(pl.col("exchange_id").is_in(ex["exchange_id"].implode()))
        return ex, ratings
    example = ROOT / "src" / "tutormetrics" / "examples" / "data"
    ex = pl.read_csv(example / "exchanges.csv")
    ex = ex.with_columns(prompt=pl.col("query"), tutor=pl.col("exchange_id").str.split("::").list.last(),
                         conversation_id=pl.col("exchange_id").str.split("::").list.first())
    return ex.select("exchange_id", "conversation_id", "tutor", "prompt", "response"), pl.read_csv(example / "ratings.csv")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    ex, ratings = _inputs()
    ex, ratings, salted = salt(ex, ratings)
    root = tmp_path_factory.mktemp("report")
    out = build_study(ex, ratings, root)
    return {"out": out, "exchanges": ex, "salted": salted}


@pytest.fixture(scope="module")
def page(study):
    with Chromium(CHROMIUM) as browser:
        browser.navigate((study["out"] / "report.html").as_uri())
        yield browser


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_renders_without_errors_or_network(page, study):
    assert page.console_errors() == []
    url = (study["out"] / "report.html").as_uri()
    assert page.requests() == [url]  # the document itself, nothing else
    ids = page.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
    measured = ["theta", "fit", "separation"]  # run writes fit.csv and separation.csv with an estimated θ (docs/measurement.md)
    assert ids == ["provenance", "heatmap", "agreement", *measured, "groups", "exchanges"] or \
        ids == ["provenance", "heatmap", *measured, "groups", "exchanges"], ids  # agreement needs two raters
    refs = page.evaluate("""Array.from(document.querySelectorAll('*')).flatMap(e =>
        ['src', 'href', 'xlink:href', 'action', 'poster', 'data'].map(a => e.getAttribute(a)).filter(v => v !== null))""")
    assert all(r.startswith(("#", "url(#")) for r in refs), refs
    csp = page.evaluate("document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    assert page.evaluate("document.querySelectorAll('.hm .cell').length") > 0


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_one_drilldown_row_per_exchange(page, study):
    n = page.evaluate("document.querySelectorAll('#dd-table .tm-row').length")
    ids = page.evaluate("Array.from(document.querySelectorAll('#dd-table .tm-row > div:nth-child(2)')).map(td => td.textContent)")
    assert n == study["exchanges"].height
    assert sorted(ids) == sorted(study["exchanges"]["exchange_id"].to_list())
    assert HOSTILE_ID in ids  # shown as text, not as an element


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_hostile_text_is_text(page, study):
    for exchange_id, reply in study["salted"].items():
        shown = page.evaluate(f"""(() => {{
            const row = Array.from(document.querySelectorAll('#dd-table .tm-row'))
                .find(tr => tr.children[1].textContent === {exchange_id!r});
            if (!row.classList.contains('open')) row.querySelector('.xbtn').click();
            return row.nextElementSibling.querySelectorAll('.textbox pre')[1].textContent;
        }})()""")
        assert shown == reply
    assert page.evaluate("window.__pwned === undefined")
    assert page.evaluate("document.querySelectorAll('#inj, img, iframe, svg a, a[href^=http], [onerror], [onload]').length") == 0
    assert page.evaluate("document.scripts.length") == 2  # the data block and the renderer
    assert page.evaluate(f"document.body.textContent.includes({HOSTILE_TUTOR!r})")
    assert page.console_errors() == []


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_search_filters_rows(page, study):
    def visible() -> int:
        return page.evaluate("document.querySelectorAll('#dd-table .tm-row:not(.hidden)').length")

    def search(q: str) -> None:
        page.evaluate(f"document.getElementById('dd-search').value = {q!r}; window.tmFilter()")

    ex = study["exchanges"]
    hay = [f"{i}\n{p}\n{r}".lower() for i, p, r in zip(ex["exchange_id"], ex["prompt"], ex["response"], strict=True)]

    def expected(q: str) -> int:  # every whitespace-separated word, case-insensitive, in id, prompt or response
        return sum(all(w in h for w in q.lower().split()) for h in hay)

    search(f"{MARKER}3")
    assert visible() == 1
    for q in (HOSTILE[1][:20], "</TEXTAREA>", ex["tutor"][5], "the student", ex["exchange_id"][7]):
        search(q)
        assert visible() == expected(q) > 0, q
    search("no such text anywhere 0xdeadbeef")
    assert visible() == 0
    assert "Showing 0 of" in page.evaluate("document.getElementById('dd-count').textContent")
    search("")
    assert visible() == study["exchanges"].height


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_sort_and_heatmap_filter(page, study):
    def family(name: str) -> None:
        page.evaluate(f"(() => {{ const s = document.getElementById('hm-family'); s.value = {name!r}; s.dispatchEvent(new Event('change')); }})()")

    page.evaluate("Array.from(document.querySelectorAll('#dd-table .dd-head button')).find(b => b.textContent.startsWith('words')).click()")
    words = page.evaluate("""Array.from(document.querySelectorAll('#dd-table .tm-row'))
        .map(tr => Number(tr.children[Array.from(tr.parentNode.parentNode.querySelectorAll('.dd-head > div')).findIndex(th => th.textContent.startsWith('words'))].textContent))""")
    assert words == sorted(words) and len(set(words)) > 5
    all_cells = page.evaluate("document.querySelectorAll('.hm .cell').length")
    family("overlap")
    labels = page.evaluate("Array.from(document.querySelectorAll('.hm .cell')).map(c => c.getAttribute('aria-label'))")
    assert 0 < len(labels) < all_cells and all(label.startswith(("jaccard_", "contain_")) for label in labels)
    family("")
    # raw vs length-controlled: the second table has no resp_words row
    page.evaluate("document.querySelectorAll('#heatmap .seg button')[1].click()")
    labels = page.evaluate("Array.from(document.querySelectorAll('.hm .cell')).map(c => c.getAttribute('aria-label'))")
    assert labels and not any(label.startswith("resp_words ") for label in labels)
    page.evaluate("document.querySelectorAll('#heatmap .seg button')[0].click()")
    assert page.console_errors() == []


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_screenshot_artefact(page, study, tmp_path_factory):
    path = tmp_path_factory.mktemp("shots") / "report.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path, full_height=2200)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 50_000
    keep = os.environ.get("TUTORMETRICS_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / "report.png")


def test_dialogues_turn_by_turn(tmp_path):
    """A TURNS table with its long dialogue input: one row per conversation, whose turns (in turn order, hostile turns
    as text) open on demand."""
    from tutormetrics.report import write_report

    turns = pl.DataFrame({
        "conversation_id": ["c1", "c1", "c1", "c2", "c2"], "turn": [2, 0, 1, 1, 0],
        "role": ["tutor", "student", "tutor", "tutor", "student"],
        "text": [HOSTILE[3], "I think it is 12", "How did you get 12?", HOSTILE[1], "hi"],
    })
    turns.write_csv(tmp_path / "dialogues.csv")
    out = tmp_path / "out"
    out.mkdir()
    pl.DataFrame({"exchange_id": ["c1:1", "c1:2", "c2:1"], "conversation_id": ["c1", "c1", "c2"], "turn": [1, 2, 1],
                  "tutor_turn": [1, 2, 1], "ctx_turns": [1, 2, 1], "resp_words": [5.0, 6.0, 3.0],
                  "prev_student_jaccard_1": [0.2, 0.1, 0.0]}).write_csv(out / "turns.csv")
    (out / "turns.csv.manifest.json").write_text('{"input": "%s", "options": {}}' % (tmp_path / "dialogues.csv"))
    page = write_report(out)
    with Chromium(CHROMIUM) as browser:
        browser.navigate(page.as_uri())
        assert browser.console_errors() == []
        assert browser.evaluate("document.querySelectorAll('#conversations .turn').length") == 0  # turns on demand
        browser.evaluate("document.querySelectorAll('#cv-table .tm-row .xbtn').forEach(b => b.click())")
        texts = browser.evaluate("Array.from(document.querySelectorAll('#conversations .turn pre')).map(p => p.textContent)")
        assert texts == ["I think it is 12", "How did you get 12?", HOSTILE[3], "hi", HOSTILE[1]]
        roles = browser.evaluate("Array.from(document.querySelectorAll('#conversations .turn')).map(li => li.className)")
        assert roles == ["turn student", "turn tutor", "turn tutor", "turn student", "turn tutor"]
        assert browser.evaluate("window.__pwned === undefined && document.querySelectorAll('img, script').length === 2")
        assert browser.evaluate("document.querySelectorAll('#dd-table .tm-row').length") == 3


@pytest.mark.slow  # shares a ~10 s study build (pipeline on ~200 MRBench rows)
def test_keyboard(page):
    def key(name: str, code: int) -> None:
        text = {"Enter": "\r"}.get(name)
        page.send("Input.dispatchKeyEvent", type="keyDown", key=name, code=name, windowsVirtualKeyCode=code,
                  **({"text": text} if text else {}))
        page.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=name, windowsVirtualKeyCode=code)

    page.evaluate("document.querySelector('.hm .cell[tabindex=\"0\"]').focus()")
    first = page.evaluate("document.activeElement.getAttribute('aria-label')")
    key("ArrowRight", 39)
    key("ArrowDown", 40)
    moved = page.evaluate("[document.activeElement.getAttribute('data-i'), document.activeElement.getAttribute('data-j')]")
    assert moved == ["1", "1"] and page.evaluate("document.activeElement.getAttribute('aria-label')") != first
    assert page.evaluate("!document.getElementById('tip').hidden && document.getElementById('tip').textContent.includes('p_adj')")
    page.evaluate("document.querySelector('#dd-table .tm-row:not(.open) .xbtn').focus()")
    key("Enter", 13)
    assert page.evaluate("document.activeElement.getAttribute('aria-expanded')") == "true"
    key("Enter", 13)
    assert page.evaluate("document.activeElement.getAttribute('aria-expanded')") == "false"


@pytest.mark.parametrize("files", [("correlations.csv",), ("theta.csv", "facets.csv"), ("agreement.csv",)])
def test_partial_folders_render(tmp_path, files):
    """A folder filled by one command (validate, theta or agree) renders its sections without errors."""
    from tutormetrics.report import write_report

    example = ROOT / "src" / "tutormetrics" / "examples" / "data"
    src = tmp_path / "src"
    from tutormetrics.cli import main

    assert main(["theta", str(example / "ratings.csv"), "-o", str(src / "theta.csv"), "--facets", str(src / "facets.csv")]) == 0
    assert main(["agree", str(example / "ratings.csv"), "-o", str(src / "agreement.csv")]) == 0
    pl.DataFrame({"metric": ["ttr", "ttr", "resp_words"], "target": ["a", "b", "a"], "n": [40, 40, 3], "rho": [0.5, -0.2, None],
                  "ci_low": [0.2, -0.5, None], "ci_high": [0.7, 0.1, None], "p": [0.001, 0.2, None], "p_adj": [0.003, 0.2, None],
                  "adjust": ["bh"] * 3, "stars": ["**", "", ""], "reason": ["", "", "too_few"]}).write_csv(src / "correlations.csv")
    out = tmp_path / "out"
    out.mkdir()
    for name in files:
        (out / name).write_bytes((src / name).read_bytes())
    page = write_report(out)
    with Chromium(CHROMIUM) as browser:
        browser.navigate(page.as_uri())
        assert browser.console_errors() == []
        sections = browser.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
        expected = {"correlations.csv": "heatmap", "theta.csv": "theta", "agreement.csv": "agreement"}[files[0]]
        assert sections == ["provenance", expected]
        if expected == "heatmap":
            labels = browser.evaluate("Array.from(document.querySelectorAll('.hm .cell')).map(c => c.getAttribute('aria-label'))")
            assert len(labels) == 4 and "resp_words × a: undefined (too_few), n = 3" in labels  # 2 × 2 grid, one cell absent


def test_conversation_level_banner(tmp_path):
    """run --example dialogue: the report says it validated 12 conversations, not 30 exchanges (datasets.md §6)."""
    from tutormetrics.cli import main

    out = tmp_path / "demo"
    assert main(["run", "--example", "dialogue", "-m", "lexical", "--n-resamples", "99", "--no-progress",
                 "--no-estimate-theta", "-o", str(out)]) == 0  # fmt: skip
    with Chromium(CHROMIUM) as browser:
        browser.navigate((out / "report.html").as_uri())
        assert browser.console_errors() == []
        subtitle = browser.evaluate("document.getElementById('subtitle').textContent")
        assert subtitle.startswith("12 conversations (validated per conversation) · 30 tutor turns"), subtitle
        notes = browser.evaluate("Array.from(document.querySelectorAll('#provenance p.note')).map(p => p.textContent)")
        assert notes and notes[0].startswith("Validated per conversation"), notes
        kpis = browser.evaluate("Array.from(document.querySelectorAll('#provenance .kpis li')).map(li => li.textContent)")
        assert kpis[:2] == ["12conversations validated", "30tutor turns"], kpis
