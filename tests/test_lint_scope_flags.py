"""Issue 24, second pass on classes 1 and 3: a platform test kept in a field
(syncscope/lint/held_tests.py), caches grown past a cached size and values kept once a
device or size matches (syncscope/lint/memo.py), and lazy set-up behind an `inited` flag that
returns early (syncscope/lint/initflags.py). Each VALID package is not reported by default (its
finding is cold with `include_cold`); each INVALID twin stays per-step."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

PLATFORMS = """
    class _Platform:
        def is_rocm(self) -> bool:
            return False

    current_platform = _Platform()
"""

# -- a platform test kept in a field ----------------------------------------------------------
FIELD = """
    import torch
    from pkg.platforms import current_platform

    class Dispatch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.sync_comm = current_platform.is_rocm()

        def forward(self, x: torch.Tensor):
            self._sync_if_needed()
            return x

        def _sync_if_needed(self):
            if self.sync_comm:
                torch.cuda.current_stream().synchronize()
"""


def test_a_field_set_only_from_a_platform_test_carries_it(tmp_path):
    files = {"platforms.py": PLATFORMS, "moe.py": FIELD}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert list(cold) == [("pkg/moe.py", 16)], cold
    assert "self.sync_comm" in cold[("pkg/moe.py", 16)] and "is_rocm" in cold[("pkg/moe.py", 16)]


def test_a_field_set_from_a_local_that_holds_a_platform_test_carries_it(tmp_path):
    # VALID: `rocm = current_platform.is_rocm()` then `self.sync_comm = rocm` (SGLang's DFlash
    # worker keeps `supports_gpu_triton` in three fields that way)
    source = FIELD.replace("self.sync_comm = current_platform.is_rocm()",
                           "rocm = current_platform.is_rocm()\n            self.sync_comm = rocm")
    assert source != FIELD
    files = {"platforms.py": PLATFORMS, "moe.py": source}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "self.sync_comm" in cold[("pkg/moe.py", 17)] and "is_rocm" in cold[("pkg/moe.py", 17)], cold
    # INVALID: the local is bound again from something no test decides
    twice = source.replace("self.sync_comm = rocm", "rocm = rocm or torch.cuda.device_count() > 1\n"
                           "            self.sync_comm = rocm")
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "moe.py": twice})
    assert "SYN502" in [c for _, _, c in where(run)], where(run)


def test_a_field_also_set_from_anything_else_stays_unknown(tmp_path):
    # another method turns it on from a value no test decides: the sync may run on CUDA
    source = FIELD.replace("def forward(self, x: torch.Tensor):",
                           "def enable(self, on: bool):\n            self.sync_comm = on\n\n"
                           "        def forward(self, x: torch.Tensor):")
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "moe.py": source})
    assert "SYN502" in [c for _, _, c in where(run)], where(run)


def test_a_field_stored_from_outside_the_class_stays_unknown(tmp_path):
    source = FIELD + """
    def make_synced():
        d = Dispatch()
        d.sync_comm = True
        return d
