"""Collect the headline figures of every benchmark JSON into the "Summary" section of RESULTS.md.

Usage:
    python benchmarks/summarize.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def _load(name: str) -> dict | None:
    p = C.RESULTS_DIR / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


ORDER = ["summary", "provenance", "peers", "peers_notes", "floor", "floor_notes", "scaling", "scaling_jobs", "scaling_notes", "stats", "partial", "gpu", "gpu_probe", "report"]


def reorder() -> None:
    """Put the sections of RESULTS.md in benchmark order (unknown sections keep their place at the end)."""
    import re

    text = C.RESULTS_MD.read_text(encoding="utf-8")
    blocks = dict(re.findall(r"(<!-- bench:([\w-]+) -->.*?<!-- /bench:\2 -->)", text, re.DOTALL)[i][::-1]
                  for i in range(len(re.findall(r"<!-- bench:([\w-]+) -->", text))))
    first = text.index("<!-- bench:")
    names = [n for n in ORDER if n in blocks] + [n for n in blocks if n not in ORDER]
    C.RESULTS_MD.write_text(text[:first] + "\n\n".join(blocks[n] for n in names) + "\n", encoding="utf-8")


def main() -> int:
    rows = []
    if (r := _load("peers")) is not None:
        rows.append(["1 vs peers (CLI, end to end)", f"{r['n_rows']} rows", "≥ 4×",
                     f"{r['ratio_naive_end_to_end_over_ours_cli']:.1f}×", r["load_average_start"][0]])
        rows.append(["1 vs peers (in-process, warm)", f"{r['n_rows']} rows", "≥ 4×",
                     f"{r['ratio_naive_warm_over_ours_inprocess']:.1f}×", r["load_average_start"][0]])
    if (r := _load("floor")) is not None:
        rows.append(["2 full suite / floor (CPU)", f"{r['n_rows']:,} rows", "≤ 1.25",
                     f"{r['ratio_time']:.2f} (per token {r['ratio_per_token']:.2f})", r["load_average_start"][0]])
    for bs in (32, 128):
        if (r := _load(f"floor_gpu_bs{bs}")) is not None:
            rows.append([f"2 full suite / floor (H200, batch {bs})", f"{r['n_rows']:,} rows", "≤ 1.25",
                         f"{r['ratio_time']:.2f} (per token {r['ratio_per_token']:.2f})", r["load_average_start"][0]])
    if (r := _load("gpu_probe")) is not None:
        for bs, b in r["by_batch"].items():
            rows.append([f"2 … with CPU families in a process (H200, batch {bs}, prototype)", f"{r['rows']:,} rows",
                         "≤ 1.25", f"{b['ratio_process']:.2f}", "–"])
    if (r := _load("scaling")) is not None:
        big = [s for s in r.get("summary", []) if s["rows"] == 200_000]
        for s in big:
            rows.append([f"3 lexical 200k, --jobs {s['jobs']}", "200,000 rows", "RSS ≤ 2 GiB",
                         f"{s['median_s']:.0f} s, {s['peak_rss_mib']:.0f} MiB"
                         + (f" (+ workers ≤ {s['workers_peak_rss_mib']:.0f} MiB each)" if s.get("workers_peak_rss_mib") else ""),
                         "see §3"])
    if (r := _load("scaling_gpu")) is not None:
        for s in r.get("summary", []):
            if s["metrics"] == "all":
                rows.append([f"3 full suite on H200, {s['rows']:,} rows", "CLI", "RSS ≤ 2 GiB",
                             f"{s['median_s']:.0f} s, {s['peak_rss_mib']:.0f} MiB", r["load_average_start"][0]])
    if (r := _load("stats")) is not None:
        rows.append(["4 Spearman 40×12 BCa 2k: scipy / vectorised", f"{r['n_rows']:,} rows", "≥ 20×",
                     f"{r['speedup']:.0f}×" + (" (scipy extrapolated)" if r["scipy"]["extrapolated"] else ""),
                     r["load_average_start"][0]])
    if (r := _load("report")) is not None:
        rows.append(["6 HTML report: size, time to interactive (headless Chromium)", f"{r['n_exchanges']:,} exchanges",
                     "≤ 15 MB, ≤ 2 s", f"{r['size_mb']:.2f} MB, {C.median(r['interactive_ms']):.0f} ms", r["load_average_start"][0]])
    if (r := _load("partial")) is not None:
        rows.append([f"6 partial Spearman 40×12 BCa 2k, control {r['control']}: time / raw", f"{r['n_rows']:,} rows", "≤ 1.5×",
                     f"{r['ratio_median']:.2f}× (CPU time)", r["load_average_start"][0]])
    body = "## Summary\n\n" + C.md_table(rows, ["benchmark", "size", "target", "measured", "1-min load at start"])
    body += "\n\nDetails, environment and exact commands per section below; every run in `benchmarks/results/*.json`.\n"
    C.update_results_md("summary", body)
    reorder()
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
