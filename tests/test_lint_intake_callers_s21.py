"""A call into request intake or release (`[roots] request-intake`, `request-release`) does not
sync for the step that makes it: what the callee syncs, it syncs once per request. Until session
21 that held only when the callee synced through another intake; a callee that syncs in its own
body (SGLang's HiSparse `request_finished(req)`, called from the batch result processor for each
finished request) still gave its per-step caller a SYN602 (wholeprogram.py, `intakes`)."""

from __future__ import annotations

from test_lint_scope import lint_package, where

TABLE = """
    import torch

    class RequestTable:
        def __init__(self):
            self.arrived = torch.zeros(8, device="cuda")

        def NAME(self, req):
            return int(self.arrived.sum().item())
"""

SCHEDULER = """
    from pkg.table import RequestTable

    class Scheduler:
        def __init__(self):
            self.table = RequestTable()

        def run_batch(self, batch):
            for req in batch:
                self.table.NAME(req)
"""

SYNC, CALL = ("pkg/table.py", 9, "SYN201"), ("pkg/scheduler.py", 10, "SYN602")


def _run(tmp_path, name, **overrides):
    return lint_package(tmp_path, {"table.py": TABLE.replace("NAME", name),
                                   "scheduler.py": SCHEDULER.replace("NAME", name)}, **overrides)


def test_a_call_into_request_intake_or_release_is_no_per_step_sync(tmp_path):
    # VALID: intake (`add_request`; SGLang's HiSparse `collect_ready_reqs` and the admission of
    # one request, `admit_request_direct`) and release (`request_finished`, `finish_request`,
    # the routed experts of a finished request) sync once per request
    for name in ("add_request", "request_finished", "collect_ready_reqs", "process_prebuilt",
                 "_build_hisparse_decode_batch", "admit_request_direct", "admit_request_into_staging",
                 "finish_request", "_maybe_collect_routed_experts"):
        (tmp_path / name).mkdir()
        assert where(_run(tmp_path / name, name)) == [], name
        cold = {f.site.line: f.cold for f in _run(tmp_path / name, name, include_cold=True).findings}
        assert "once per request" in (cold.get(SYNC[1]) or ""), cold
        assert "takes in or releases requests" in (cold.get(CALL[1]) or ""), cold


def test_a_call_into_other_per_step_work_still_syncs(tmp_path):
    # INVALID: a method of another name: the sync and the call into it are per step; so is one
    # named as a release only of another class (`BeamCoordinator._finish_group` in the facts),
    # and one that admits something other than a request (`admit_tile`)
    for name in ("refresh", "_finish_group", "admit_tile"):
        (tmp_path / name).mkdir()
        assert where(_run(tmp_path / name, name)) == [CALL, SYNC], name
