"""Full suite vs the forward-pass floor, on every MRBench row.

(a) the floor: the bundled MiniLM's tokenizer + one forward pass per batch with
    ``output_hidden_states=True`` over the **unique** texts only (longest first, packed as the suite packs
    them: ``EncoderConfig.batch_budget``, 1,024 padded tokens per pass on the CPU, ``batch_size × 256`` on CUDA;
    truncation at ``max_seq_length`` = 256 like ``SentenceTransformer.encode``), nothing else;
(b) ``Scorer("all").score(ids, prompts, responses)`` on all rows: NFC + dedupe, ``T(x)``/``S(x)``, the
    four lexical families (in a thread, overlapped with the encoder), the encoder (tokenise once,
    **windows** of 254 word pieces instead of truncation, on-device reductions) and both encoder families.

Windowing difference: texts over 254 word pieces are windowed by (b) but truncated by (a), so (b)
feeds more tokens to the model; both the time ratio and the per-token ratio are reported.
(c) once, for the breakdown: ``TextEncoder.encode`` alone on the unique texts.

Runs alternate (a), (b) so that load drift hits both; medians of ``--runs`` (default 3).

Usage:
    python benchmarks/bench_floor.py                      # CPU, all 1,655 rows, 3 runs
    python benchmarks/bench_floor.py --device cuda --output benchmarks/results/floor_gpu.json --no-md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def floor_pass(encoder, texts: list[str], batch_size: int) -> tuple[float, int, int]:
    """Bare tokenise + forward (output_hidden_states) over ``texts``; returns (seconds, tokens, batches)."""
    from tutormetrics.encoders.windows import plan_batches

    tok = encoder.tokenizer
    model = encoder._model  # the HF model (loaded directly or through sentence-transformers)
    device = encoder.device
    msl = encoder.max_seq_length
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    lengths = np.array([len(x) for x in tok(texts, add_special_tokens=False, verbose=False)["input_ids"]])
    order = np.argsort(-lengths, kind="stable")
    padded = np.minimum(lengths[order], msl - 2) + 2  # truncated, with CLS/SEP
    bounds = plan_batches(padded, batch_size, encoder.config.batch_budget(device.type, msl))
    n_tokens, n_batches = 0, 0
    with torch.inference_mode():
        for b0, b1 in bounds:
            batch = [texts[i] for i in order[b0:b1]]
            feats = tok(batch, padding=True, truncation=True, max_length=msl, return_tensors="pt").to(device)
            model(**feats, output_hidden_states=True)
            n_tokens += int(feats["attention_mask"].sum())
            n_batches += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, n_tokens, n_batches


def window_tokens(encoder, texts: list[str]) -> tuple[int, int, int]:
    """(tokens fed by the suite incl. CLS/SEP, windows, texts windowed) for ``texts``."""
    w = encoder.window_size
    n = np.array([len(x) for x in encoder.tokenize(texts)], dtype=np.int64)
    n_win = -(-n // w)
    return int(n.sum() + 2 * n_win.sum()), int(n_win.sum()), int((n_win > 1).sum())


def run(args: argparse.Namespace) -> dict:
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import Scorer
    from tutormetrics.text import normalize

    res = C.header("floor")
    ids, prompts, responses = C.read_mrbench(args.input, args.limit)
    texts = list(dict.fromkeys(normalize(t) for t in [*prompts, *responses]))
    print(f"{len(ids)} rows, {len(texts)} unique texts", file=sys.stderr)

    t0 = time.perf_counter()
    encoder = TextEncoder(EncoderConfig(device=args.device, batch_size=args.batch_size)).load()
    load_s = time.perf_counter() - t0
    scorer = Scorer("all", encoder=encoder, progress=False)
    # warm-up: allocator, kernels, CMUdict load, thread pools
    floor_pass(encoder, texts[:64], args.batch_size)
    scorer.score(ids[:64], prompts[:64], responses[:64])

    import resource

    def cpu() -> float:
        u = resource.getrusage(resource.RUSAGE_SELF)
        return u.ru_utime + u.ru_stime

    floor_s, ours_s, loads = [], [], []
    floor_cpu, ours_cpu = [], []
    floor_tokens = 0
    for i in range(args.runs):
        loads.append(C.load_average())
        c0 = cpu()
        s, floor_tokens, floor_batches = floor_pass(encoder, texts, args.batch_size)
        floor_cpu.append(cpu() - c0)
        floor_s.append(s)
        if encoder.device.type == "cuda":
            torch.cuda.synchronize()
        c0 = cpu()
        t0 = time.perf_counter()
        scorer = Scorer("all", encoder=encoder, progress=False)  # fresh: its text cache must not serve the next run
        frame = scorer.score(ids, prompts, responses)
        ours_s.append(time.perf_counter() - t0)
        ours_cpu.append(cpu() - c0)
        print(f"  run {i + 1}/{args.runs}: floor {floor_s[-1]:.2f} s ({floor_cpu[-1]:.1f} CPU s), full suite "
              f"{ours_s[-1]:.2f} s ({ours_cpu[-1]:.1f} CPU s) (load {loads[-1]})", file=sys.stderr)  # fmt: skip

    enc_only = encoder.with_options()
    t0 = time.perf_counter()
    enc_only.encode(texts, progress=False)
    encode_only_s = time.perf_counter() - t0
    lex = Scorer("lexical", progress=False)
    lex.score(ids[:16], prompts[:16], responses[:16])
    t0 = time.perf_counter()
    lex.score(ids, prompts, responses)
    lexical_only_s = time.perf_counter() - t0

    ours_tokens, n_windows, n_windowed = window_tokens(encoder, texts)
    fm, om = C.median(floor_s), C.median(ours_s)
    res.update(
        {
            "input": str(args.input),
            "n_rows": len(ids),
            "n_unique_texts": len(texts),
            "n_metric_columns": len(scorer.metric_columns()),
            "device": str(encoder.device),
            "gpu": torch.cuda.get_device_name(encoder.device) if encoder.device.type == "cuda" else None,
            "torch_threads": torch.get_num_threads(),
            "batch_size": args.batch_size,
            "max_seq_length": encoder.max_seq_length,
            "model_load_s": load_s,
            "floor": {"runs_s": floor_s, "median_s": fm, "tokens_with_special": floor_tokens,
                      "forward_calls": floor_batches, "tokens_per_s": floor_tokens / fm,
                      "long_texts": "truncated at max_seq_length"},
            "full_suite": {"runs_s": ours_s, "median_s": om, "tokens_with_special": ours_tokens,
                           "windows": n_windows, "texts_windowed": n_windowed, "tokens_per_s": ours_tokens / om,
                           "rows_per_s": len(ids) / om},
            "breakdown_single_run": {"encode_only_s": encode_only_s, "lexical_families_only_s": lexical_only_s},
            "loads_before_runs": loads,
            "ratio_time": om / fm,
            "cpu_seconds": {"floor_runs": floor_cpu, "suite_runs": ours_cpu,
                            "ratio_median": C.median(ours_cpu) / C.median(floor_cpu),
                            "ratio_per_run": [o / f for o, f in zip(ours_cpu, floor_cpu, strict=True)],
                            "note": "process CPU time (user+sys, all threads); less sensitive to other users' load than wall time"},
            "ratio_time_per_run": [o / f for o, f in zip(ours_s, floor_s, strict=True)],
            "ratio_per_token": (floor_tokens / fm) / (ours_tokens / om),
            "target": "full suite <= 1.25 x floor",
            "mean_emb_mean_cos": float(np.nanmean(frame["emb_mean_cos"].to_numpy())),
        }
    )  # fmt: skip
    res["target_met"] = res["ratio_time"] <= 1.25
    return res


def markdown(res: dict, title: str) -> str:
    f, o = res["floor"], res["full_suite"]
    rows = [
        ["floor: tokenise + forward (`output_hidden_states=True`), unique texts, truncation 256",
         len(f["runs_s"]), f"{f['median_s']:.2f}", f"{f['tokens_with_special']:,}", f"{f['tokens_per_s']:,.0f}", "1.00"],
        [f"full suite `Scorer(\"all\")` ({res['n_metric_columns']} columns), windows of 254", len(o["runs_s"]),
         f"{o['median_s']:.2f}", f"{o['tokens_with_special']:,}", f"{o['tokens_per_s']:,.0f}",
         f"**{res['ratio_time']:.2f}** (per token {res['ratio_per_token']:.2f})"],
    ]  # fmt: skip
    b = res["breakdown_single_run"]
    dev = res["device"] + (f" ({res['gpu']})" if res.get("gpu") else f", {res['torch_threads']} torch threads")
    return f"""## {title}