"""
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "moe.py": source})
    assert "SYN502" in [c for _, _, c in where(run)], where(run)


# -- caches grown past their size, kept while big enough or on the same device ---------------
GROWTH = """
    import numpy as np
    import torch

    class Resampler(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.max_size = 16

        def _grow(self, size: int, device):
            if size > self.max_size:
                self.max_size = size
                self.table = torch.from_numpy(np.arange(size)).to(device)

        def forward(self, x: torch.Tensor, size: int):
            self._grow(size, x.device)
            return x + self.table[:size]
"""


def test_a_table_grown_past_its_cached_size_is_rebuilt_rarely(tmp_path):
    assert where(lint_package(tmp_path, {"model.py": GROWTH})) == []
    cold = cold_reasons(lint_package(tmp_path, {"model.py": GROWTH}, include_cold=True))
    assert list(cold) == [("pkg/model.py", 13)] and "new largest size" in cold[("pkg/model.py", 13)], cold


def test_a_table_rebuilt_whenever_the_size_differs_stays_per_step(tmp_path):
    # `!=`: a smaller batch rebuilds it too, back and forth with each step's size
    source = GROWTH.replace("if size > self.max_size:", "if size != self.max_size:")
    assert 13 in [line for _, line, _ in where(lint_package(tmp_path, {"model.py": source}))]


KEPT = """
    import torch

    class Encoding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pe = None
            self.axis = None

        def extend_pe(self, x: torch.Tensor):
            if self.pe is not None and self.pe.size(1) >= x.size(1):
                return
            pe = torch.zeros(x.size(1), 8)
            self.pe = pe.to(device=x.device)

        def axis_map(self, device):
            cache = self.axis
            if cache is not None and cache.device == device:
                return cache
            self.axis = torch.zeros(4).to(device)
            return self.axis

        def forward(self, x: torch.Tensor):
            self.extend_pe(x)
            return x + self.pe[:, : x.size(1)] + self.axis_map(x.device)
"""


def test_a_cache_kept_while_big_enough_or_on_the_same_device_is_built_rarely(tmp_path):
    assert where(lint_package(tmp_path, {"model.py": KEPT})) == []
    cold = cold_reasons(lint_package(tmp_path, {"model.py": KEPT}, include_cold=True))
    assert sorted(line for _, line in cold) == [14, 20], cold


def test_a_cache_kept_only_for_the_same_size_is_rebuilt_every_step(tmp_path):
    # equal sizes and a device compared with a size are no keys that hold across steps
    source = KEPT.replace("self.pe.size(1) >= x.size(1)", "self.pe.size(1) == x.size(1)") \
        .replace("cache.device == device", "cache.shape[0] == device")
    lines = [line for _, line, _ in where(lint_package(tmp_path, {"model.py": source}))]
    assert 14 in lines and 20 in lines, lines


# -- lazy set-up behind an `inited` flag ------------------------------------------------------
INIT_FLAG = """
    import torch

    class _State:
        def __init__(self):
            self.inited = False
            self.failed = False

        def init(self, group):
            self.inited = True

    STATE = _State()

    def ready(group) -> bool:
        if STATE.failed:
            return False
        if STATE.inited:
            return True
        STATE.init(group)
        agreed = torch.ones(1, device="cuda")
        if agreed.item() == 0:
            STATE.failed = True
            return False
        return True

    class Attention(torch.nn.Module):
        def forward(self, x: torch.Tensor, group):
            if ready(group):
                return x * 2
            return x
"""


def test_lazy_set_up_of_a_module_level_object_runs_once(tmp_path):
    assert where(lint_package(tmp_path, {"comm.py": INIT_FLAG})) == []
    cold = cold_reasons(lint_package(tmp_path, {"comm.py": INIT_FLAG}, include_cold=True))
    assert list(cold) == [("pkg/comm.py", 21)] and "STATE.inited" in cold[("pkg/comm.py", 21)], cold


def test_a_flag_the_rest_never_sets_is_no_lazy_set_up(tmp_path):
    # nothing after the early return sets up the object: every call without it runs the sync
    source = INIT_FLAG.replace("        STATE.init(group)\n", "")
    assert ("pkg/comm.py", 20) in [(p, line) for p, line, _ in where(lint_package(tmp_path, {"comm.py": source}))]


# -- a local bound once to a decided test ---------------------------------------------------
LOCAL = """
    import torch

    class Allocator(torch.nn.Module):
        def __init__(self, pool):
            super().__init__()
            self.pool = pool

        def forward(self, pages: torch.Tensor):
            check = pages.numel() > 1 and self.pool.debug_mode
            if check:
                assert torch.all(pages >= 0)
            return pages
"""


def test_a_local_set_once_from_a_debug_switch_carries_it(tmp_path):
    assert where(lint_package(tmp_path, {"alloc.py": LOCAL})) == []
    cold = cold_reasons(lint_package(tmp_path, {"alloc.py": LOCAL}, include_cold=True))
    assert list(cold) == [("pkg/alloc.py", 12)] and "`check`" in cold[("pkg/alloc.py", 12)], cold


def test_a_local_set_again_stays_unknown(tmp_path):
    source = LOCAL.replace("            if check:", "            if pages.is_cuda:\n                check = True\n"
                                                    "            if check:")
    assert [line for _, line, _ in where(lint_package(tmp_path, {"alloc.py": source}))] == [14]


CALLEE = """
    import torch

    def clear_pages(pages: torch.Tensor, check: bool = False):
        if check:
            torch.cuda.synchronize()
        return pages
"""


def test_a_local_set_once_from_a_debug_switch_passes_it_on_like_a_literal(tmp_path):
    source = LOCAL.replace("import torch", "import torch\n    from pkg.ops import clear_pages") \
        .replace("            return pages", "            return clear_pages(pages, check=check)")
    files = {"alloc.py": source, "ops.py": CALLEE}
    assert where(lint_package(tmp_path, files)) == []
    # a flag no test decides may turn the callee's check on (a SYN601 on a value the callee syncs
    # on is not ruled out by constant arguments: left alone)
    turned = source.replace("pages.numel() > 1 and self.pool.debug_mode", "pages.numel() > 1 and self.pool.strict")
    assert ("pkg/alloc.py", 14) in [(p, line) for p, line, _ in where(lint_package(tmp_path, {"alloc.py": turned, "ops.py": CALLEE}))]


TRITON_FALLBACK = """
    import torch
    from pkg.platforms import current_platform

    class Writer(torch.nn.Module):
        def forward(self, loc: torch.Tensor):
            if not current_platform.capabilities.supports_triton:
                return loc.tolist()
            return loc
"""


def test_a_fallback_for_platforms_without_triton_never_runs_on_cuda(tmp_path):
    files = {"platforms.py": PLATFORMS, "mla.py": TRITON_FALLBACK}
    assert where(lint_package(tmp_path, files)) == []
    other = TRITON_FALLBACK.replace("capabilities.supports_triton", "capabilities.supports_fp4")
    assert [line for _, line, _ in where(lint_package(tmp_path, {"platforms.py": PLATFORMS, "mla.py": other}))] == [8]
