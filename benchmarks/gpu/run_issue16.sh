#!/usr/bin/env bash
# Issue 16 GPU benchmark, one command on the device machine (repository root of the carried tree):
#   here first:     python benchmarks/gpu/bench_gpu.py prepare       (model files, wheels, MRBench; untracked)
#   on the device:  bash benchmarks/gpu/run_issue16.sh               (writes $OUT/issue16.json step by step)
#   here after:     python benchmarks/gpu/bench_issue16.py --help; copy the JSON into benchmarks/results/
# Extra arguments go to bench_issue16.py, e.g. --steps encoder floor --n-texts 50000 --budget-s 300.
set -uo pipefail
export OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
echo "== $(date -u +%FT%TZ) $(nproc) cores; $($PY --version 2>&1)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if ls benchmarks/gpu/wheels/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    benchmarks/gpu/wheels/*.whl || echo "wheel install failed"
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:$PWD/benchmarks:$PWD/benchmarks/gpu:${PYTHONPATH:-}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
$PY benchmarks/gpu/bench_issue16.py "$@" 2>&1 | grep -v -E "Loading weights|^\s*$" | tail -c 20000
echo "== done $(date -u +%FT%TZ); files in $OUT:"; ls -la "$OUT"
