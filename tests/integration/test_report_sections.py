"""The report's declared sections and its conversation level, collected in Python and drawn in headless Chromium
(skipped without it).

- Length bias, stability and judge differences (issue 33): tables built with the library (report_study.judge_study:
  a planted length bias, a second run that moves a quarter of the verdicts up, a judge named as markup); each
  section says what its numbers mean, and marks the rows its rule selects.
- Fit, separation, bias and DIF tables built with the library on the measurement tests' planted simulation: misfit,
  the planted interactions and C-class DIF marked, the underfitting rater open and red on the Wright map.
- ``run --example dialogue`` (issue 35): one row per conversation with its ratings (targets.csv) and θ (theta.csv),
  searchable and sortable, its turns on demand.
"""

from __future__ import annotations

import time

import polars as pl
import pytest
from cdp_chromium import Chromium, find_chromium
from report_study import HOSTILE_JUDGE, judge_study, measurement_study

from tutormetrics.report import write_report
from tutormetrics.report.collect import collect_study

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def judges(tmp_path_factory):
    folder = tmp_path_factory.mktemp("judges")
    tables = judge_study(folder)
    return folder, tables, write_report(folder)


def _excludes_zero(low: pl.Series, high: pl.Series) -> list[int]:
    return [i for i, (lo, hi) in enumerate(zip(low.to_list(), high.to_list(), strict=False)) if lo is not None and (lo > 0 or hi < 0)]


def test_judge_sections_collected(judges):
    folder, tables, _ = judges
    data = collect_study(folder)
    sections = {s["kind"]: s for s in data["sections"]}
    assert list(sections) == ["length_bias", "stability", "judge_differences"]  # KINDS order
    assert [j["file"] for j in data["judge"]] == ["JUDGE.csv"]  # the judge table is still the agreement section's
    lb, flips, diff = (pl.read_csv(folder / name) for name in ("LB.csv", "FLIPS.csv", "DIFF.csv"))
    assert sections["length_bias"]["tables"][0]["flagged"] == _excludes_zero(lb["slope_ci_low"], lb["slope_ci_high"])
    # the planted bias (+0.8 per SD) is what is flagged: every row of gpt, none of the fair judge
    assert lb.filter(pl.col("judge") == "gpt")["slope_ci_low"].min() > 0
    assert lb.filter(pl.col("judge") == HOSTILE_JUDGE)["slope_ci_low"].max() < 0 < lb.filter(pl.col("judge") == HOSTILE_JUDGE)["slope_ci_high"].min()
    assert sections["length_bias"]["tables"][0]["flagged"] == [i for i, j in enumerate(lb["judge"]) if j == "gpt"]
    p = [c if c is not None else a for a, c in zip(flips["mcnemar_p"], flips["mcnemar_cluster_p"], strict=False)]
    assert sections["stability"]["tables"][0]["flagged"] == [i for i, v in enumerate(p) if v < 0.05] == [0, 1]
    assert sections["judge_differences"]["tables"][0]["flagged"] == _excludes_zero(diff["ci_low"], diff["ci_high"])
    shown = sections["length_bias"]["tables"][0]["table"]
    assert shown["columns"] == tables["LB.csv"].columns and len(shown["rows"]) == lb.height
    slope = shown["columns"].index("slope")
    assert [r[slope] for r in shown["rows"]] == pytest.approx(lb["slope"].to_list(), rel=1e-5)
    assert sections["length_bias"]["doc"] == "docs/guide/judges.md#length-bias"


@needs_chromium
def test_judge_sections_drawn(judges):
    _, _, page = judges
    with Chromium(CHROMIUM) as browser:
        browser.navigate(page.as_uri())
        assert browser.console_errors() == []
        ids = browser.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
        assert ids == ["provenance", "agreement", "length_bias", "stability", "judge_differences"]
        counts = browser.evaluate("""Object.fromEntries(['length_bias', 'stability'].map(id => [id,
            [document.querySelector('#' + id + ' .flagcount').textContent,
             document.querySelectorAll('#' + id + ' tr.flag').length]]))""")
        label = "the 95% interval of the slope excludes 0 (the judge's score moves with length more than the humans')"
        assert counts["length_bias"] == [f"⚑ 2 of 4 rows flagged: {label}.", 2]
        assert counts["stability"][1] == 2
        head = browser.evaluate("Array.from(document.querySelectorAll('#length_bias th')).map(th => th.textContent)")
        assert head[:7] == ["⚑", "judge", "criterion", "reference", "length_col", "slope [95% CI]", "rho [95% CI]"]  # read first
        first = browser.evaluate("Array.from(document.querySelectorAll('#length_bias tbody tr')[0].children).map(td => td.textContent)")
        assert first[0] == "⚑ flagged" and first[1] == "gpt" and first[2] == "accuracy" and first[5].count("[") == 1
        lead = browser.evaluate("document.querySelector('#length_bias .lead').textContent + document.querySelector('#length_bias .doc').textContent")
        assert "per standard deviation of log length" in lead and "docs/guide/judges.md#length-bias" in lead
        text = browser.evaluate("document.body.textContent")
        assert HOSTILE_JUDGE in text and "</script>guidance" in text  # as text
        assert browser.evaluate("window.__pwned === undefined && document.querySelectorAll('img, iframe, [onerror]').length === 0")
        assert browser.evaluate("document.scripts.length") == 2
        flips = browser.evaluate("Array.from(document.querySelectorAll('#stability th')).map(th => th.textContent)")
        assert "flip_rate [95% CI]" in flips and "flip_ci_low" not in flips  # the declared interval


