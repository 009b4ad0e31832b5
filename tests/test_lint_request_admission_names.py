"""Request intake and release names the facts missed (`[roots] request-intake`, `request-release`).

Readers judged these SGLang lines "real, once per request": the rest of a disaggregated decode
server's admission of the requests whose KV arrived (`get_new_prebuilt_batch` takes the waiting
requests the running batch has room for, each once, and builds their batch:
`_get_new_prebuilt_batch`, `prepare_for_prebuilt`; `process_prebuilt`, which it calls, was
already intake), the start of a beam group at its leader's prefill
(`BeamCoordinator.select_leader_prefill`, `BeamCoordinator.commit_prefill`; the group's end,
`BeamCoordinator._finish_group`, was already release), and the indexer top-k a finished request
asked for (`_maybe_collect_indexer_topk`, called beside `_maybe_collect_routed_experts`, already
release). What only they reach runs once per request, and a call into one does not sync for the
step that makes it. Their per-step neighbours keep their syncs: the prefill scheduler's
`get_new_batch_prefill`, the beam group's decode step `commit_decode`, and a method named like
the beam group's start on another class.
"""

from __future__ import annotations

# the table, and the scheduler that calls it for each request of a batch, of the intake callers' test
from test_lint_intake_callers_s21 import CALL, SCHEDULER, SYNC, TABLE
from test_lint_scope import lint_package, where


def _run(tmp_path, name, cls="RequestTable", **overrides):
    files = {"table.py": TABLE, "scheduler.py": SCHEDULER}
    files = {path: text.replace("NAME", name).replace("RequestTable", cls) for path, text in files.items()}
    return lint_package(tmp_path, files, **overrides)


VALID = [("get_new_prebuilt_batch", "DecodeMixin"), ("_get_new_prebuilt_batch", "DecodeMixin"),
         ("prepare_for_prebuilt", "ScheduleBatch"), ("_maybe_collect_indexer_topk", "BatchResultProcessor"),
         ("select_leader_prefill", "BeamCoordinator"), ("commit_prefill", "BeamCoordinator")]

INVALID = [("get_new_batch_prefill", "PrefillMixin"), ("commit_decode", "BeamCoordinator"),
           ("select_leader_prefill", "RequestTable"), ("commit_prefill", "RequestTable")]


def test_admission_and_release_steps_the_facts_name_run_once_per_request(tmp_path):
    # VALID: the sync and the call into it run once per request
    for name, cls in VALID:
        case = tmp_path / f"{cls}_{name}"
        case.mkdir()
        assert where(_run(case, name, cls)) == [], (cls, name)
        cold = {f.site.line: f.cold for f in _run(case, name, cls, include_cold=True).findings}
        assert "once per request" in (cold.get(SYNC[1]) or ""), (cls, name, cold)
        assert "takes in or releases requests" in (cold.get(CALL[1]) or ""), (cls, name, cold)


def test_their_per_step_neighbours_keep_their_syncs(tmp_path):
    # INVALID: per-step prefill scheduling, a beam group's decode commit, and the beam group's
    # start named on a class that is no beam coordinator stay per step
    for name, cls in INVALID:
        case = tmp_path / f"{cls}_{name}"
        case.mkdir()
        assert where(_run(case, name, cls)) == [CALL, SYNC], (cls, name)
