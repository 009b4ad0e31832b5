#!/usr/bin/env bash
# Set up the two pinned vLLM environments (once) and run the integration test on them.
# Usage: integration.sh [VENVS_DIR]   (default: ../venvs beside this checkout; gigabytes)
# VLLM_WHEEL_DIR=DIR: take the vLLM wheels from DIR when they are there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
dir="${1:-$repo/../venvs}"
mkdir -p "$dir"; dir="$(cd "$dir" && pwd)"
for version in 0.33.0 0.18.0; do
  venv="$dir/vllm-$version"
  if ! "$venv/bin/python" -c "import vllm; assert vllm.__version__ == '$version'" 2>/dev/null; then
    echo "setting up $venv"; rm -rf "$venv"; time "$here/setup.sh" "$venv" "$version"
  fi
done
cd "$repo"
# any Python with pytest runs the test (it drives the venvs through subprocesses)
python="${PYTHON:-$repo/.venv/bin/python}"; [ -x "$python" ] || python=python3
SYNCSCOPE_VLLM_VENV="$dir/vllm-0.33.0" SYNCSCOPE_VLLM_PREFIX_VENV="$dir/vllm-0.18.0" \
  "$python" -m pytest tests/test_engine_vllm.py -v -p no:cacheprovider
