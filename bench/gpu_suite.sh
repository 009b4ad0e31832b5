#!/usr/bin/env bash
# Everything this repository claims about a real GPU, in two parts (each fits a 10-minute slot):
#   bench/gpu_suite.sh OUTDIR tests     the GPU test suite (pytest -m gpu) and the copy probe
#   bench/gpu_suite.sh OUTDIR benches   the benches whose figures docs/gpu-results.md quotes
#   bench/gpu_suite.sh OUTDIR overhead  the runtime trap's and the monitor's overhead (many short rounds)
#   bench/gpu_suite.sh OUTDIR parity    tests/parity's programs on the GPU against expected_sites.json
#                                       (needs the pinned transformers: install its wheels first, e.g.
#                                       carried ones into a --target dir on PYTHONPATH)
# Run from the repository root on the GPU machine. PROMETHEUS names a Prometheus binary for the
# monitor's rate check (skipped without one).
set -u
OUT=${1:?usage: bench/gpu_suite.sh OUTDIR tests|benches|overhead|parity}
PART=${2:?usage: bench/gpu_suite.sh OUTDIR tests|benches|overhead|parity}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
$py -c "import sys, torch, triton; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda, '| triton', triton.__version__, '|', torch.cuda.get_device_name(0))" | tee "$OUT/versions.txt"
case "$PART" in
  tests)
    $py -m pytest -m gpu -q -p no:cacheprovider -rs --continue-on-collection-errors tests 2>&1 | tee "$OUT/gpu_tests.log"
    $py bench/copy_probe.py 2>&1 | tee "$OUT/copy_probe.txt"
    ;;
  benches)
    $py bench/bubbles_bench.py --window 40 --plain-steps 100 --out "$OUT/bubbles.json" 2>&1 | tail -20
    if [ -n "${PROMETHEUS:-}" ]; then
      $py bench/monitor_overhead.py rate --device cuda --seconds 40 --prometheus "$PROMETHEUS" --out "$OUT/monitor_rate.json" 2>&1 | tail -5
    fi
    ;;
  overhead)
    $py bench/runtime_overhead.py --max-seconds 300 --out "$OUT/overhead.json" 2>&1 | grep -v '^ \|^{\|^}' | tail -25
    $py bench/runtime_overhead.py --equalize --steps 1 --arms plain,debug_mode_only,trap,trap_all_shims --max-seconds 200 --out "$OUT/overhead_installed.json" 2>&1 | grep -v '^ \|^{\|^}' | tail -12
    $py bench/monitor_overhead.py overhead --max-seconds 200 --out "$OUT/monitor_overhead.json" 2>&1 | tail -2
    ;;
  parity)
    want=$(sed -n 's/.*"transformers==\([0-9.]*\)".*/\1/p' pyproject.toml)
    have=$($py -c "import transformers; print(transformers.__version__)" 2>/dev/null || echo none)
    if [ "$have" != "$want" ]; then
      echo "transformers $have here, the parity sets are for $want (pyproject.toml): install it first" >&2
      exit 2
    fi
    $py -m tests.parity.record --device cuda --workers 4 --reports "$OUT/parity" 2>&1 | tee "$OUT/parity_record.txt"
    ;;
  *) echo "unknown part: $PART" >&2; exit 2 ;;
esac
