"""Issue 16 on a GPU: encoder tokens/s, the plain-PyTorch floor, suite vs encoder pass, 100k-row CLI, drift.

Run once on the device with ``bash benchmarks/gpu/run_issue16.sh`` (after ``python benchmarks/gpu/bench_gpu.py
prepare`` here, which stages the model, wheels and MRBench). Every step writes ``$OUT/issue16.json`` as it
finishes, so a run cut short by its time limit still returns what it measured. Steps, in order:

1. ``drift``: the full suite (``Scorer("all")``) on the 1,655 MRBench rows in float32, bfloat16 and float16;
   max |Δ| against float32 per column (goal ≤ 1e-3 on every column).
2. ``encoder``: ``TextEncoder.encode`` on 100k real-length texts (MRBench prompts and replies, each made
   unique by one perturbed word), float32 and bfloat16: tokens/s incl. CLS/SEP (goals ≥ 1M and ≥ 3M).
3. ``floor``: the best plain PyTorch loop for the same forward pass (tokenise once, length-sorted
   token-budget batches, pinned non-blocking copies, ``output_hidden_states=True`` with a masked sum of
   every layer kept on the device, one sync at the end) on the same 100k texts truncated to 256, and the old
   floor (``bench_floor.floor_pass``: tokenise per batch, batch 128) on the first 20k of them (it is slow).
4. ``suite``: ``Scorer("all")`` in-process on 100k exchanges vs the encoder pass over their unique texts
   (goal ≤ 1.2×).
5. ``cli``: ``tutormetrics score`` on the 100k-row CSV as a subprocess, end to end (goal ≤ 30 s).

Locally (CPU dry run, small sizes): ``python benchmarks/gpu/bench_issue16.py --device cpu --n-texts 300
--n-rows 300 --drift-rows 40 --dtypes float32``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

GPU = Path(__file__).resolve().parent
sys.path.insert(0, str(GPU.parent))
sys.path.insert(0, str(GPU))
import _common as C

RESULT: dict = {}


def save(out: Path) -> None:
    (out / "issue16.json").write_text(json.dumps(RESULT, indent=1, default=str))


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def real_texts(data: Path, n: int) -> list[str]:
    """``n`` unique MRBench-length texts (prompts and replies with one word perturbed, seeded)."""
    import bench_scaling

    _ids, prompts, responses = bench_scaling.synthetic_corpus(data, n, seed=1)
    texts = list(dict.fromkeys(p for pair in zip(prompts, responses, strict=True) for p in pair))
    return texts[:n]


def encoder_pass(model: str, device: str, dtype: str, texts: list[str], batch_size: int) -> dict:
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder

    enc = TextEncoder(EncoderConfig(model_name_or_path=model, device=device, dtype=dtype, batch_size=batch_size))
    enc.load()
    enc.encode(texts[:2000], progress=False)  # warm-up: kernels, allocator, autocast weight casts
    sync(device)
    t0 = time.perf_counter()
    out = enc.encode(texts, progress=False)
    sync(device)
    s = time.perf_counter() - t0
    tokens = int(out.n_content_tokens.sum() + enc.n_special_tokens * out.n_windows.sum())
    return {"dtype": dtype, "seconds": s, "tokens": tokens, "tokens_per_s": tokens / s, "texts": len(texts),
            "windows": int(out.n_windows.sum()), "loader": enc.loader, "batch_tokens": enc.config.batch_budget(enc.device.type, enc.max_seq_length)}  # fmt: skip


def plain_floor(model: str, device: str, texts: list[str], budget_tokens: int) -> dict:
    """The best plain PyTorch loop we could write for the same forward pass (see module docstring)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
    net = AutoModel.from_pretrained(model, local_files_only=True).to(device).eval()
    torch.set_float32_matmul_precision("highest")

    def run(sub: list[str]) -> tuple[float, int]:
        sync(device)
        t0 = time.perf_counter()
        ids = tok(sub, truncation=True, max_length=256, verbose=False)["input_ids"]
        lens = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lens, kind="stable")
        keep = []
        with torch.inference_mode():
            b0 = 0
            while b0 < len(order):
                n = max(1, budget_tokens // int(lens[order[b0]]))
                sel = order[b0 : b0 + n]
                T = int(lens[sel[0]])
                arr = np.zeros((len(sel), T), dtype=np.int64)
                for i, j in enumerate(sel):
                    arr[i, : lens[j]] = ids[j]
                mask = (np.arange(T)[None, :] < lens[sel][:, None]).astype(np.int64)
                x, m = torch.from_numpy(arr), torch.from_numpy(mask)
                if device.startswith("cuda"):
                    x = x.pin_memory().to(device, non_blocking=True)
                    m = m.pin_memory().to(device, non_blocking=True)
                hs = net(input_ids=x, attention_mask=m, output_hidden_states=True).hidden_states
                mf = m.unsqueeze(-1).float()
                keep.append(torch.stack([(h * mf).sum(1) for h in hs], 1))
                b0 += n
        sync(device)
        return time.perf_counter() - t0, int(lens.sum())

    run(texts[:2000])
    s, tokens = run(texts)
    return {"seconds": s, "tokens": tokens, "tokens_per_s": tokens / s, "budget_tokens": budget_tokens}


def old_floor(model: str, device: str, texts: list[str], batch_size: int) -> dict:
    import bench_floor
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder

    enc = TextEncoder(EncoderConfig(model_name_or_path=model, device=device, batch_size=batch_size)).load()
    bench_floor.floor_pass(enc, texts[:2000], batch_size)
    s, tokens, batches = bench_floor.floor_pass(enc, texts, batch_size)
    return {"seconds": s, "tokens": tokens, "tokens_per_s": tokens / s, "batch_size": batch_size, "batches": batches}


def suite_vs_encoder(model: str, device: str, data: Path, n_rows: int, batch_size: int) -> dict:
    import bench_scaling
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import Scorer
    from tutormetrics.text import normalize

    ids, prompts, responses = bench_scaling.synthetic_corpus(data, n_rows, seed=0)
    enc = TextEncoder(EncoderConfig(model_name_or_path=model, device=device, batch_size=batch_size)).load()
    enc.encode(list(dict.fromkeys(responses[:2000])), progress=False)
    unique = list(dict.fromkeys(normalize(t) for t in prompts + responses))
    sync(device)
    t0 = time.perf_counter()
    for i in range(0, len(unique), 4096):  # the suite's chunks hold about this many unique texts
        enc.encode(unique[i : i + 4096], progress=False)
    sync(device)
    t_enc = time.perf_counter() - t0
    scorer = Scorer("all", encoder=enc, progress=False)
    t0 = time.perf_counter()
    frame = scorer.score(ids, prompts, responses)
    t_suite = time.perf_counter() - t0
    return {"rows": n_rows, "unique_texts": len(unique), "encoder_s": t_enc, "suite_s": t_suite,
            "ratio": t_suite / t_enc, "columns": frame.width}  # fmt: skip


def drift(model: str, device: str, data: Path, n_rows: int, dtypes: list[str]) -> dict:
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import Scorer

    ids, prompts, responses = C.read_mrbench(data, limit=n_rows)
    frames = {}
    for dt in dtypes:
        on_cpu = device.startswith("cpu") and dt != "float32"  # CPU autocast stands in for a GPU (slow, small runs)
        enc = TextEncoder(EncoderConfig(model_name_or_path=model, device=device, dtype="float32" if on_cpu else dt, batch_size=128))
        if on_cpu:
            import torch

            enc.load()._dtype = getattr(torch, dt)
        frames[dt] = Scorer("all", encoder=enc, progress=False).score(ids, prompts, responses)
    ref = frames["float32"]
    out: dict = {}
    for dt, fr in frames.items():
        if dt == "float32":
            continue
        cols = {}
        for c in ref.columns:
            if ref[c].dtype.is_float():
                a, b = ref[c].to_numpy(), fr[c].to_numpy()
                both = ~np.isnan(a) & ~np.isnan(b)
                cols[c] = float(np.abs(a[both] - b[both]).max()) if both.any() else 0.0
        worst = max(cols, key=cols.get)
        out[dt] = {"max_abs_by_column": cols, "worst_column": worst, "worst": cols[worst], "goal_met": cols[worst] <= 1e-3}
    return out


def cli(model: str, device: str, data: Path, n_rows: int, batch_size: int, workdir: Path) -> dict:
    import bench_scaling

    corpus = workdir / f"corpus_{n_rows}.csv"
    bench_scaling.write_corpus(corpus, data, n_rows, seed=0)
    res = bench_scaling.run_cli(corpus, workdir / "scores.csv", "all", 1, device, 2048, batch_size, model)
    res["rows"] = n_rows
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default=None, help="model folder (default: materialised from benchmarks/gpu/model)")
    ap.add_argument("--data", type=Path, default=GPU / "data" / "exchanges.csv")
    ap.add_argument("--n-texts", type=int, default=100_000)
    ap.add_argument("--n-rows", type=int, default=100_000)
    ap.add_argument("--drift-rows", type=int, default=None, help="MRBench rows for the drift step (default all)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
    ap.add_argument("--batch-size", type=int, default=128, help="batch_tokens = batch size × 256 on CUDA")
    ap.add_argument("--steps", nargs="+", default=["drift", "encoder", "floor", "suite", "cli"])
    ap.add_argument("--budget-s", type=float, default=480, help="skip steps that start after this many seconds")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    if not args.data.exists():
        args.data = C.DEFAULT_MRBENCH
    if args.model is None:
        import bench_gpu

        RESULT["probe"] = bench_gpu.probe()
        model_dir = Path("/tmp/minilm_f32_i16")
        RESULT["model"] = bench_gpu.materialise_model(model_dir)
        args.model = str(model_dir)
    RESULT.update({"args": vars(args), "machine": C.machine(), "steps": {}})
    save(out)
    texts: list[str] = []
    for step in args.steps:
        if time.monotonic() - t_start > args.budget_s:
            RESULT["steps"][step] = "skipped: time budget"
            continue
        t0 = time.monotonic()
        try:
            if step in ("encoder", "floor") and not texts:
                texts = real_texts(args.data, args.n_texts)
            if step == "drift":
                res = drift(args.model, args.device, args.data, args.drift_rows, ["float32", *[d for d in args.dtypes if d != "float32"]])
            elif step == "encoder":
                res = {dt: encoder_pass(args.model, args.device, dt, texts, args.batch_size)
                       for dt in args.dtypes if dt != "float16" and (dt == "float32" or not args.device.startswith("cpu"))}  # fmt: skip
            elif step == "floor":
                res = {"plain_pytorch": plain_floor(args.model, args.device, texts, args.batch_size * 256),
                       "old_floor_bs128": old_floor(args.model, args.device, texts[:20_000], 128)}  # fmt: skip
            elif step == "suite":
                res = suite_vs_encoder(args.model, args.device, args.data, args.n_rows, args.batch_size)
            elif step == "cli":
                res = cli(args.model, args.device, args.data, args.n_rows, args.batch_size, Path("/tmp"))
            else:
                res = {"error": f"unknown step {step}"}
        except Exception as err:  # noqa: BLE001 - keep what the other steps measured
            import traceback

            res = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()[-3000:]}
        res_wall = time.monotonic() - t0
        RESULT["steps"][step] = res if isinstance(res, dict) else {"value": res}
        RESULT["steps"][step]["step_wall_s"] = res_wall
        save(out)
        print(json.dumps({step: RESULT["steps"][step]}, default=str)[:3000], flush=True)
    RESULT["total_s"] = time.monotonic() - t_start
    save(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
