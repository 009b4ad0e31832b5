#!/usr/bin/env bash
# Make the pinned engine environment: a venv with CPU torch 2.13.0, syncscope (this checkout),
# vLLM and FlashInfer's Python package without their dependencies (they pin a CUDA torch and CUDA
# libraries), and the exact versions in requirements-<version>.txt (nothing CUDA; nvidia-ml-py
# is NVML's pure-Python binding, which FlashInfer imports).
# Usage: setup.sh VENV [VERSION]    VERSION: 0.33.0 (default) or 0.18.0 (before the seed fixes)
# VLLM_WHEEL_DIR=DIR: look for the vLLM wheel there first (it is ~330 MB).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "usage: setup.sh VENV [0.33.0|0.18.0]" >&2; exit 2; fi
venv="$1"; version="${2:-0.33.0}"
case "$version" in
  0.33.0) flashinfer=0.7.2.post1 ;;
  0.18.0) flashinfer=0.6.6 ;;
  *) echo "setup.sh: no pinned set for vLLM $version (0.33.0 or 0.18.0)" >&2; exit 2 ;;
esac
python3 -m venv "$venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
"${pip[@]}" torch==2.13.0 "$repo"
find_links=()
if [ -n "${VLLM_WHEEL_DIR:-}" ]; then find_links=(--find-links "$VLLM_WHEEL_DIR"); fi
"${pip[@]}" --no-deps "${find_links[@]}" "vllm==$version" "flashinfer-python==$flashinfer"
# A complete freeze: --no-deps keeps pip from reaching for vLLM's CUDA torch.
"${pip[@]}" --no-deps -r "$here/requirements-$version.txt"
"$venv/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