@pytest.fixture(scope="module")
def measurement(tmp_path_factory):
    folder = tmp_path_factory.mktemp("measurement")
    tables = measurement_study(folder)
    return folder, tables, write_report(folder)


def _rows(table: pl.DataFrame, expr: pl.Expr) -> list[int]:
    return table.with_row_index("_i").filter(expr)["_i"].to_list()


def test_measurement_sections_collected(measurement):
    folder, _tables, _ = measurement
    data = collect_study(folder)
    sections = {s["kind"]: s for s in data["sections"]}
    assert list(sections) == ["fit", "separation", "bias", "dif"] and all(s["place"] == "theta" for s in sections.values())
    fit, dif, bias = (pl.read_csv(folder / name) for name in ("FIT.csv", "DIF.csv", "BIAS.csv"))
    misfit = _rows(fit, pl.col("flag").is_in(["underfit", "overfit"]))
    assert sections["fit"]["tables"][0]["flagged"] == misfit and len(misfit) == 17
    assert fit.filter((pl.col("facet") == "rater") & (pl.col("flag") == "underfit"))["level"].to_list() == ["r4"]  # planted
    assert sections["dif"]["tables"][0]["flagged"] == _rows(dif, pl.col("ets_class").is_in(["C", "CC"]) | (pl.col("rasch_class") == "C"))
    assert dif.filter(pl.col("ets_class") == "CC")["criterion"].to_list() == ["c3"]  # the planted DIF, and only it
    assert [bias["level_a"][i] + ":" + bias["level_b"][i] for i in sections["bias"]["tables"][0]["flagged"]] == ["r2:c5", "c3:human"]
    assert sections["separation"]["tables"][0]["flagged"] == []
    assert len(data["theta_only"]["rows"]) == 300 and data["facets"][0]["file"] == "FACETS.csv"


@needs_chromium
def test_measurement_sections_drawn(measurement):
    _, tables, page = measurement
    with Chromium(CHROMIUM) as browser:
        browser.navigate(page.as_uri())
        assert browser.console_errors() == []
        ids = browser.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
        assert ids == ["provenance", "theta", "fit", "separation", "bias", "dif"]  # after θ
        flagged = browser.evaluate("Object.fromEntries(['fit', 'bias', 'dif'].map(id => [id, document.querySelectorAll('#' + id + ' tr.flag').length]))")
        assert flagged == {"fit": 17, "bias": 2, "dif": 1}
        dif = browser.evaluate("document.querySelector('#dif .flagcount').textContent")
        assert dif == "⚑ 1 of 6 rows flagged: C-class DIF (ETS C or CC, or Rasch C)."
        head = browser.evaluate("Array.from(document.querySelectorAll('#dif th')).map(th => th.textContent)")
        assert head[:8] == ["⚑", "criterion", "focal", "reference", "ets_class", "favours", "contrast", "rasch_class"]
        row = browser.evaluate("Array.from(document.querySelector('#dif tr.flag').children).map(td => td.textContent)")
        assert row[:8] == ["⚑ flagged", "c3", "human", "llm", "CC", "reference", f"{tables['DIF.csv']['contrast'][2]:.3f}", "C"]
        wright = browser.evaluate("Array.from(document.querySelectorAll('#theta svg text')).map(t => t.textContent).filter(t => t.includes('underfit'))")
        assert len(wright) == 1 and wright[0].startswith("r4 (")
        assert browser.evaluate("document.querySelectorAll('#theta svg .underfit').length") == 1


@pytest.fixture(scope="module")
def dialogue_run(tmp_path_factory):
    from tutormetrics.cli import main

    out = tmp_path_factory.mktemp("dialogue") / "demo"
    assert main(["run", "--example", "dialogue", "-m", "lexical", "--n-resamples", "99", "--no-progress", "-o", str(out)]) == 0
    return out