{res['n_rows']:,} MRBench rows, {res['n_unique_texts']:,} unique texts ({o['texts_windowed']} longer than 254 word pieces: windowed by the suite, truncated by the floor), device {dev}, batch size {res['batch_size']} (floor and suite packed alike: `EncoderConfig.batch_budget`).
Target: full suite ≤ 1.25 × floor — **{'met' if res['target_met'] else 'missed'}** ({res['ratio_time']:.2f}×).

{C.md_table(rows, ["what", "runs", "median s", "tokens fed (incl. CLS/SEP)", "tokens/s", "ratio to floor"])}

Per-run wall ratios (runs alternate floor, suite): {", ".join(f"{x:.2f}" for x in res.get("ratio_time_per_run", []))}; process CPU-time ratio (user+sys, median): {res.get("cpu_seconds", {}).get("ratio_median", float("nan")):.2f}.

Single-run breakdown: `TextEncoder.encode` alone {b['encode_only_s']:.2f} s; the four lexical families alone {b['lexical_families_only_s']:.2f} s (they run in a thread under the encoder in the full suite). Model load {res['model_load_s']:.1f} s (not in the times).

{C.env_lines(res)}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--limit", type=int, default=None, help="first N rows (default: all)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--output", type=Path, default=None, help="JSON path (default results/floor.json)")
    ap.add_argument("--no-md", action="store_true", help="do not update RESULTS.md")
    args = ap.parse_args(argv)
    res = run(args)
    C.write_json("floor", res, args.output)
    body = markdown(res, "2. Full suite vs forward-pass floor (`bench_floor.py`)")
    if not args.no_md:
        C.update_results_md("floor", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
