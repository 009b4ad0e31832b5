"""SGLang's PD-disaggregation decode takes in the requests the prefill side sent through two
queue methods its event loop calls every step: `pop_preallocated` (requests whose KV slots were
just reserved) and `pop_transferred` (requests whose KV arrived). Each request passes through them
once, so they are request intake (`[roots] request-intake` in the library facts): what only they
reach runs once per request, not per step."""

from __future__ import annotations

from test_lint_scope import lint_package, where

QUEUE = """
    import torch

    class TransferQueue:
        def __init__(self):
            self.arrived = torch.zeros(8, device="cuda")

        def NAME(self):
            return int(self.arrived.sum().item())
"""

SCHEDULER = """
    from pkg.queue import TransferQueue

    class Scheduler:
        def __init__(self):
            self.queue = TransferQueue()

        def run_batch(self, batch):
            return self.queue.NAME()
"""

SYNC = ("pkg/queue.py", 9, "SYN201")


def _run(tmp_path, name, **overrides):
    return lint_package(tmp_path, {"queue.py": QUEUE.replace("NAME", name),
                                   "scheduler.py": SCHEDULER.replace("NAME", name)}, **overrides)


def test_the_decode_queues_intake_runs_once_per_request(tmp_path):
    # VALID: both queue methods take in each request once
    for name in ("pop_transferred", "pop_preallocated"):
        assert where(_run(tmp_path, name)) == []
        assert SYNC in where(_run(tmp_path, name, include_cold=True))


def test_other_queue_methods_stay_per_step(tmp_path):
    # INVALID: a method of another name that the step calls
    assert SYNC in where(_run(tmp_path, "poll_transfers"))
