"""Issue 24, rare and debug code (branch r-rare3): files of tools that are not serving
(syncscope/lint/toolpaths.py: benchmarks, canaries), SGLang's `envs.X.get()` check switches, and
a module-level name that holds a decided test (held_tests.module_globals). Each VALID package is
not reported by default (its finding is cold with `include_cold`); each INVALID twin stays."""

from __future__ import annotations

from lint_helpers import env_module
from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

# -- a canary: a fault-injection tool that serving code runs only when it is turned on --------
CANARY = """
    import torch

    class CanaryManager:
        def check(self, slots: torch.Tensor):
            bad = slots.tolist()
            return bad
"""

RUNNER = """
    import torch
    from pkg.{where}.manager import CanaryManager

    class Runner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.canary = CanaryManager()

        def forward(self, x: torch.Tensor):
            self.canary.check(x.cuda())
            return x
"""


def test_a_canary_file_is_cold_and_so_is_the_call_into_it(tmp_path):
    files = {"kv_canary/manager.py": CANARY, "runner.py": RUNNER.format(where="kv_canary")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "tool that is not serving (`canary`)" in cold[("pkg/kv_canary/manager.py", 6)], cold
    assert "pkg/kv_canary/manager.py" in cold[("pkg/runner.py", 11)], cold


def test_the_same_code_outside_a_tool_directory_stays(tmp_path):
    files = {"kv_cache/manager.py": CANARY, "runner.py": RUNNER.format(where="kv_cache")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/kv_cache/manager.py", 6, "SYN202") in found, found
    assert ("pkg/runner.py", 11, "SYN601") in found, found


BENCH = """
    import torch

    def time_forward(model, x: torch.Tensor):
        start = torch.cuda.Event(enable_timing=True)
        out = model(x)
        torch.cuda.synchronize()
        return out
"""

BENCH_ROOT = """
    import torch
    from pkg.{module} import time_forward

    class Bench(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return time_forward(self, x)
"""


def test_a_benchmark_module_is_cold(tmp_path):
    files = {"benchmarks/forward.py": BENCH, "entry.py": BENCH_ROOT.format(module="benchmarks.forward")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "(`benchmarks`)" in cold[("pkg/benchmarks/forward.py", 7)], cold


def test_a_word_that_only_contains_bench_is_no_tool(tmp_path):
    # `workbench` is one word: not a benchmark
    files = {"workbench.py": BENCH, "entry.py": BENCH_ROOT.format(module="workbench")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/workbench.py", 7, "SYN501") in found, found


# -- SGLang's environment switches read with `.get()` -------------------------------------------
ENVS = env_module("SGLANG_CHECK_KV_PAGE_INVARIANTS",
                  on=("SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE", "SGLANG_ENABLE_OVERLAP"))

SCHEDULER = """
    import torch
    from pkg.environ import envs

    class Scheduler:
        def __init__(self):
            self.free = torch.zeros(8, device="cuda")

        def step(self):
            if envs.{switch}.get():
                return self.free.tolist()
            return None
"""


def test_a_check_switch_read_with_get_is_off(tmp_path):
    files = {"environ.py": ENVS, "scheduler.py": SCHEDULER.format(switch="SGLANG_CHECK_KV_PAGE_INVARIANTS")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "SGLANG_CHECK_KV_PAGE_INVARIANTS" in cold[("pkg/scheduler.py", 11)], cold


def test_a_switch_on_by_default_or_no_check_stays(tmp_path):
    for switch in ("SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE", "SGLANG_ENABLE_OVERLAP"):
        files = {"environ.py": ENVS, "scheduler.py": SCHEDULER.format(switch=switch)}
        assert ("pkg/scheduler.py", 11, "SYN202") in where(lint_package(tmp_path, files)), switch


# -- a module-level name bound once to a decided test -------------------------------------------
BACKEND = """
    import torch
    from pkg.environ import envs

    _validate_indices = envs.SGLANG_CHECK_KV_PAGE_INVARIANTS.get()

    class Backend(torch.nn.Module):
        def forward(self, idx: torch.Tensor):
            if _validate_indices:
                assert idx.min().item() >= 0
            return idx
"""


def test_a_module_name_set_once_from_a_check_switch_is_off(tmp_path):
    files = {"environ.py": ENVS, "backend.py": BACKEND}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "`_validate_indices` is set only from a decided test" in cold[("pkg/backend.py", 10)], cold


def test_a_module_name_rebound_elsewhere_stays_unknown(tmp_path):
    source = BACKEND + """
    def enable_validation(on: bool):
        global _validate_indices
        _validate_indices = on
"""
    found = where(lint_package(tmp_path, {"environ.py": ENVS, "backend.py": source}))
    assert ("pkg/backend.py", 10, "SYN201") in found, found


# -- a backend chosen by a name that is another platform's --------------------------------------
CONTROLLER = """
    import torch

    class CacheController(torch.nn.Module):
        def __init__(self, io_backend: str):
            super().__init__()
            self.io_backend = io_backend
            self.slots = torch.zeros(8, device="cuda")

        def forward(self, x: torch.Tensor):
            if self.io_backend == "direct":
                return x
            elif self.io_backend == "{name}":
                return self.slots.tolist()
            return x
"""


def test_a_backend_named_for_another_platform_is_not_chosen_on_cuda(tmp_path):
    for name in ("kernel_ascend", "aiter_sparse", "intel_xpu"):
        run = lint_package(tmp_path, {"controller.py": CONTROLLER.format(name=name)}, include_cold=True)
        cold = cold_reasons(run)
        assert f"names another platform's backend (`{name}`)" in cold[("pkg/controller.py", 14)], (name, cold)


def test_a_backend_name_without_a_platform_word_stays(tmp_path):
    # `input` holds no `npu` word; `cpu` offload is a CUDA server's choice
    for name in ("input", "kernel", "cpu"):
        found = where(lint_package(tmp_path, {"controller.py": CONTROLLER.format(name=name)}))
        assert ("pkg/controller.py", 14, "SYN202") in found, (name, found)
