#!/usr/bin/env bash
# Everything GPU-side for issue 7 (the blocking-line oracle), in one command, < 4 min on an H100:
#   bash bench/oracle_gpu_check.sh
# 1. the oracle's CPU tests (on Python >= 3.12 they also exercise the sys.monitoring tracer),
# 2. the GPU tests: the whole catalog (each tracer), the C++ extension (missed by sync-debug mode
#    and `syncscope run`, found by the oracle, named by --compare), the Python API,
# 3. the cost bench on the catalog.
# Reports and summaries land in $SYNCSCOPE_ORACLE_ARTIFACTS (default: $OUT/oracle-check, or
# /tmp/oracle-check); a compact summary is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
ART="${SYNCSCOPE_ORACLE_ARTIFACTS:-${OUT:-/tmp}/oracle-check}"
mkdir -p "$ART"
export SYNCSCOPE_ORACLE_ARTIFACTS="$ART"
began=$(date +%s)
python -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| gpu', torch.cuda.get_device_name() if torch.cuda.is_available() else None)"

echo "=== pytest tests/test_oracle.py tests/test_oracle_gpu.py"
timeout 210 python -m pytest tests/test_oracle.py tests/test_oracle_gpu.py -q -p no:cacheprovider -rfEs --tb=short 2>&1 | tail -60 | tee "$ART/pytest.txt"
tests_rc=${PIPESTATUS[0]}

echo "=== bench/oracle_cost.py"
timeout 90 python bench/oracle_cost.py --json "$ART/cost.json" 2>&1 | tail -5 | tee "$ART/cost.txt"
bench_rc=${PIPESTATUS[0]}

echo "=== summary"
cat "$ART"/summary-*.txt 2>/dev/null
echo "pytest rc=$tests_rc, bench rc=$bench_rc, $(( $(date +%s) - began )) s; artifacts in $ART"
exit $(( tests_rc != 0 || bench_rc != 0 ))
