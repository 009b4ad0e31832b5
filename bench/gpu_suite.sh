#!/usr/bin/env bash
# Everything this repository claims about a real GPU, in two parts (each fits a 10-minute slot):
#   bench/gpu_suite.sh OUTDIR tests     the GPU test suite (pytest -m gpu) and the copy probe; on the
#                                       H100 it takes ~12 minutes, so where a slot is 10 minutes run
#                                       its two halves, tests-a (~7.5 min) and tests-b (~1.5 min)
#   bench/gpu_suite.sh OUTDIR benches   the benches whose figures docs/gpu-results.md quotes
#   bench/gpu_suite.sh OUTDIR overhead  the runtime trap's and the monitor's overhead (many short rounds)
#   bench/gpu_suite.sh OUTDIR parity    tests/parity's programs on the GPU against expected_sites.json
#                                       (needs the pinned transformers: install its wheels first, e.g.
#                                       carried ones into a --target dir on PYTHONPATH)
# Run from the repository root on the GPU machine. PROMETHEUS names a Prometheus binary for the
# monitor's rate check (skipped without one).
set -u
usage="usage: bench/gpu_suite.sh OUTDIR tests|tests-a|tests-b|benches|overhead|parity"
OUT=${1:?$usage}
PART=${2:?$usage}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
# tests-b: these files (the reference kernels under Triton, the runtime's line forms); tests-a: the rest
tests_b="tests/test_reference_[ks]*.py tests/test_sim_catalog.py tests/test_unshimmed_syncs.py tests/test_gpu_runtime.py tests/test_line_attribution.py tests/test_record_sites.py"
$py -c "import sys, torch, triton; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda, '| triton', triton.__version__, '|', torch.cuda.get_device_name(0))" | tee "$OUT/versions.txt"
case "$PART" in
  tests)
    $py -m pytest -m gpu -q -p no:cacheprovider -rs --continue-on-collection-errors tests 2>&1 | tee "$OUT/gpu_tests.log"
    $py bench/copy_probe.py 2>&1 | tee "$OUT/copy_probe.txt"
    ;;
  tests-a)
    ignore=(); for f in $tests_b; do ignore+=(--ignore "$f"); done
    $py -m pytest -m gpu -q -p no:cacheprovider -rs --continue-on-collection-errors "${ignore[@]}" tests 2>&1 | tee "$OUT/gpu_tests_a.log"
    $py bench/copy_probe.py 2>&1 | tee "$OUT/copy_probe.txt"
    ;;
  tests-b)
    # shellcheck disable=SC2086  # the glob in $tests_b is meant to expand
    $py -m pytest -m gpu -q -p no:cacheprovider -rs $tests_b 2>&1 | tee "$OUT/gpu_tests_b.log"
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
  *) echo "unknown part: $PART ($usage)" >&2; exit 2 ;;
esac
