"""The HTML report at 2,000 exchanges: file size and time to interactive in headless Chromium.

Builds a study of 2,000 MRBench exchanges (all 1,655, then a seeded resample with suffixed ids to reach
2,000; prompts are MRBench's long dialogue histories), hostile strings salted in, scored with the lexical
metrics plus 18 random encoder-shaped columns (``emb_*``, ``sync_*``) so the embedded table is as wide as a
full run's 40 metrics. Then measures:

- the size of ``report.html`` (goal ≤ 15 MB) and the time ``write_report`` takes;
- time to interactive in headless Chromium: ``performance.now()`` when the renderer has drawn every section
  (navigation start = 0), and the wall time from ``Page.navigate`` to that point, median of 5 loads;
- the latency of a drill-down search and a sort, in the page.

Goal: interactive ≤ 2 s. Saves a screenshot to ``benchmarks/results/report.png`` (top of the page) and
``report_drilldown.png`` (an expanded hostile row).

    python benchmarks/bench_report.py [--n 2000] [--loads 5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

from cdp_chromium import Chromium, find_chromium
from report_study import MARKER, build_study, salt

from _common import (
    DEFAULT_MRBENCH,
    DEFAULT_RATINGS,
    RESULTS_DIR,
    env_lines,
    header,
    md_table,
    median,
    update_results_md,
    write_json,
)

ENCODER_SHAPED = [f"emb_{k}" for k in ("mean_cos", "extrema_cos", "greedy", "greedy_precision", "greedy_recall", "greedy_f1")] + [
    f"sync_l{i:02d}" for i in range(7)] + [f"sync_{k}" for k in ("min", "mean", "max", "mid", "last")]


def inputs(n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    ex = pl.read_csv(DEFAULT_MRBENCH)
    ratings = pl.read_csv(DEFAULT_RATINGS).select("exchange_id", "rater", "criterion", "score")
    extra = ex.sample(n - ex.height, with_replacement=True, seed=17) if n > ex.height else ex.head(0)
    extra = extra.with_columns((pl.col("exchange_id") + "#" + pl.int_range(pl.len()).cast(pl.String)).alias("new_id"))
    extra_ratings = ratings.join(extra.select("exchange_id", "new_id"), on="exchange_id").drop("exchange_id").rename({"new_id": "exchange_id"})
    ex = pl.concat([ex.head(n), extra.drop("exchange_id").rename({"new_id": "exchange_id"}).select(ex.columns)])
    ratings = pl.concat([ratings, extra_ratings.select(ratings.columns)])
    return ex, ratings


def widen(study: Path, seed: int = 0) -> None:
    """Add the encoder-shaped columns to metrics.csv and record its new hash in run.json (else the report leaves the
    changed table out as stale: report/provenance.py)."""
    import json

    from tutormetrics.io.tables import read_table, write_table
    from tutormetrics.report.provenance import record_hashes

    metrics = read_table(study / "metrics.csv")
    rng = np.random.default_rng(seed)
    metrics = metrics.with_columns([pl.Series(c, rng.uniform(0.2, 0.95, metrics.height)) for c in ENCODER_SHAPED])
    write_table(metrics, study / "metrics.csv")
    run = json.loads((study / "run.json").read_text(encoding="utf8"))
    run["file_sha256"].update(record_hashes(study, ["metrics.csv"]))
    (study / "run.json").write_text(json.dumps(run, indent=1), encoding="utf8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="also copy the report here")
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None or not DEFAULT_MRBENCH.exists():
        print("needs chromium and ../shared/data/mrbench", file=sys.stderr)
        return 2
    from tutormetrics.report import write_report

    result = header("report")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        ex, ratings = inputs(args.n)
        ex, ratings, salted = salt(ex, ratings)
        study = build_study(ex, ratings, Path(tmp), extras=True)
        widen(study)
        t0 = time.perf_counter()
        page = write_report(study)
        build_s = time.perf_counter() - t0
        size = page.stat().st_size
        n_metrics = pl.scan_csv(study / "metrics.csv").collect_schema().len() - 1
        loads, ready_ms, drawn_ms, scroll_ms = [], [], [], []
        with Chromium(chromium, width=1280, height=900) as browser:
            for _ in range(args.loads):
                browser.events.clear()
                loads.append(browser.navigate(page.as_uri()))
                ready_ms.append(browser.evaluate("window.tmInteractiveMs"))
                drawn_ms.append(browser.evaluate("window.tmReadyMs"))
                scroll_ms.append(browser.evaluate("""new Promise(res => { const t = performance.now();
                    document.getElementById('exchanges').scrollIntoView();
                    requestAnimationFrame(() => setTimeout(() => res(performance.now() - t), 0)); })"""))
            errors = browser.console_errors()
            rows = browser.evaluate("document.querySelectorAll('#dd-table .tm-row').length")
            search_ms = browser.evaluate(f"""(() => {{ const s = document.getElementById('dd-search'); s.value = '{MARKER}2';
                const t = performance.now(); window.tmFilter(); return performance.now() - t; }})()""")
            found = browser.evaluate("document.querySelectorAll('#dd-table .tm-row:not(.hidden)').length")
            browser.evaluate("(() => { document.getElementById('dd-search').value = ''; window.tmFilter(); })()")
            sort_ms = browser.evaluate("""(() => { const b = Array.from(document.querySelectorAll('#dd-table .dd-head button'))
                .find(b => b.textContent.startsWith('words')); const t = performance.now(); b.click(); return performance.now() - t; })()""")
            browser.evaluate("window.scrollTo(0, 0)")
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            browser.screenshot(RESULTS_DIR / "report.png", full_height=2000)
            hostile_id = next(iter(salted))
            browser.evaluate(f"""(() => {{ document.getElementById('dd-search').value = '{MARKER}0'; window.tmFilter();
                const row = document.querySelector('#dd-table .tm-row:not(.hidden)'); row.querySelector('.xbtn').click();
                document.getElementById('exchanges').scrollIntoView(); }})()""")
            time.sleep(0.3)
            browser.evaluate("document.getElementById('exchanges').scrollIntoView()")
            time.sleep(0.2)
            browser.screenshot(RESULTS_DIR / "report_drilldown.png")
        if args.keep:
            shutil.copy(page, args.keep)
    result.update(
        n_exchanges=ex.height, n_metric_columns=n_metrics, size_bytes=size, size_mb=round(size / 1e6, 2), build_s=round(build_s, 2),
        load_wall_s=[round(x, 3) for x in loads], interactive_ms=[round(x, 1) for x in ready_ms],
        drawn_ms=[round(x, 1) for x in drawn_ms], scroll_to_drilldown_ms=[round(x, 1) for x in scroll_ms], console_errors=errors,
        drilldown_rows=rows, search_ms=round(search_ms, 1), search_hits=found, sort_ms=round(sort_ms, 1), hostile_example=hostile_id,
    )
    write_json("report", result)
    body = f"""## 6. HTML report at {ex.height:,} exchanges (`bench_report.py`)

