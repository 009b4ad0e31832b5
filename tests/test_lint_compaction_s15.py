"""A block that compacts a pool because a capacity probe failed runs only when frees left the
pool too fragmented for its fast path (rare_events.compaction_fallback): SGLang's unified host
pool (`if not self._can_reserve_without_compaction(counts): ...; self._compact()`, where
`_compact` waits on every transfer's event). Each VALID package leaves the compaction's sync out
of the default report and keeps it under `--include-cold`; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

POOL = """
    import torch

    class HostPool:
        def __init__(self, pages: int):
            self.free_pages = list(range(pages))
            self.holes = 0

        def _can_reserve_fast(self, n: int) -> bool:
            return n <= len(self.free_pages) - self.holes

        def _can_fit_packed(self, n: int) -> bool:
            return n <= len(self.free_pages)

        def _compact(self) -> None:
            torch.cuda.synchronize()
            self.holes = 0

        def alloc(self, n: int):
            if not self._can_reserve_fast(n):
                if not self._can_fit_packed(n):
                    return None
                self._compact()
            pages, self.free_pages = self.free_pages[:n], self.free_pages[n:]
            return pages
"""

RUNNER = """
    from pkg.pool import HostPool

    class Runner:
        def __init__(self):
            self.pool = HostPool(64)

        def execute_model(self, n: int):
            return self.pool.alloc(n)
"""


def run(tmp_path, pool=POOL, include_cold=False):
    return lint_package(tmp_path, {"pool.py": pool, "runner.py": RUNNER}, include_cold=include_cold)


def flagged(tmp_path, pool=POOL):
    return lines(run(tmp_path, pool), "pkg/pool.py")


def test_a_compaction_behind_a_failed_probe_is_cold(tmp_path):
    assert flagged(tmp_path) == []
    cold = [f for f in run(tmp_path, include_cold=True).findings if f.site.path.endswith("pool.py")]
    assert cold and all("compacts the pool only when" in str(f.cold) or "not reached" in str(f.cold)
                        for f in cold)


def test_a_size_compared_with_a_probe_call_is_a_failed_probe_too(tmp_path):
    pool = POOL.replace("if not self._can_reserve_fast(n):", "if n > self.largest_free_run():") + """
        def largest_free_run(self) -> int:
            return len(self.free_pages) - self.holes
"""
    assert flagged(tmp_path, pool) == []


def test_a_compaction_on_every_call_keeps_the_sync(tmp_path):
    pool = POOL.replace("""            if not self._can_reserve_fast(n):
                if not self._can_fit_packed(n):
                    return None
                self._compact()""", """            self._compact()""")
    assert flagged(tmp_path, pool) == [16, 20]


def test_a_test_that_is_no_probe_keeps_the_sync(tmp_path):
    pool = POOL.replace("if not self._can_reserve_fast(n):", "if self.holes:")
    assert flagged(tmp_path, pool) == [16, 23]


def test_a_probe_before_other_work_keeps_the_sync(tmp_path):
    pool = POOL.replace("self._compact()", "self._flush()").replace("def _compact(self)", "def _flush(self)")
    assert flagged(tmp_path, pool) == [16, 23]


def test_a_compaction_in_a_nested_block_keeps_the_sync(tmp_path):
    pool = POOL.replace("""                self._compact()""", """                if self.holes:
                    self._compact()""")
    assert flagged(tmp_path, pool) == [16, 24]
