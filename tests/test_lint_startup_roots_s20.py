"""A method named like per-step work (`build`) that only start-up code calls is no per-step root
(startup_roots.py): SGLang's hybrid-pool strategies' `build`, called once while the radix cache is
set up, was the root the allocators' frees were reported from."""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOL = """
    import torch

    class Pool:
        def __init__(self, n: int):
            self.used = torch.zeros(n, dtype=torch.int64, device="cuda")

        def evict(self, n: int) -> int:
            return int(self.used.sum().item()) - n
"""

ASSEMBLER = """
    from pkg.pool import Pool

    class KVStrategy:
        def build(self, *, pool: Pool):
            BODY
            return pool

    def attach(cache, strategy: KVStrategy):
        CALL
"""

CACHE = """
    from pkg.assembler import KVStrategy, attach
    from pkg.pool import Pool

    class Cache:
        def __init__(self):
            self.pool = Pool(8)

        def init_hicache(self):
            attach(self, KVStrategy())
"""

SYNC = ("pkg/pool.py", 9, "SYN201")


def _run(tmp_path, body="pool.evict(0)", call="strategy.build(pool=cache.pool)", cache=CACHE, **overrides):
    assembler = ASSEMBLER.replace("BODY", body).replace("CALL", call)
    return lint_package(tmp_path, {"pool.py": POOL, "assembler.py": assembler, "cache.py": cache}, **overrides)


def test_a_build_only_start_up_code_calls_is_no_root(tmp_path):
    # VALID: `build` runs once, from `init_hicache` through a module function
    assert where(_run(tmp_path)) == []
    run = _run(tmp_path, include_cold=True)
    assert SYNC in where(run)
    # VALID: the same through a callback the builder hands on (SGLang's `host_swa_evict_fn`)
    assert where(_run(tmp_path, body="evict = lambda n: pool.evict(n)")) == []
    # VALID: called from `__init__` directly, in a loop there (start-up all the same)
    cache = CACHE.replace("self.pool = Pool(8)", "self.pool = Pool(8)\n            for _ in range(2):\n"
                          "                KVStrategy().build(pool=self.pool)")
    assert where(_run(tmp_path, cache=cache, call="pass")) == []


def test_a_build_that_may_run_every_step_stays_a_root(tmp_path):
    # INVALID: before the change the sync is reported; these keep it
    # a loop of its own: a root that owns a loop serves every step (SGLang's `event_loop_*`)
    assert SYNC in where(_run(tmp_path, body="for i in range(3):\n                pool.evict(i)"))
    # called inside a loop of the module function between it and start-up code
    assert SYNC in where(_run(tmp_path, call="while cache.busy():\n            strategy.build(pool=cache.pool)"))
    # a per-step caller as well
    stepping = CACHE + """
        def run_batch(self, batch):
            attach(self, KVStrategy())
    """
    assert SYNC in where(_run(tmp_path, cache=stepping))
    # a method not named like start-up code, that nothing in the tree calls: who calls it is unknown
    assert SYNC in where(_run(tmp_path, cache=CACHE.replace("def init_hicache", "def refresh")))
    # a read of the method kept for later (`self.rebuild = strategy.build`): maybe called every step
    keeping = CACHE.replace("self.pool = Pool(8)", "self.pool = Pool(8)\n            strategy = KVStrategy()\n"
                            "            self.rebuild = strategy.build")
    assert SYNC in where(_run(tmp_path, cache=keeping))
    # no use at all: nothing shows it runs once
    assert SYNC in where(_run(tmp_path, cache=CACHE.replace("attach(self, KVStrategy())", "pass")))
