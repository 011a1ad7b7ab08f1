"""Encoder benchmark: TextEncoder + the two encoder families against a bare forward-pass floor.

Times, over the unique texts of an exchanges CSV (columns ``prompt`` and ``response``):

(a) the floor: the bundled model's tokenizer + one forward pass per batch with
    ``output_hidden_states=True`` (longest-first batches, truncation at ``max_seq_length`` like
    ``SentenceTransformer.encode``), nothing else;
(b) ``TextEncoder.encode`` (tokenise once, windows, on-device reductions, inverse restore) plus
    ``EmbeddingSimilarity`` and ``LayerwiseSynchrony`` on every exchange.

Reports tokens/s (tokens fed to the model, CLS/SEP and padding excluded) and the ratio (b)/(a), and
writes JSON to ``benchmarks/results/encoder.json``.

Usage:
    python benchmarks/bench_encoder.py --input ../shared/data/mrbench/exchanges.csv --limit 300 --device cpu
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import resource
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np
import torch

from bench_floor import floor_pass  # the one bare-forward floor used by every benchmark
from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
from tutormetrics.metrics.base import Artifacts, ExchangeBatch
from tutormetrics.metrics.embedding import EmbeddingSimilarity
from tutormetrics.metrics.synchrony import LayerwiseSynchrony


def read_exchanges(path: Path, limit: int | None) -> tuple[list[str], list[str]]:
    """Prompts and responses of the first ``limit`` rows (NFC)."""
    csv.field_size_limit(sys.maxsize)
    prompts, responses = [], []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            prompts.append(unicodedata.normalize("NFC", row["prompt"]))
            responses.append(unicodedata.normalize("NFC", row["response"]))
            if limit is not None and len(prompts) >= limit:
                break
    return prompts, responses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, required=True, help="exchanges CSV with prompt and response columns")
    ap.add_argument("--limit", type=int, default=None, help="use the first N exchanges")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--long-text", default="window", choices=["window", "truncate"])
    ap.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "encoder.json")
    args = ap.parse_args(argv)

    prompts, responses = read_exchanges(args.input, args.limit)
    index: dict[str, int] = {}
    p_idx = np.array([index.setdefault(t, len(index)) for t in prompts])
    r_idx = np.array([index.setdefault(t, len(index)) for t in responses])
    texts = list(index)
    print(f"{len(prompts)} exchanges, {len(texts)} unique texts", file=sys.stderr)

    t0 = time.perf_counter()
    encoder = TextEncoder(
        EncoderConfig(device=args.device, batch_size=args.batch_size, long_text=args.long_text)
    ).load()
    load_s = time.perf_counter() - t0
    warm = texts[: min(8, len(texts))]
    floor_pass(encoder, warm, args.batch_size)  # warm-up (allocator, kernels)
    encoder.with_options().encode(warm, progress=False)

    floor_s, floor_tokens, floor_batches = floor_pass(encoder, texts, args.batch_size)

    t0 = time.perf_counter()
    encoded = encoder.encode(texts, progress=False)
    encode_s = time.perf_counter() - t0
    art = Artifacts(texts=texts, encoded=encoded)
    batch = ExchangeBatch(ids=tuple(map(str, range(len(prompts)))), prompt_idx=p_idx, response_idx=r_idx)
    t0 = time.perf_counter()
    emb = EmbeddingSimilarity().score(batch, art)
    emb_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sync = LayerwiseSynchrony().score(batch, art)
    sync_s = time.perf_counter() - t0
    ours_s = encode_s + emb_s + sync_s
    ours_tokens = int(encoded.n_content_tokens.sum())
    floor_content = floor_tokens - 2 * len([t for t in texts if t.strip()])  # approx.: minus CLS/SEP

    result = {
        "input": str(args.input),
        "n_exchanges": len(prompts),
        "n_unique_texts": len(texts),
        "n_windowed_texts": encoded.n_windowed,
        "n_truncated_texts": encoded.n_truncated,
        "device": str(encoder.device),
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "long_text": args.long_text,
        "load_s": round(load_s, 3),
        "floor": {
            "seconds": round(floor_s, 3),
            "tokens_with_special": floor_tokens,
            "content_tokens_approx": floor_content,
            "forward_calls": floor_batches,
            "tokens_per_s": round(floor_tokens / floor_s, 1),
        },
        "tutormetrics": {
            "encode_s": round(encode_s, 3),
            "embedding_similarity_s": round(emb_s, 3),
            "layerwise_synchrony_s": round(sync_s, 3),
            "total_s": round(ours_s, 3),
            "content_tokens": ours_tokens,
            "windows": int(encoded.n_windows.sum()),
            "tokens_with_special": ours_tokens + 2 * int(encoded.n_windows.sum()),
            "forward_calls": encoder.forward_calls,
            "tokens_per_s": round((ours_tokens + 2 * int(encoded.n_windows.sum())) / ours_s, 1),
            "artifact_mb": round(encoded.nbytes / 2**20, 1),
        },
        "ratio_time": round(ours_s / floor_s, 3),
        "slowdown_per_token": round(
            (floor_tokens / floor_s) / ((ours_tokens + 2 * int(encoded.n_windows.sum())) / ours_s), 3
        ),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "mean_emb_mean_cos": float(np.nanmean(emb["emb_mean_cos"])),
        "mean_sync_mean": float(np.nanmean(sync["sync_mean"])),
        "encoder": encoder.describe(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("floor", "tutormetrics", "ratio_time", "slowdown_per_token")}, indent=2))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