def test_conversation_ratings_and_theta_collected(dialogue_run, example_dir):
    data = collect_study(dialogue_run)
    cv = data["conversations"]
    targets = pl.read_csv(dialogue_run / "targets.csv")
    theta = pl.read_csv(dialogue_run / "theta.csv")
    conv = pl.read_csv(dialogue_run / "conversations.csv")
    assert cv["ids"] == conv["conversation_id"].to_list() and len(cv["ids"]) == 12
    order = {c: i for i, c in enumerate(targets["conversation_id"])}
    for criterion in ("guidance", "accuracy", "encouragement"):
        assert cv["ratings"][criterion] == [targets[criterion][order[c]] for c in cv["ids"]]  # as correlated
    by_id = dict(zip(theta["conversation_id"], theta["theta"], strict=False))
    assert cv["theta"]["theta"] == pytest.approx([by_id[c] for c in cv["ids"]], rel=1e-5)
    assert cv["values"]["n_turns"] == conv["n_turns"].to_list() and cv["file"] == "conversations.csv"
    long = pl.read_csv(example_dir / "dialogues.csv")
    for i, c in enumerate(cv["ids"]):
        turns = data["dialogues"][cv["dialogue"][i]]["turns"]
        assert [t["text"] for t in turns] == long.filter(pl.col("conversation_id") == c).sort("turn")["text"].to_list()
    assert not any("not shown" in n for n in data["notes"]), data["notes"]
    assert not data["exchanges"]["ratings"]  # the turns have no rating of their own


@needs_chromium
def test_conversations_drawn_searched_and_sorted(dialogue_run):
    targets = pl.read_csv(dialogue_run / "targets.csv")
    theta = pl.read_csv(dialogue_run / "theta.csv")
    with Chromium(CHROMIUM) as browser:
        browser.navigate((dialogue_run / "report.html").as_uri())
        assert browser.console_errors() == []
        ids = browser.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
        assert ids[-2:] == ["conversations", "exchanges"]  # the validated level first
        head = browser.evaluate("Array.from(document.querySelectorAll('#cv-table .dd-head > div')).map(th => th.textContent)")
        assert head[1:7] == ["conversation", "turns", "θ", "guidance", "accuracy", "encouragement"]

        def column(label: str) -> list[str]:
            k = head.index(label)
            return browser.evaluate(f"Array.from(document.querySelectorAll('#cv-table .tm-row:not(.hidden)')).map(r => r.children[{k}].textContent)")

        shown = dict(zip(column("conversation"), column("guidance"), strict=False))
        assert shown == {c: str(int(v)) if v.is_integer() else f"{v:.2f}" for c, v in zip(targets["conversation_id"], targets["guidance"], strict=False)}
        browser.evaluate("Array.from(document.querySelectorAll('#cv-table .dd-head button')).find(b => b.textContent === 'θ').click()")
        by_id = dict(zip(theta["conversation_id"], theta["theta"], strict=False))
        ordered = [by_id[c] for c in column("conversation")]
        assert ordered == sorted(ordered) and len(set(ordered)) > 5  # sorted by θ
        assert [float(v) for v in column("θ")] == pytest.approx(ordered, abs=0.006)
        browser.evaluate("document.getElementById('cv-search').value = 'eighths'; window.tmFilters.cv()")
        assert column("conversation") == ["d02"]  # a word of its turns (“Next time convert to eighths first.”)
        assert browser.evaluate("document.getElementById('cv-count').textContent") == "Showing 1 of 12 conversations"
        assert browser.evaluate("document.querySelectorAll('#conversations .turn').length") == 0  # turns on demand
        browser.evaluate("document.querySelector('#cv-table .tm-row:not(.hidden) .xbtn').click()")
        time.sleep(0.05)
        turns = browser.evaluate("Array.from(document.querySelectorAll('#conversations .turn pre')).map(p => p.textContent)")
        assert turns[-1] == "Next time convert to eighths first." and len(turns) == 4
        detail = browser.evaluate("document.querySelector('#conversations .detail').textContent")
        assert "theta" in detail and "guidance" in detail and "n_tutor_turns" in detail
        browser.evaluate("document.getElementById('cv-search').value = ''; window.tmFilters.cv()")
        assert len(column("conversation")) == 12
        kpis = browser.evaluate("Array.from(document.querySelectorAll('#theta .kpis li')).map(li => li.textContent)")
        assert kpis[0] == "12conversations with θ"
        assert browser.console_errors() == []


def test_many_conversations_embed_a_sample(dialogue_run):
    full = collect_study(dialogue_run)["conversations"]
    data = collect_study(dialogue_run, max_exchanges=5)
    cv = data["conversations"]
    assert len(cv["ids"]) == 5 and [i for i in full["ids"] if i in set(cv["ids"])] == cv["ids"]  # order kept
    assert [data["dialogues"][k]["conversation_id"] for k in cv["dialogue"]] == cv["ids"]  # only their turns embedded
    assert any("random sample of 5 of 12 conversations" in n for n in data["notes"])
    keep = [full["ids"].index(i) for i in cv["ids"]]
    assert cv["ratings"]["guidance"] == [full["ratings"]["guidance"][k] for k in keep]
