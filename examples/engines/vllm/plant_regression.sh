#!/usr/bin/env bash
# Plant a regression in the installed vLLM and show the gate failing on it: one line of
# GDNAttentionMetadataBuilder.build indexes the block table with the *device* mask
# (spec_sequence_masks) instead of its host copy (spec_sequence_masks_cpu), the change PR 38047
# undid. The file is restored on exit. Usage: plant_regression.sh VENV OUTDIR
# Exit 0 when the gate fails on the planted line (the expected outcome), 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ne 2 ]; then echo "usage: plant_regression.sh VENV OUTDIR" >&2; exit 2; fi
venv="$(cd "$1" && pwd)"; mkdir -p "$2"; out="$(cd "$2" && pwd)"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
target="$site/vllm/v1/attention/backends/gdn_attn.py"
old='                    spec_sequence_masks_cpu, : self.num_spec + 1'
new='                    spec_sequence_masks, : self.num_spec + 1'
line=$(grep -n -F -x -- "$old" "$target" | head -1 | cut -d: -f1)
[ -n "$line" ] || { echo "plant_regression.sh: the line to change is not in $target (another vLLM release?)" >&2; exit 2; }
cp "$target" "$out/gdn_attn.py.orig"
trap 'cp "$out/gdn_attn.py.orig" "$target"; rm -rf "$site/vllm/v1/attention/backends/__pycache__/gdn_attn."*' EXIT
python3 - "$target" "$line" "$new" <<'PY'
import sys
path, line, new = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(path).read().split("\n")
lines[line - 1] = new
open(path, "w").write("\n".join(lines))
PY
echo "planted: vllm/v1/attention/backends/gdn_attn.py:$line: $(sed -n "${line}p" "$target" | sed 's/^ *//')"
(cd "$site" && "$venv/bin/syncscope" run --device sim --no-table -o "$out/gdn_builder.planted.json" \
    --scope vllm.v1.attention.backends.gdn_attn:GDNAttentionMetadataBuilder.build "$here/gdn_builder.py") \
    > "$out/gdn_builder.planted.log" 2>&1 || { echo "the script failed:"; tail -5 "$out/gdn_builder.planted.log"; exit 1; }
"$venv/bin/python" "$here/summarize.py" "$out/gdn_builder.planted.json"
"$venv/bin/syncscope" gate "$out/gdn_builder.planted.json" --baseline "$here/baselines/gdn_builder.json" > "$out/gate.planted.txt" 2>&1
rc=$?
cat "$out/gate.planted.txt"
echo "gate exit code: $rc"
# The site is named at the statement's first line: the subscript `block_table_tensor[` opens one
# line above the changed one.
if [ "$rc" -eq 1 ] && grep -q -E "gdn_attn.py:($line|$((line - 1))):" "$out/gate.planted.txt"; then
  echo "the gate failed on the planted line, as it should"; exit 0
fi
exit 1
