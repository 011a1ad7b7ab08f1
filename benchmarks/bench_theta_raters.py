"""θ with many raters: memory and time of ``tutormetrics theta`` against the number of raters (issue 28).

Data: seeded simulation of ``--exchanges`` exchanges × ``--criteria`` binary criteria, each exchange rated by
``--per-exchange`` distinct raters out of ``--raters`` (round k gives exchange i rater ``(i + k·⌊R/P⌋) mod R``, so
every rater rates about ``exchanges × per_exchange / raters`` of them), scores from the MFRM with θ ~ N(0, 1),
b ~ U(−1.5, 1.5), s ~ N(0, 0.5²). Default: 20k raters × 5 criteria × 2k exchanges × 10 raters each = 100k ratings.

Each case runs ``tutormetrics theta RATINGS -o THETA --facets FACETS`` in a fresh process (facet SEs
included); the peak resident memory is that child's ``ru_maxrss``. Goal: θ ≤ 2 GiB and ≤ 60 s at 20k raters.

Usage:
    python benchmarks/bench_theta_raters.py                          # 1k, 5k, 20k raters
    python benchmarks/bench_theta_raters.py --raters 20000 --runs 1
    python benchmarks/bench_theta_raters.py --src /tmp/base/src --raters 2000 --no-md --name theta_raters_base
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def simulate(exchanges: int, raters: int, criteria: int, per_exchange: int, seed: int = 0) -> pl.DataFrame:
    """Long binary ratings (exchange_id, rater, criterion, score) of the design in the module docstring."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(exchanges)
    b = rng.uniform(-1.5, 1.5, criteria)
    s = rng.normal(0.0, 0.5, raters)
    slots = np.arange(exchanges * per_exchange)
    item = slots % exchanges
    rater = (item + slots // exchanges * max(raters // per_exchange, 1)) % raters  # distinct raters per exchange
    item, rater = np.repeat(item, criteria), np.repeat(rater, criteria)
    crit = np.tile(np.arange(criteria), slots.size)
    eta = theta[item] - b[crit] - s[rater]
    score = (rng.random(eta.size) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    return pl.DataFrame({
        "exchange_id": [f"e{i:05d}" for i in item], "rater": [f"r{r:06d}" for r in rater],
        "criterion": [f"c{j}" for j in crit], "score": score,
    }).unique(["exchange_id", "rater", "criterion"], keep="first", maintain_order=True)  # fmt: skip


def run_theta(ratings: Path, out: Path, src: str | None) -> tuple[float, float, float, int, str]:
    """(wall s, CPU s, peak RSS GiB, exit code, last stderr line) of one ``theta`` child process."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, "-m", "tutormetrics", "theta", str(ratings), "-o", str(out / "theta.csv"),
           "--facets", str(out / "facets.csv")]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # ru_maxrss: the largest child so far
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return wall, cpu, after.ru_maxrss / 2**20, proc.returncode, lines[-1] if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raters", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--exchanges", type=int, default=2000)
    ap.add_argument("--criteria", type=int, default=5)
    ap.add_argument("--per-exchange", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--src", default=None, help="PYTHONPATH of the tutormetrics to time (default: the installed one)")
    ap.add_argument("--name", default="theta_raters")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args()
    result = C.header(args.name) | {"cases": []}
    rows = []
    with tempfile.TemporaryDirectory(prefix="tm-theta-raters-") as tmp:
        for n_raters in sorted(args.raters, key=lambda r: r):  # ru_maxrss is a running maximum: small first
            ratings = Path(tmp) / f"ratings_{n_raters}.csv"
            df = simulate(args.exchanges, n_raters, args.criteria, args.per_exchange)
            df.write_csv(ratings)
            for run in range(args.runs):
                load = C.load_average()
                wall, cpu, gib, code, last = run_theta(ratings, Path(tmp), args.src)
                print(f"  {n_raters} raters run {run + 1}: {wall:.1f} s, CPU {cpu:.1f} s, {gib:.2f} GiB, exit {code} "
                      f"(load {load})", file=sys.stderr)  # fmt: skip
                result["cases"].append({"raters": n_raters, "ratings": df.height, "wall_s": wall, "cpu_s": cpu,
                                        "peak_gib": gib, "exit": code, "load": load, "summary": last})  # fmt: skip
            case = [c for c in result["cases"] if c["raters"] == n_raters]
            rows.append([f"{n_raters:,}", f"{df.height:,}", f"{C.median([c['wall_s'] for c in case]):.1f}",
                         f"{C.median([c['cpu_s'] for c in case]):.1f}", f"{max(c['peak_gib'] for c in case):.2f}",
                         case[-1]["exit"], case[-1]["load"]])  # fmt: skip
    body = "\n".join([
        "## 19. θ with many raters (`bench_theta_raters.py`, issue 28)", "",
        (f"{args.exchanges:,} exchanges × {args.criteria} binary criteria, {args.per_exchange} raters per exchange; "
         "`tutormetrics theta R -o T --facets F` in a fresh process (facet SEs included). Peak memory: the child's "
         "ru_maxrss (a running maximum over the children, so cases run smallest first)."),
        "Goal: 20k raters ≤ 2 GiB and ≤ 60 s.", "",
        C.md_table(rows, ["raters", "ratings", "wall s (median)", "CPU s (user+sys)", "peak GiB", "exit", "load before"]), "",
        C.env_lines(result),
    ])  # fmt: skip
    return C.publish(args, result, body)


if __name__ == "__main__":
    raise SystemExit(main())
