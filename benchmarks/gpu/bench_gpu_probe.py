"""GPU follow-up: why the full suite misses 1.25 × floor on CUDA, and what would fix it.

Runs on the device (``bash benchmarks/gpu/run_gpu.sh probe``) after ``bench_gpu.py prepare``:

1. floor vs ``Scorer("all")`` at batch sizes 128 and 512 (3 runs each, alternating), plus
   ``TextEncoder.encode`` alone;
2. a prototype of the proposed change: the CPU families of each chunk run in a **worker process**
   (one spawned process, kept for the run) instead of a thread, so that their pure-Python work no
   longer competes with the encoder loop for the GIL. It patches ``suite.ThreadPoolExecutor`` in
   this process only; outputs are checked to be identical to the thread version;
3. a cProfile of one full-suite run (batch 128, thread version), top functions by own time.

Writes ``$OUT/gpu_probe.json`` and prints it.
"""

from __future__ import annotations

import concurrent.futures as cf
import cProfile
import io
import json
import multiprocessing as mp
import os
import pstats
import sys
import time
from pathlib import Path

GPU = Path(__file__).resolve().parent
sys.path.insert(0, str(GPU.parent))
sys.path.insert(0, str(GPU))

import _common as C


def _cpu_job(families, texts, p_idx, r_idx, ids):
    from tutormetrics.engine.artifacts import score_text_families
    from tutormetrics.metrics.base import Artifacts, ExchangeBatch

    art = Artifacts(texts=texts)
    batch = ExchangeBatch(ids, p_idx, r_idx)
    return score_text_families(families, batch, art)


def _warm() -> None:
    from tutormetrics.metrics.functional.readability import _load_cmudict, _load_pyphen

    _load_cmudict()
    _load_pyphen()


class ProcessOffload:
    """Stands in for ``ThreadPoolExecutor(max_workers=1)`` in ``suite``: the CPU families go to a process."""

    pool: cf.ProcessPoolExecutor | None = None

    def __init__(self, max_workers: int = 1) -> None:
        if ProcessOffload.pool is None:
            ProcessOffload.pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=_warm)

    def __enter__(self) -> ProcessOffload:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn, families, batch, art):
        assert ProcessOffload.pool is not None
        return ProcessOffload.pool.submit(
            _cpu_job, families, list(art.texts), batch.prompt_idx, batch.response_idx, batch.ids
        )


def main() -> int:
    import numpy as np
    import torch

    import bench_floor
    from tutormetrics.encoders import config as encoder_config
    from tutormetrics.encoders.hf import EncoderConfig, TextEncoder
    from tutormetrics.engine import Scorer
    from tutormetrics.engine import scorer as suite
    from tutormetrics.text import normalize

    out_dir = Path(os.environ.get("OUT", "/tmp/out"))
    out_dir.mkdir(parents=True, exist_ok=True)
    from bench_gpu import materialise_model

    model_dir = Path("/tmp/minilm_f32")
    model_note = materialise_model(model_dir)
    encoder_config.default_model_path = lambda: str(model_dir)  # type: ignore[assignment]
    dev = os.environ.get("PROBE_DEVICE", "cuda")  # cpu for a local dry run
    limit = int(os.environ["PROBE_LIMIT"]) if os.environ.get("PROBE_LIMIT") else None
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    ids, prompts, responses = C.read_mrbench(GPU / "data" / "exchanges.csv", limit)
    texts = list(dict.fromkeys(normalize(t) for t in [*prompts, *responses]))
    res: dict = {"model": model_note, "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else dev, "rows": len(ids), "by_batch": {}}
    thread_pool = suite.ThreadPoolExecutor

    def timed_suite(scorer: Scorer) -> tuple[float, object]:
        sync()
        t0 = time.perf_counter()
        frame = scorer.score(ids, prompts, responses)
        sync()
        return time.perf_counter() - t0, frame

    for bs in (128, 512):
        enc = TextEncoder(EncoderConfig(device=dev, batch_size=bs)).load()
        sc = Scorer("all", encoder=enc, progress=False)
        bench_floor.floor_pass(enc, texts[:64], bs)
        sc.score(ids[:64], prompts[:64], responses[:64])
        suite.ThreadPoolExecutor = ProcessOffload  # type: ignore[misc,assignment]
        sc.score(ids[:64], prompts[:64], responses[:64])  # start + warm the worker
        suite.ThreadPoolExecutor = thread_pool  # type: ignore[misc]
        rec: dict = {"floor_s": [], "suite_thread_s": [], "suite_process_s": [], "encode_only_s": []}
        frames = {}
        for _ in range(3):
            rec["floor_s"].append(bench_floor.floor_pass(enc, texts, bs)[0])
            s, frames["thread"] = timed_suite(sc)
            rec["suite_thread_s"].append(s)
            suite.ThreadPoolExecutor = ProcessOffload  # type: ignore[misc,assignment]
            s, frames["process"] = timed_suite(sc)
            suite.ThreadPoolExecutor = thread_pool  # type: ignore[misc]
            rec["suite_process_s"].append(s)
            e2 = enc.with_options()
            sync()
            t0 = time.perf_counter()
            e2.encode(texts, progress=False)
            sync()
            rec["encode_only_s"].append(time.perf_counter() - t0)
        a, b = frames["thread"], frames["process"]
        rec["process_equals_thread"] = bool(
            a.columns == b.columns
            and all(np.array_equal(a[c].to_numpy(), b[c].to_numpy(), equal_nan=True) for c in a.columns if c != "exchange_id")
        )
        for k in ("floor_s", "suite_thread_s", "suite_process_s", "encode_only_s"):
            rec[k.replace("_s", "_median_s")] = C.median(rec[k])
        rec["ratio_thread"] = rec["suite_thread_median_s"] / rec["floor_median_s"]
        rec["ratio_process"] = rec["suite_process_median_s"] / rec["floor_median_s"]
        res["by_batch"][bs] = rec
        print(json.dumps({"batch_size": bs, **{k: v for k, v in rec.items() if not isinstance(v, list)}}), flush=True)
        if bs == 128:
            prof = cProfile.Profile()
            prof.enable()
            sc.score(ids, prompts, responses)
            prof.disable()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
            res["cprofile_tottime_bs128"] = buf.getvalue()[-6000:]
    (out_dir / "gpu_probe.json").write_text(json.dumps(res, indent=2))
    print(res.get("cprofile_tottime_bs128", "")[-3500:])
    if ProcessOffload.pool is not None:
        ProcessOffload.pool.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
