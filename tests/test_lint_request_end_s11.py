"""A request's end, session 11 (branch r-life): a test that a request has finished
(`if req.finished():`, `request.is_finished()`; library facts `[switches] request-ends` and
`request-names`) is true once in the request's life, so the lines under it run once per request,
not every step (SGLang's result processor collects a finished request's routed experts and frees
its slots there). Small packages: the per-step loop over the batch's requests in one file, the
helper that syncs in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
    import torch

    def pointer_table(pointers, device) -> torch.Tensor:
        table = torch.tensor(pointers, dtype=torch.int64, device=device)
        top = int(table.max().item())
        return table[: top + 1]
"""

FINISHED = """
    import torch
    from pkg.helpers import pointer_table

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, reqs):
            for req in reqs:
                req.update_finish_state()
                if req.finished():
                    self._collect(req, x)
            return x

        def _collect(self, req, x):
            req.experts = pointer_table([req.slot], x.device)
"""

GUARD = """
    import torch
    from pkg.helpers import pointer_table

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, decode_reqs):
            for decode_req in decode_reqs:
                if not decode_req.req.is_finished():
                    continue
                pointer_table([decode_req.slot], x.device)
            return x
"""


def _syncs(run) -> list:
    return [item for item in where(run) if item[0] in ("pkg/model.py", "pkg/helpers.py")]


def test_lines_under_a_finished_request_run_once_per_request(tmp_path):
    # VALID: `if req.finished():` holds once in a request's life
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": FINISHED})
    assert _syncs(run) == [], where(run)


def test_lines_after_skipping_running_requests_run_once_per_request(tmp_path):
    # VALID: `if not decode_req.req.is_finished(): continue` leaves only the finished requests
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": GUARD})
    assert _syncs(run) == [], where(run)


def test_lines_under_an_unfinished_request_stay_per_step(tmp_path):
    # INVALID twin: `if not req.finished():` is the requests still running, every step
    source = FINISHED.replace("if req.finished():", "if not req.finished():")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_lines_after_skipping_finished_requests_stay_per_step(tmp_path):
    # INVALID twin: `if decode_req.req.is_finished(): continue` leaves the running ones
    source = GUARD.replace("if not decode_req.req.is_finished():", "if decode_req.req.is_finished():")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_finished_flag_of_something_else_stays_per_step(tmp_path):
    # INVALID twin: `state.finished` is no request's end (a loop's, a stream's flag)
    source = FINISHED.replace("if req.finished():", "if req.state.finished:")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


ENDED = """
    import torch
    from pkg.helpers import pointer_table

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, reqs):
            for req in reqs:
                if req.done:
                    self.request_finished(req, x)
            return x

        def request_finished(self, req, x):
            req.experts = pointer_table([req.slot], x.device)
"""


def test_a_function_named_for_a_request_end_runs_once_per_request(tmp_path):
    # VALID: `request_finished` runs when a request finishes (so would `finish_request`)
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": ENDED})
    assert _syncs(run) == [], where(run)


def test_a_poll_of_finished_ids_stays_per_step(tmp_path):
    # INVALID twin: `pop_finished_req_ids` polls every step; the request word is not last
    source = ENDED.replace("request_finished", "pop_finished_req_ids")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)