{ex.height:,} MRBench exchanges (1,655 plus a seeded resample with suffixed ids; prompts are the long dialogue histories,
mean ≈ 900 characters), hostile strings salted into replies, {n_metrics} numeric columns (22 lexical metrics scored, 18
encoder-shaped columns of random floats so the table is as wide as a full run's), θ, per-tutor summary, comparisons
and a second (controlled) correlation table. Goals: size ≤ 15 MB, interactive ≤ 2 s — **{"met" if size <= 15e6 and median(ready_ms) <= 2000 else "not met"}**.

{md_table([
    ["report.html size", f"{size / 1e6:.2f} MB"],
    ["write_report (Python, read tables + texts + render)", f"{build_s:.2f} s"],
    [f"time to interactive in headless Chromium (every section drawn and the first frame laid out and painted, from navigation start; median of {len(ready_ms)})", f"**{median(ready_ms):.0f} ms** (runs: {', '.join(f'{x:.0f}' for x in ready_ms)})"],
    ["… of which the renderer script (parse JSON, build every section and all rows)", f"{median(drawn_ms):.0f} ms"],
    ["scroll to the drill-down, until the next frame is painted (rows off screen skip layout: content-visibility)", f"{median(scroll_ms):.0f} ms"],
    ["wall time Page.navigate → ready (median)", f"{median(loads) * 1000:.0f} ms"],
    ["drill-down rows", f"{rows:,} (one per exchange)"],
    ["search (first query builds the lowercase index)", f"{search_ms:.0f} ms, {found} hit(s)"],
    ["sort by words", f"{sort_ms:.0f} ms"],
    ["console errors", str(len(errors))],
], ["measure", "value"])}

Screenshots: `benchmarks/results/report.png` (top of the page), `benchmarks/results/report_drilldown.png` (an expanded row
with a hostile reply shown as text).

{env_lines(result)}
- Browser: Debian `chromium` headless (`--no-sandbox`), driven over `--remote-debugging-pipe` (tests/integration/cdp_chromium.py)
"""
    update_results_md("report", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
