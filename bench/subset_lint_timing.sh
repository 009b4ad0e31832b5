#!/bin/bash
# Warm subset-lint timings on a copy of vLLM (issue 24's "at most 1 s for one staged file").
#
#   bench/subset_lint_timing.sh COPY_DIR [CODE_DIR...]
#
# COPY_DIR holds a copy of the vLLM package (COPY_DIR/vllm, e.g. unpacked from the 0.33.0 wheel);
# the script EDITS files in it. Each CODE_DIR is a checkout of syncscope to time (default: the
# current directory); with several, they are arms run in turn after each edit, on the same
# file, each with its own cache, so their figures are side by side. Each arm fills its cache
# with one whole run, then the script times `syncscope lint vllm/v1/worker/gpu_input_batch.py`
# (the pre-commit hook's form) with /usr/bin/time: unchanged three times, a comment appended
# three times, a statement inserted in `add_request`'s body three times (edits that only move
# lines: the pass's output is moved), a statement inserted where it changes what the file
# records (the whole-program pass reruns the first time), and FACT_ROUNDS=N (default 0) times a
# call added to `add_request` (`self.refresh_metadata()`: a new call edge, so every one reruns
# the pass). Prints user+sys CPU and wall seconds per run, and whether every arm's JSON output
# equals the first arm's. ROUNDS=N (default 3) times each of the first three edits; the arms
# take turns going first. Run from the repository root.
set -euo pipefail
# As a user's installed copy runs: with its compiled bytecode written once and read after, even
# where the environment turns the writing off (then every run compiles the ~120 modules the
# linter imports again, ~0.15-0.2 s here, and reports that instead of the linter).
unset PYTHONDONTWRITEBYTECODE
COPY=$(cd "$1" && pwd)
shift
ARMS=()
for code in "${@:-.}"; do ARMS+=("$(cd "$code" && pwd)"); done
WORK=$(mktemp -d)
F=vllm/v1/worker/gpu_input_batch.py
cd "$COPY"
# the console script's entry point, as the pre-commit hook runs it (`syncscope lint ...`)
ENTRY='import sys; from syncscope.cli import main; sys.argv[0] = "syncscope"; main()'
lint() {  # lint ARM_INDEX PATHS...
  local arm=$1; shift
  PYTHONPATH="${ARMS[$arm]}" python -c "$ENTRY" lint "$@" --config "$WORK/cache$arm.toml" --exit-zero \
    --output-format json -o "$WORK/out$arm.json" >/dev/null 2>&1
}
run() {  # run LABEL ROUND: every arm once, in reverse order on even rounds (no arm always first)
  local order=("${!ARMS[@]}")
  if (( $2 % 2 == 0 )); then order=($(printf '%s\n' "${order[@]}" | tac)); fi
  for arm in "${order[@]}"; do
    /usr/bin/time -f "%U %S %e" -o "$WORK/time" bash -c "$(declare -f lint); ARMS=(${ARMS[*]}); ENTRY='$ENTRY'; WORK=$WORK; lint $arm $F"
    echo "$1 [${ARMS[$arm]}] $(awk '{printf "cpu %.2f s, wall %.2f s", $1+$2, $3}' "$WORK/time")"
  done
  for arm in "${!ARMS[@]}"; do
    cmp -s "$WORK/out0.json" "$WORK/out$arm.json" || echo "  OUTPUT DIFFERS: ${ARMS[$arm]}"
  done
}
for arm in "${!ARMS[@]}"; do
  mkdir -p "$WORK/cache$arm"
  printf '[tool.syncscope.lint]\ncache-dir = "%s"\n' "$WORK/cache$arm" > "$WORK/cache$arm.toml"
  lint "$arm" vllm  # fill the cache
done
ROUNDS=${ROUNDS:-3}
for i in $(seq "$ROUNDS"); do run unchanged "$i"; done
for i in $(seq "$ROUNDS"); do echo "# edit $i" >> $F; run "comment appended" "$i"; done
for i in $(seq "$ROUNDS"); do sed -i "352i\        _edit_$i = 0" $F; run "statement in add_request" "$i"; done
for i in 1 2 3; do sed -i "350i\        _edit_b$i = 0" $F; run "statement ending a straight run" "$i"; done
for i in $(seq "${FACT_ROUNDS:-0}"); do sed -i "352i\        self.refresh_metadata()" $F; run "call added (facts change)" "$i"; done
