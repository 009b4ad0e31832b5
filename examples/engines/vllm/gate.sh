#!/usr/bin/env bash
# The CI step: run the scripts (run_all.sh) and gate each report against the committed baseline.
# Usage: gate.sh VENV OUTDIR. Exit 0: every script ran and no new in-scope sync; 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ne 2 ]; then echo "usage: gate.sh VENV OUTDIR" >&2; exit 2; fi
"$here/run_all.sh" "$1" "$2"; status=$?
for script in gdn_builder backend_utils eagle_inputs flashinfer_builder flashinfer_builder_sm100 mla_builder; do
  echo "== gate $script"
  "$1/bin/syncscope" gate "$2/$script.json" --baseline "$here/baselines/$script.json" || status=1
done
exit $status
