#!/bin/bash
# Warm subset-lint timings on a copy of vLLM (issue 24's "at most 1 s for one staged file").
#
#   bench/subset_lint_timing.sh COPY_DIR
#
# COPY_DIR holds a copy of the vLLM package (COPY_DIR/vllm, e.g. unpacked from the 0.33.0 wheel);
# the script EDITS files in it. It fills a lint cache with one whole run, then times
# `syncscope lint vllm/v1/worker/gpu_input_batch.py` (the pre-commit hook's form) with
# /usr/bin/time: unchanged three times, a comment appended three times, a statement inserted in
# `add_request`'s body three times (edits that only move lines: the pass's output is moved), and
# a statement inserted where it changes what the file records (the whole-program pass reruns
# the first time). Prints user+sys CPU and wall seconds per run. Run from the repository root.
set -euo pipefail
# As a user's installed copy runs: with its compiled bytecode written once and read after, even
# where the environment turns the writing off (then every run compiles the ~120 modules the
# linter imports again, ~0.15-0.2 s here, and reports that instead of the linter).
unset PYTHONDONTWRITEBYTECODE
COPY=$(cd "$1" && pwd)
REPO=$(pwd)
CACHE=$(mktemp -d)
printf '[tool.syncscope.lint]\ncache-dir = "%s"\n' "$CACHE" > "$CACHE/cache.toml"
F=vllm/v1/worker/gpu_input_batch.py
cd "$COPY"
lint() { PYTHONPATH="$REPO" python -m syncscope lint "$@" --config "$CACHE/cache.toml" --exit-zero --output-format json -o "$CACHE/out.json" >/dev/null 2>&1; }
run() {
  /usr/bin/time -f "%U %S %e" -o "$CACHE/time" bash -c "$(declare -f lint); REPO=$REPO CACHE=$CACHE lint $F"
  echo "$1 $(awk '{printf "cpu %.2f s, wall %.2f s", $1+$2, $3}' "$CACHE/time")"
}
lint vllm  # fill the cache
for i in 1 2 3; do run unchanged; done
for i in 1 2 3; do echo "# edit $i" >> $F; run "comment appended"; done
for i in 1 2 3; do sed -i "352i\        _edit_$i = 0" $F; run "statement in add_request"; done
for i in 1 2 3; do sed -i "350i\        _edit_b$i = 0" $F; run "statement ending a straight run"; done
