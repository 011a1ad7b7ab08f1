"""Long replies: peak memory and time of ``tutormetrics score --metrics all`` on one multi-megabyte reply.

The reply is built by joining MRBench texts (tutor replies, then prompts, cycled) with newlines until it
reaches N MiB; the input holds it, as the response to a real MRBench prompt, and nine ordinary MRBench
exchanges. Each size runs ``tutormetrics score IN -o OUT --metrics all --device cpu`` as a subprocess
(the ``bench_scaling`` shim): wall time and the CLI's ``VmHWM``. Token states of a text above
``spill_mb`` (64 MiB, ≈ 43k MiniLM pieces) live on disk (``encoders/spill.py``), so the peak should not
grow with the reply.

Usage:
    python benchmarks/bench_long_text.py                 # 1 and 5 MiB
    python benchmarks/bench_long_text.py --sizes 0.25 1
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from bench_scaling import run_cli


def long_reply(source: Path, mib: float) -> str:
    """MRBench replies then prompts, cycled and joined with ``\\n``, until ``mib`` MiB of characters."""
    df = pl.read_csv(source)
    parts, n = [], 0
    for text in itertools.cycle(df["response"].to_list() + df["prompt"].to_list()):
        parts.append(text)
        n += len(text) + 1
        if n >= mib * 2**20:
            break
    return "\n".join(parts)


def write_input(path: Path, source: Path, mib: float) -> dict:
    df = pl.read_csv(source).head(10)
    reply = long_reply(source, mib)
    responses = [reply, *df["response"].to_list()[1:]]
    pl.DataFrame({"exchange_id": df["exchange_id"], "prompt": df["prompt"], "response": responses}).write_csv(path)
    return {"reply_chars": len(reply), "reply_mib": round(len(reply.encode()) / 2**20, 2), "rows": len(df)}


def run(args: argparse.Namespace) -> dict:
    res = C.header(args.name)
    res["runs"] = []
    with tempfile.TemporaryDirectory() as tmp:
        for mib in args.sizes:
            inp, out = Path(tmp) / f"long-{mib}.csv", Path(tmp) / f"long-{mib}-out.csv"
            info = write_input(inp, args.input, mib)
            r = run_cli(inp, out, "all", 1, "cpu", 2048, args.batch_size)
            row = {"mib": mib, **info, **r}
            if r["rc"] == 0:
                frame = pl.read_csv(out)
                row["first_row"] = {c: frame[c][0] for c in ("emb_mean_cos", "emb_greedy_f1", "sync_last", "mtld")
                                    if c in frame.columns}  # fmt: skip
            res["runs"].append(row)
            print(f"{mib} MiB: {r['seconds']:.1f} s, peak {r['peak_rss_mib']:.0f} MiB, rc {r['rc']}", flush=True)
    return res


def markdown(res: dict) -> str:
    rows = [[f"{r['mib']:g}", f"{r['reply_chars']:,}", f"{r['seconds']:.0f}", f"{r['peak_rss_mib']:,.0f}", r["rc"]]
            for r in res["runs"]]  # fmt: skip
    ok = all(r["rc"] == 0 and r["peak_rss_mib"] <= 2048 for r in res["runs"])
    return f"""## 13. One long reply (`bench_long_text.py`)

One reply of N MiB (MRBench texts joined) plus nine ordinary exchanges; `tutormetrics score --metrics all --device cpu`
as a subprocess; peak RSS = the CLI's `VmHWM`. Goal: a 5 MiB reply stays under 2 GiB — **{'met' if ok else 'missed'}**.

{C.md_table(rows, ["reply MiB", "reply chars", "wall s", "peak RSS MiB", "exit"])}

{C.env_lines(res)}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1.0, 5.0])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--name", default="long_text")
    ap.add_argument("--output", type=Path, default=None)
    ap.add_argument("--no-md", action="store_true")
    args = ap.parse_args(argv)
    res = run(args)
    return C.publish(args, res, markdown(res))


if __name__ == "__main__":
    raise SystemExit(main())
