#!/usr/bin/env bash
# Run the vLLM builder scripts under `syncscope run --device sim`, one report each, and print the
# in-scope sites. Usage: run_all.sh VENV OUTDIR
#   VENV: a venv made by setup.sh (vLLM, its pinned dependencies, CPU torch, syncscope)
#   OUTDIR: where the reports go (gdn_builder.json, backend_utils.json, eagle_inputs.json,
#           flashinfer_builder.json (as on an H100), flashinfer_builder_sm100.json (as on a B200),
#           mla_builder.json (FlashMLA))
# The programs run from the venv's site-packages, so vLLM's files are reported as
# vllm/v1/... (paths relative to the working directory): a baseline made in one venv matches in
# another. Exit 0 when every script ran to its end (whatever it found), 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ne 2 ]; then echo "usage: run_all.sh VENV OUTDIR" >&2; exit 2; fi
venv="$(cd "$1" 2>/dev/null && pwd)" || { echo "run_all.sh: no venv at $1" >&2; exit 2; }
mkdir -p "$2" && out="$(cd "$2" && pwd)"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
U=vllm.v1.attention.backends.utils
FI="--scope vllm.v1.attention.backends.flashinfer:FlashInferMetadataBuilder.build"
REPORTS="gdn_builder backend_utils eagle_inputs flashinfer_builder flashinfer_builder_sm100 mla_builder"
# report name -> the script and its arguments (one script can give several reports)
declare -A programs=(
  [gdn_builder]="gdn_builder.py" [backend_utils]="backend_utils.py" [eagle_inputs]="eagle_inputs.py"
  [flashinfer_builder]="flashinfer_builder.py --arch sm90" [flashinfer_builder_sm100]="flashinfer_builder.py --arch sm100"
  [mla_builder]="mla_builder.py"
)
declare -A scopes=(
  [gdn_builder]="--scope vllm.v1.attention.backends.gdn_attn:GDNAttentionMetadataBuilder.build"
  [backend_utils]="--scope $U:split_decodes_and_prefills --scope $U:split_decodes_prefills_and_extends --scope $U:make_local_attention_virtual_batches --scope $U:compute_causal_conv1d_metadata"
  [eagle_inputs]="--scope vllm.v1.spec_decode.eagle:EagleProposer.prepare_inputs_padded --scope vllm.v1.spec_decode.eagle:EagleProposer.prepare_inputs"
  [flashinfer_builder]="$FI" [flashinfer_builder_sm100]="$FI"
  [mla_builder]="--scope vllm.v1.attention.backends.mla.flashmla:FlashMLAMetadataBuilder.build --scope vllm.model_executor.layers.attention.mla_attention:MLACommonMetadataBuilder.build"
)
status=0
for script in $REPORTS; do
  read -r program args <<< "${programs[$script]}"
  start=$(date +%s)
  # shellcheck disable=SC2086
  (cd "$site" && "$venv/bin/syncscope" run --device sim --no-table -o "$out/$script.json" ${scopes[$script]} \
      "$here/$program" $args) > "$out/$script.log" 2>&1
  rc=$?
  echo "== $script: exit $rc, $(( $(date +%s) - start )) s (log: $out/$script.log)"
  [ $rc -eq 0 ] || { status=1; tail -5 "$out/$script.log"; }
  "$venv/bin/python" "$here/summarize.py" "$out/$script.json" || status=1
done
exit $status
