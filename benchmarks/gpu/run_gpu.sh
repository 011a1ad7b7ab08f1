#!/usr/bin/env bash
# GPU benchmarks on the device machine, in the repository root of the carried tree.
# Prepare first, here:   python benchmarks/gpu/bench_gpu.py prepare   (wheels, model files, data)
# Then on the device:    bash benchmarks/gpu/run_gpu.sh               (prints JSON; files in $OUT)
#                        bash benchmarks/gpu/run_gpu.sh probe         (follow-up: batch 512, process offload, cProfile)
# Afterwards, here:      python benchmarks/gpu/bench_gpu.py report <fetched dir>; ... clean
set -uo pipefail
export OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
echo "== $(date -u +%FT%TZ) $(nproc) cores; $($PY --version 2>&1)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
# Packages missing from the device image travel as wheels (benchmarks/gpu/wheels).
if ls benchmarks/gpu/wheels/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    benchmarks/gpu/wheels/*.whl || echo "wheel install failed"
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:$PWD/benchmarks:${PYTHONPATH:-}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ "${1:-}" = "probe" ]; then shift; SCRIPT=benchmarks/gpu/bench_gpu_probe.py; else SCRIPT="benchmarks/gpu/bench_gpu.py device"; fi
$PY $SCRIPT "$@" 2>&1 | grep -v -E "Loading weights|^\s*$" | tail -c 20000
echo "== done $(date -u +%FT%TZ); files in $OUT:"; ls -la "$OUT"
