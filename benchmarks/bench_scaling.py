"""Scaling: time and peak RSS of ``tutormetrics score`` (a subprocess) on synthetic corpora.

Corpora of N exchanges are built from MRBench with a seeded RNG and written as CSV to a temp dir:
exchanges come in conversation-like groups (one prompt, 6–10 responses, as MRBench's 1,655 exchanges
share 200 prompts), the prompt and every response are drawn from MRBench at random and one word of
each (a ``\\w+`` span chosen at random) is replaced by a random word from the corpus, so texts are
almost never exact duplicates but keep MRBench's length and vocabulary.

Each run is ``tutormetrics score IN -o OUT.csv --metrics M --jobs J --chunk-size 2048`` as a
subprocess (``python -m tutormetrics``); wall time and peak RSS come from ``os.wait4`` on that child
(``VmHWM`` of the CLI's address space, written by a small shim that runs the CLI; with ``--jobs 2``
the spawned workers are reported separately from the CLI's ``RUSAGE_CHILDREN``).

Usage:
    python benchmarks/bench_scaling.py                                   # lexical 1k..200k × jobs 1,2; all 1k
    python benchmarks/bench_scaling.py --lexical-sizes 1000 10000 --full-sizes 1000 10000
    python benchmarks/bench_scaling.py --device cuda --full-sizes 10000 100000 --lexical-sizes --no-md
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

_WORD = re.compile(r"\w+")


def synthetic_corpus(source: Path, n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """``n`` exchanges recombined from MRBench with one word of every text perturbed (seeded)."""
    _ids, prompts, responses = C.read_mrbench(source)
    uprompts = list(dict.fromkeys(prompts))
    rng = np.random.default_rng(seed)
    vocab = sorted({w for t in uprompts[:50] + responses[:400] for w in _WORD.findall(t)})

    def perturb(text: str) -> str:
        spans = [m.span() for m in _WORD.finditer(text)]
        if not spans:
            return text + " " + vocab[rng.integers(len(vocab))]
        a, b = spans[rng.integers(len(spans))]
        return text[:a] + vocab[rng.integers(len(vocab))] + text[b:]

    out_ids, out_p, out_r = [], [], []
    g = 0
    while len(out_ids) < n:
        prompt = perturb(uprompts[rng.integers(len(uprompts))])
        for _ in range(int(rng.integers(6, 11))):
            if len(out_ids) >= n:
                break
            out_ids.append(f"s{g:06d}-{len(out_ids):07d}")
            out_p.append(prompt)
            out_r.append(perturb(responses[rng.integers(len(responses))]))
        g += 1
    return out_ids, out_p, out_r


def write_corpus(path: Path, source: Path, n: int, seed: int = 0) -> dict:
    import polars as pl

    ids, p, r = synthetic_corpus(source, n, seed)
    pl.DataFrame({"exchange_id": ids, "prompt": p, "response": r}).write_csv(path)
    return {"rows": n, "unique_prompts": len(set(p)), "unique_texts": len(set(p) | set(r)),
            "csv_mb": round(path.stat().st_size / 2**20, 1)}  # fmt: skip


def run_cli(
    inp: Path, out: Path, metrics: str, jobs: int, device: str, chunk_size: int, batch_size: int,
    model_name_or_path: str | None = None,
) -> dict:
    """One ``tutormetrics score`` subprocess; returns wall seconds, peak RSS (MiB) and the exit code."""
    for stale in (out, out.with_name(out.name + ".manifest.json")):
        stale.unlink(missing_ok=True)
    rss_file = out.with_name(out.name + ".children_rss")
    rss_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-c", _SHIM, str(rss_file), "score", str(inp), "-o", str(out), "--metrics", metrics,
           "--jobs", str(jobs), "--chunk-size", str(chunk_size), "--no-progress"]  # fmt: skip
    if metrics != "lexical":
        cmd += ["--device", device, "--batch-size", str(batch_size)]
        if model_name_or_path:
            cmd += ["--model-name-or-path", model_name_or_path]
    load = C.load_average()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        print(err[-2000:], file=sys.stderr)
    import json

    rss = json.loads(rss_file.read_text()) if rss_file.exists() else {}
    hwm = rss.get("hwm_kb")
    # VmHWM of the CLI's own address space; ru_maxrss from wait4 would also count the RSS of the
    # process that forked it (here: this benchmark) at fork time.
    peak = hwm / 1024 if hwm else usage.ru_maxrss / 1024
    workers = (rss.get("children_kb") or 0) / 1024 if jobs > 1 else 0
    return {"seconds": wall, "peak_rss_mib": peak, "wait4_maxrss_mib": usage.ru_maxrss / 1024,
            "workers_peak_rss_mib": workers or None,
            "user_s": usage.ru_utime,
            "sys_s": usage.ru_stime, "rc": rc, "load_before": load, "cmd": " ".join(cmd[1:])}  # fmt: skip


#: ``python -c _SHIM RSS_FILE score ...``: runs the CLI in-process (as ``python -m tutormetrics``) and
#: writes its own peak RSS (``VmHWM``) and the largest ``ru_maxrss`` of its children (the ``--jobs``
#: workers, joined at shutdown; an upper bound, since a forked child starts with its parent's RSS).
_SHIM = (
    "import json, resource, sys\n"
    "from tutormetrics.cli import main\n"
    "rss_file = sys.argv.pop(1); sys.argv[0] = 'tutormetrics'\n"
    "try:\n    rc = main()\nexcept SystemExit as e:\n    rc = e.code\n"
    "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
    "json.dump({'hwm_kb': hwm[0] if hwm else None,"
    " 'children_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, open(rss_file, 'w'))\n"
    "sys.exit(rc if isinstance(rc, int) else (0 if rc is None else 1))\n"
)


def _has_option(flag: str) -> bool:
    out = subprocess.run([sys.executable, "-m", "tutormetrics", "score", "--help"], capture_output=True, text=True, check=False)
    return flag in out.stdout


def run(args: argparse.Namespace, model_name_or_path: str | None = None) -> dict:
    res = C.header(args.name)
    tmp = Path(tempfile.mkdtemp(prefix="bench_scaling_"))
    sizes = sorted(set(args.lexical_sizes) | set(args.full_sizes))
    corpora = {}
    for n in sizes:
        t0 = time.perf_counter()
        corpora[n] = write_corpus(tmp / f"syn_{n}.csv", args.input, n, args.seed)
        corpora[n]["build_s"] = round(time.perf_counter() - t0, 2)
        print(f"corpus {n}: {corpora[n]}", file=sys.stderr)
    res.update({"input": str(args.input), "seed": args.seed, "chunk_size": args.chunk_size, "corpora": corpora,
                "device": args.device, "batch_size": args.batch_size, "runs": []})  # fmt: skip
    if not _has_option("--no-progress"):
        raise SystemExit("tutormetrics score has no --no-progress option")

    def record(n: int, metrics: str, jobs: int, rep: int) -> None:
        r = run_cli(tmp / f"syn_{n}.csv", tmp / f"out_{n}.csv", metrics, jobs, args.device, args.chunk_size,
                    args.batch_size, model_name_or_path)  # fmt: skip
        r.update({"rows": n, "metrics": metrics, "jobs": jobs, "rep": rep})
        res["runs"].append(r)
        print(f"  {metrics:7s} n={n:>7,} jobs={jobs} rep={rep}: {r['seconds']:.2f} s, "
              f"peak RSS {r['peak_rss_mib']:.0f} MiB, rc={r['rc']} (load {r['load_before']})", file=sys.stderr)  # fmt: skip
        C.write_json(args.name, dict(res), args.output)  # keep partial results

    deadline = time.monotonic() + args.budget_s if args.budget_s else None

    def lexical() -> None:
        for n in sorted(args.lexical_sizes):
            reps = args.reps if n <= args.reps_up_to else 1
            for rep in range(reps):
                for jobs in args.jobs:  # alternate so that load drift hits both
                    if deadline and time.monotonic() > deadline:
                        print(f"  budget spent; skipping lexical n={n}", file=sys.stderr)
                        break
                    record(n, "lexical", jobs, rep)

    def full() -> None:
        for n in sorted(args.full_sizes):
            if deadline and time.monotonic() > deadline:
                print(f"  budget spent; skipping full n={n}", file=sys.stderr)
                continue
            record(n, "all", 1, 0)

    for step in ((full, lexical) if getattr(args, "full_first", False) else (lexical, full)):
        step()
    res["summary"] = summarize(res["runs"])
    return res


def summarize(runs: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        if r["rc"] == 0:
            groups.setdefault((r["metrics"], r["jobs"], r["rows"]), []).append(r)
    out = []
    for (metrics, jobs, rows), rs in sorted(groups.items()):
        med = C.median([r["seconds"] for r in rs])
        out.append({"metrics": metrics, "jobs": jobs, "rows": rows, "runs": len(rs), "median_s": med,
                    "rows_per_s": rows / med, "us_per_row": 1e6 * med / rows,
                    "peak_rss_mib": max(r["peak_rss_mib"] for r in rs),
                    "workers_peak_rss_mib": max((r.get("workers_peak_rss_mib") or 0) for r in rs) or None})  # fmt: skip
    return out


def markdown(res: dict, title: str) -> str:
    summ = res["summary"]
    rows = [[s["metrics"], s["jobs"], f"{s['rows']:,}", s["runs"], f"{s['median_s']:.2f}", f"{s['rows_per_s']:,.0f}",
             f"{s['us_per_row']:.0f}", f"{s['peak_rss_mib']:,.0f}",
             f"{s['workers_peak_rss_mib']:,.0f}" if s.get("workers_peak_rss_mib") else "–"] for s in summ]  # fmt: skip
    jobs_rows = []
    by = {(s["metrics"], s["jobs"], s["rows"]): s for s in summ}
    for (m, j, n), s in sorted(by.items()):
        if m == "lexical" and j == 1 and ("lexical", 2, n) in by:
            s2 = by[("lexical", 2, n)]
            jobs_rows.append([f"{n:,}", f"{s['median_s']:.2f}", f"{s2['median_s']:.2f}",
                              f"{s['median_s'] / s2['median_s']:.2f}×"])  # fmt: skip
    big = [s for s in summ if s["rows"] >= 200_000]
    rss_ok = all(s["peak_rss_mib"] <= 2048 for s in big) if big else None
    lex1 = [s for s in summ if s["metrics"] == "lexical" and s["jobs"] == 1]
    lin = ""
    if len(lex1) >= 2:
        a, b = lex1[-2], lex1[-1]
        lin = (f"Linearity (lexical, jobs 1): {a['us_per_row']:.0f} µs/row at {a['rows']:,} vs {b['us_per_row']:.0f} µs/row "
               f"at {b['rows']:,} rows (fixed start-up cost dominates the small sizes).")  # fmt: skip
    corp = ", ".join(f"{int(n):,}: {c['unique_texts']:,} unique texts / {c['csv_mb']} MB" for n, c in res["corpora"].items())
    text = f"""## {title}

