"""An allocation shortfall ladder runs only when an allocation does not fit the room the pool has
ready (rare_events.compaction_fallback and compaction_after): SGLang's unified KV pool calls
`_relieve_for_alloc` ("THE shortfall ladder": flush a neighbour's holes, move the floating band)
only `if need_size > self.available_size():` (as the test of an `if` of that block: `if not
_relieve_for_alloc(self, need_size): return None`) or after an early return that says the
allocation fits (`if need_tokens <= self.available_size(): return True`). Each VALID package
leaves the ladder's sync out of the default report and keeps it under `--include-cold`; each
INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

POOL = """
    import torch

    def _relieve_for_alloc(pool, need: int) -> bool:
        holes = pool.holes.tolist()
        pool.pages = torch.tensor(holes, device=pool.device)
        return need <= pool.available_size()

    class Pool:
        def __init__(self, n: int):
            self.device = torch.device("cuda")
            self.holes = torch.zeros(n, dtype=torch.int64, device=self.device)
            self.pages = torch.arange(n, device=self.device)
            self.free = n

        def available_size(self) -> int:
            return self.free

        def alloc(self, need: int):
            if need > self.available_size():
                if not _relieve_for_alloc(self, need):
                    return None
            self.free -= need
            return self.pages[:need]
"""

RUNNER = """
    from pkg.pool import Pool

    class Runner:
        def __init__(self):
            self.pool = Pool(64)

        def execute_model(self, n: int):
            return self.pool.alloc(n)
"""

EARLY = """
        def alloc(self, need: int):
            if need <= self.available_size():
                self.free -= need
                return self.pages[:need]
            return _relieve_for_alloc(self, need)
"""


def run(tmp_path, pool=POOL, include_cold=False):
    return lint_package(tmp_path, {"pool.py": pool, "runner.py": RUNNER}, include_cold=include_cold)


def flagged(tmp_path, pool=POOL):
    return lines(run(tmp_path, pool), "pkg/pool.py")


def early(body=EARLY):
    return POOL[:POOL.index("        def alloc(")] + body.lstrip("\n")


def test_a_ladder_in_the_test_of_an_if_under_a_failed_probe_is_cold(tmp_path):
    assert flagged(tmp_path) == []
    cold = [f for f in run(tmp_path, include_cold=True).findings if f.site.path.endswith("pool.py")]
    assert cold and all("compacts the pool only when" in str(f.cold) or "not reached" in str(f.cold)
                        for f in cold)


def test_a_ladder_after_an_early_return_that_says_it_fits_is_cold(tmp_path):
    assert flagged(tmp_path, early()) == []
    cold = [f for f in run(tmp_path, early(), include_cold=True).findings if f.site.path.endswith("pool.py")]
    assert cold and all("is false: a fast path failed" in str(f.cold) or "not reached" in str(f.cold)
                        for f in cold)


def test_a_ladder_on_every_call_keeps_the_sync(tmp_path):
    pool = POOL.replace("""            if need > self.available_size():
                if not _relieve_for_alloc(self, need):
                    return None""", """            if not _relieve_for_alloc(self, need):
                return None""")
    assert flagged(tmp_path, pool) == [5, 6, 20]


def test_a_test_that_is_no_probe_keeps_the_sync(tmp_path):
    pool = POOL.replace("if need > self.available_size():", "if self.free:")
    assert flagged(tmp_path, pool) == [5, 6, 21]


def test_a_ladder_named_for_no_compaction_keeps_the_sync(tmp_path):
    pool = POOL.replace("_relieve_for_alloc", "_flush_for_alloc")
    assert flagged(tmp_path, pool) == [5, 6, 21]


def test_a_ladder_in_a_nested_body_keeps_the_sync(tmp_path):
    pool = POOL.replace("""                if not _relieve_for_alloc(self, need):
                    return None""", """                if self.free:
                    _relieve_for_alloc(self, need)""")
    assert flagged(tmp_path, pool) == [5, 6, 22]


def test_an_early_return_that_falls_through_keeps_the_sync(tmp_path):
    body = EARLY.replace("""                return self.pages[:need]
""", "")
    assert flagged(tmp_path, early(body)) == [5, 6, 22]


def test_an_early_return_with_an_else_keeps_the_sync(tmp_path):
    body = EARLY.replace("""            return _relieve_for_alloc(self, need)""", """            else:
                self.free = 0
            return _relieve_for_alloc(self, need)""")
    assert flagged(tmp_path, early(body)) == [5, 6, 25]


def test_an_early_return_on_no_probe_keeps_the_sync(tmp_path):
    body = EARLY.replace("if need <= self.available_size():", "if need <= 0:")
    assert flagged(tmp_path, early(body)) == [5, 6, 23]


def test_an_early_raise_keeps_the_sync(tmp_path):
    """vLLM's `if torch.cuda.is_current_stream_capturing(): raise ...` before per-step planning
    that calls `compact_page_metadata`: an error check, not a shortfall."""
    body = EARLY.replace("""                self.free -= need
                return self.pages[:need]""", """                raise RuntimeError("no room")""")
    assert flagged(tmp_path, early(body)) == [5, 6, 22]


def test_an_early_return_on_a_bare_call_keeps_the_sync(tmp_path):
    body = EARLY.replace("if need <= self.available_size():", "if self.ready():")
    assert flagged(tmp_path, early(body)) == [5, 6, 23]


def test_a_compaction_whose_value_is_assigned_keeps_the_sync(tmp_path):
    body = EARLY.replace("            return _relieve_for_alloc(self, need)", """            ok = _relieve_for_alloc(self, need)
            return ok""")
    assert flagged(tmp_path, early(body)) == [5, 6, 23]


def test_a_ladder_when_the_size_fits_keeps_the_sync(tmp_path):
    pool = POOL.replace("if need > self.available_size():", "if need < self.available_size():")
    assert flagged(tmp_path, pool) == [5, 6, 21]


def test_an_early_return_when_the_size_does_not_fit_keeps_the_sync(tmp_path):
    body = EARLY.replace("if need <= self.available_size():", "if need > self.available_size():")
    assert flagged(tmp_path, early(body)) == [5, 6, 23]


def test_an_early_return_on_a_lack_compared_with_a_literal_keeps_the_sync(tmp_path):
    body = EARLY.replace("if need <= self.available_size():", "if self.available_size() >= 0:")
    assert flagged(tmp_path, early(body)) == [5, 6, 23]
