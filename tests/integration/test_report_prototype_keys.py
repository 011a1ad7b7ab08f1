"""Criteria, metrics and ids named like JavaScript object properties (``constructor``, ``toString``,
``__proto__``) are shown in the report like any other name (issue 28), in a real browser (headless Chromium;
skipped without it)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from cdp_chromium import Chromium, find_chromium

from tutormetrics.report import write_report

CHROMIUM = find_chromium()
NAMES = ["constructor", "toString", "__proto__", "hasOwnProperty", "accuracy"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium)")
    out = tmp_path_factory.mktemp("proto")
    rows = [
        {"metric": metric, "target": target, "n": 30, "rho": rho, "ci_low": rho - 0.2, "ci_high": rho + 0.2,
         "p": 0.01, "p_adj": 0.02, "stars": "*"}
        for metric, base in (("resp_words", 0.1), ("valueOf", -0.1))
        for target, rho in zip(NAMES, [base + 0.1 * k for k in range(len(NAMES))], strict=True)
    ]  # fmt: skip
    pl.DataFrame(rows).write_csv(out / "correlations.csv")
    ids = ["constructor", "__proto__", "toString", "e4"]
    pl.DataFrame({"exchange_id": ids, "resp_words": [1.0, 2.0, 3.0, 4.0], "valueOf": [0.5, 0.1, 0.9, 0.3]}).write_csv(out / "metrics.csv")
    pl.DataFrame({"exchange_id": ids, "theta": [0.1, -0.3, 0.8, 0.2], "theta_sd": [0.5] * 4}).write_csv(out / "theta.csv")
    path = write_report(out)
    with Chromium(CHROMIUM) as browser:
        browser.navigate(path.as_uri())
        yield browser, path


def test_the_names_are_in_the_embedded_data(page):
    _, path = page
    text = path.read_text(encoding="utf8")
    for name in NAMES:
        assert json.dumps(name) in text


def test_prototype_named_criteria_are_heatmap_columns(page):
    browser, _ = page
    assert browser.console_errors() == []
    labels = browser.evaluate("Array.from(document.querySelectorAll('#heatmap svg text')).map(t => t.textContent)")
    for name in NAMES:
        assert name in labels, f"{name} missing from the heatmap"
    assert "valueOf" in labels and "resp_words" in labels
    cells = browser.evaluate("document.querySelectorAll('#heatmap svg [role=gridcell]').length")
    assert cells == 2 * len(NAMES)
    options = browser.evaluate("Array.from(document.querySelectorAll('#hm-target option')).map(o => o.value)")
    assert [o for o in options if o] == NAMES


def test_prototype_named_ids_keep_their_values(page):
    browser, _ = page
    text = browser.evaluate("document.body.innerText")
    for name in ("constructor", "__proto__", "toString"):
        assert name in text
    assert "function Object()" not in text and "[object Object]" not in text


def test_the_stale_banner_is_shown_first(tmp_path):
    """Parts run.json does not vouch for are named in a banner at the top of the page."""
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (apt-get install -y chromium)")
    from tutormetrics.report.provenance import record_hashes

    pl.DataFrame({"metric": ["resp_words"], "target": ["accuracy"], "n": [30], "rho": [0.4], "p": [0.01], "p_adj": [0.01],
                  "stars": ["*"]}).write_csv(tmp_path / "correlations.csv")  # fmt: skip
    run = {"file_sha256": record_hashes(tmp_path, ["correlations.csv"]), "run_files": ["correlations.csv", "agreement.csv"]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    pl.DataFrame({"criterion": ["old"], "n": [3], "kappa": [0.9]}).write_csv(tmp_path / "agreement.csv")
    path = write_report(tmp_path)
    with Chromium(CHROMIUM) as browser:
        browser.navigate(path.as_uri())
        assert browser.console_errors() == []
        first = browser.evaluate("document.getElementById('main').firstElementChild.id")
        banner = browser.evaluate("document.getElementById('stale').innerText")
        sections = browser.evaluate("Array.from(document.querySelectorAll('section.card')).map(s => s.id)")
    assert first == "stale"
    assert "agreement.csv was written by an earlier run" in banner
    assert "agreement" not in sections
