"""Request release (`[roots] request-release`): what the step loop calls once for each request that
finished (SGLang's `release_kv_cache`, a connector's `request_finished`) runs once per request,
like request intake: what only it reaches is cold, and the call into it does not sync for the
step."""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOL = """
    import torch

    class Pool:
        def __init__(self, n: int):
            self.used = torch.zeros(n, dtype=torch.bool, device="cuda")

        def free(self, slots: torch.Tensor):
            if self.used[slots].any():
                raise RuntimeError("double free")
            self.used[slots] = False
"""

SCHEDULER = """
    from pkg.pool import Pool

    def RELEASE(req, pool: Pool):
        pool.free(req.slots)

    class Scheduler:
        def __init__(self):
            self.pool = Pool(8)

        def process_batch_result(self, batch):
            for req in batch.reqs:
                if req.finished:
                    RELEASE(req, self.pool)
"""

POOL_LINES = [("pkg/pool.py", 9, "SYN206"), ("pkg/pool.py", 11, "SYN406")]


def _run(tmp_path, release="release_kv_cache", scheduler=SCHEDULER, **overrides):
    return lint_package(tmp_path, {"pool.py": POOL, "scheduler.py": scheduler.replace("RELEASE", release)},
                        **overrides)


def test_what_only_a_request_release_reaches_runs_once_per_request(tmp_path):
    # VALID: the pool's frees run when a request finishes, not in every step
    for release in ("release_kv_cache", "request_finished"):
        assert where(_run(tmp_path, release)) == [], release
    run = _run(tmp_path, include_cold=True)
    cold = {(f.site.path, f.site.line, f.code): f.cold for f in run.findings}
    for key in POOL_LINES:
        assert "releases a finished request (request release)" in cold[key], cold


def test_another_name_or_a_per_step_call_keeps_the_syncs(tmp_path):
    # INVALID: a function of another name is walked as per step
    assert set(POOL_LINES) <= set(where(_run(tmp_path, "release_batch_slots")))
    # INVALID: the same frees reached from per-step code as well
    scheduler = SCHEDULER + """
        def run_batch(self, batch):
            self.pool.free(batch.slots)
    """
    assert set(POOL_LINES) <= set(where(_run(tmp_path, scheduler=scheduler)))