Synthetic corpora (seed {res['seed']}; {corp}); `tutormetrics score` as a subprocess, chunk size {res['chunk_size']}, device {res['device']} for the full suite. Wall time includes interpreter start-up, imports, model load, CSV read and write. Peak RSS = `VmHWM` of the CLI process; with `--jobs 2` the spawned workers have their own RSS, reported separately (largest worker, `RUSAGE_CHILDREN` of the CLI: an upper bound, a forked child starts with its parent's RSS).

{C.md_table(rows, ["metrics", "--jobs", "rows", "runs", "median s", "rows/s", "µs/row", "peak RSS MiB (CLI)", "peak RSS MiB (largest worker)"])}

{lin}
"""
    if big:
        text += f"\nTarget 200k with peak RSS ≤ 2 GiB: **{'met' if rss_ok else 'missed'}**.\n"
    if jobs_rows:
        text += "\n`--jobs 1` vs `--jobs 2` (lexical only; ratio > 1 means 2 workers are faster):\n\n"
        text += C.md_table(jobs_rows, ["rows", "jobs 1 s", "jobs 2 s", "jobs1/jobs2"]) + "\n"
    return text + "\n" + C.env_lines(res) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--lexical-sizes", type=int, nargs="*", default=[1000, 10_000, 100_000, 200_000])
    ap.add_argument("--full-sizes", type=int, nargs="*", default=[1000])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3, help="repetitions for sizes <= --reps-up-to")
    ap.add_argument("--reps-up-to", type=int, default=10_000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--chunk-size", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=0, help="skip remaining runs after this many seconds (0: none)")
    ap.add_argument("--name", default="scaling", help="result name (results/NAME.json, RESULTS.md section)")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)
    res = run(args)
    return C.publish(args, res, markdown(res, "3. Scaling (`bench_scaling.py`)"))


if __name__ == "__main__":
    raise SystemExit(main())
