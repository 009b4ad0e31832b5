#!/usr/bin/env bash
# Issue 6's multi-GPU check: `torchrun` ranks under syncscope write one report each (host, pid and
# rank in the name), `syncscope combine` merges them, and the planted sync of
# examples/tp_allreduce.py is found on the planted rank and on no other.
#
#   2 GPUs (NCCL):              bench/torchrun_check.sh
#   CPU (gloo, simulated GPU):  SYNCSCOPE_DEVICE=sim bench/torchrun_check.sh
#
# Settings (environment): NPROC (2), SYNCSCOPE_DEVICE (cuda), PLANTED_RANK (1), STEPS (20),
# REPORTS (torchrun-reports: where the reports go; earlier syncscope reports in it are removed).
# Exit status 0 only when every check holds.
set -euo pipefail
cd "$(dirname "$0")/.."
NPROC=${NPROC:-2}
DEVICE=${SYNCSCOPE_DEVICE:-cuda}
PLANTED=${PLANTED_RANK:-1}
STEPS=${STEPS:-20}
DIR=${REPORTS:-torchrun-reports}
PYTHON=${PYTHON:-python}

mkdir -p "$DIR"
rm -f "$DIR"/syncscope-report*.json "$DIR"/combined.json "$DIR"/step-only.json "$DIR"/empty-baseline.json "$DIR"/gate.txt  # only our own files: the folder may hold other files
# Each rank is its own `syncscope run`; with torchrun's RANK set it names its report
# syncscope-report.<host>.<pid>.rank<r>.json.
"$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$NPROC" -m syncscope run \
  --device "$DEVICE" --no-table -o "$DIR/syncscope-report.json" \
  examples/tp_allreduce.py --steps "$STEPS" --planted-rank "$PLANTED" --device cuda
"$PYTHON" -m syncscope combine "$DIR"/syncscope-report*.json -o "$DIR/combined.json"

"$PYTHON" - "$DIR" "$NPROC" "$PLANTED" "$STEPS" <<'PY'
import glob, json, os, sys

out, nproc, planted, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ranks = sorted(glob.glob(os.path.join(out, "syncscope-report.*.rank*.json")))
per_rank = {json.load(open(p))["rank"]: json.load(open(p)) for p in ranks}
assert sorted(per_rank) == list(range(nproc)), f"expected one report per rank, got {ranks}"
for rank, data in per_rank.items():
    assert f".rank{rank}.json" in [os.path.basename(p)[-len(f'.rank{rank}.json'):] for p in ranks]
    assert data["status"] == "completed" and data["exit_code"] == 0, (rank, data.get("status"), data.get("error"))

combined = json.load(open(os.path.join(out, "combined.json")))
assert combined["summary"]["events"] == sum(d["summary"]["events"] for d in per_rank.values()), "combine lost or added events"
# The decode step is the region that matters. (Syncs of the set-up before the first region are
# counted in scope by the runtime, as nothing was declared yet; they are not the step's.)
gated = [s for s in combined["sites"] if s["in_scope"] and not s["allowed"] and "tp_step" in s["regions"]]
planted_sites = [s for s in gated if "planted sync" in s["source"]]
assert len(planted_sites) == 1, f"planted sync not found exactly once: {[(s['path'], s['line'], s['kind']) for s in gated]}"
site = planted_sites[0]
by_rank = {p["rank"]: p["count"] for p in site["processes"] if p["count"]}
assert by_rank == {planted: steps}, f"planted sync should be on rank {planted} only, {steps} times; got {by_rank}"
others = [s for s in gated if s is not site]
assert not others, f"unexpected in-scope syncs: {[(s['path'], s['line'], s['kind'], s['source']) for s in others]}"
for rank, data in per_rank.items():
    own = sum(s["count"] for s in data["sites"] if s["in_scope"] and not s["allowed"] and "tp_step" in s["regions"])
    assert own == (steps if rank == planted else 0), f"rank {rank}: {own} in-scope syncs"
blocked = site["blocked_ns"]
print(f"torchrun check passed: {nproc} ranks ({combined['device']}), planted sync {site['path']}:{site['line']} "
      f"({site['kind']}, {site['function']}) on rank {planted} only, {site['count']} events"
      + (f", host blocked {blocked / 1e6:.3f} ms" if blocked else ""))
PY

# The gate on the merged report: against a baseline holding nothing, the planted sync is the one
# new site of the step, and the gate names its rank.
"$PYTHON" - "$DIR" <<'PY'
import json, os, sys
d = sys.argv[1]
data = json.load(open(os.path.join(d, "combined.json")))
# Keep the step's sites only (the set-up before the first region counts as in scope; see above).
data["sites"] = [s for s in data["sites"] if "tp_step" in s["regions"]]
data["events"] = []
json.dump(data, open(os.path.join(d, "step-only.json"), "w"))
json.dump({"schema": "syncscope.baseline", "version": 1, "origin": "runtime", "sites": []},
          open(os.path.join(d, "empty-baseline.json"), "w"))
PY
set +e
"$PYTHON" -m syncscope gate "$DIR/step-only.json" --baseline "$DIR/empty-baseline.json" > "$DIR/gate.txt" 2>&1
status=$?
set -e
cat "$DIR/gate.txt"
[ "$status" -eq 1 ] && grep -q "1 new sync site" "$DIR/gate.txt" && grep -q "on rank $PLANTED\b" "$DIR/gate.txt" \
  || { echo "torchrun check: the gate did not report the planted site on rank $PLANTED" >&2; exit 1; }
echo "gate check passed: exit 1, one new site, on rank $PLANTED"
