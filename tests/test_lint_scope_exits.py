"""Guards a caller's arguments decide, second pass (issue 24, class 5): a sync after an early
exit (`if lora_info is None: return None`) is guarded like one inside an `if` block
(guardblocks.py), also in a nested function whose test reads the enclosing function's
parameter (constargs.py `CLOSURE`); and a conditional expression's fallback
(`cpu if cpu is not None else t.cpu()`) is a None-guard every caller may rule out
(exprguards.py). Each VALID case is reported cold, with its reason, and left out of the
default report; each INVALID twin is still reported."""

from __future__ import annotations

from test_lint_guards import cold_reasons, lines
from test_lint_scope import lint_package

# -- 1. an early exit in a closure, on the enclosing function's parameter ------------------
RUNNER = """
    import torch

    def build_hooks(hidden: torch.Tensor, info) -> torch.Tensor:
        torch.cuda.synchronize()
        return hidden

    class Runner:
        def __init__(self, enabled: bool):
            self.enabled = enabled

        def run(self, hidden: torch.Tensor, quant, info=None):
            def maybe_hooks(x: torch.Tensor):
                if not self.enabled or info is None:
                    return None
                return build_hooks(x, info)

            hooks = maybe_hooks(hidden)
            return hidden * 2, hooks
"""

QUANT = """
    import torch
    from pkg.runner import Runner

    class Method:
        def __init__(self):
            self.runner = Runner(False)

        def apply(self, hidden: torch.Tensor, quant):
            return self.runner.run(hidden, quant)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.method = Method()

        def forward(self, x: torch.Tensor):
            return self.method.apply(x, None)
"""

LORA = """
    import torch
    from pkg.runner import Runner

    class LoraModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.runner = Runner(True)

        def forward(self, x: torch.Tensor, info: torch.Tensor):
            return self.runner.run(x, None, info)
"""


def test_a_caller_that_leaves_out_what_a_closure_exits_on_does_not_sync(tmp_path):
    run = lint_package(tmp_path, {"runner.py": RUNNER, "quant.py": QUANT})
    assert lines(run, "pkg/quant.py") == []
    assert "constant arguments rule out" in cold_reasons(tmp_path, "pkg/quant.py")[10]


def test_a_caller_that_passes_what_a_closure_exits_on_still_syncs(tmp_path):
    run = lint_package(tmp_path, {"runner.py": RUNNER, "quant.py": QUANT, "lora.py": LORA})
    assert lines(run, "pkg/lora.py") == [11]
    assert lines(run, "pkg/quant.py") == []


def test_a_closure_over_a_parameter_the_enclosing_function_rebinds_is_no_guard(tmp_path):
    runner = RUNNER.replace("def maybe_hooks(", "info = info or quant\n            def maybe_hooks(")
    run = lint_package(tmp_path, {"runner.py": runner, "quant.py": QUANT})
    assert lines(run, "pkg/quant.py") == [10, 18]


# the hooks sync on the tensor passed in (a sync on a parameter, `cond`): guarded the same way
ON_INPUT = RUNNER.replace("torch.cuda.synchronize()\n        return hidden", "return hidden.sum().item()")


def test_a_sync_on_a_passed_tensor_after_a_closure_exit_is_ruled_out_per_call(tmp_path):
    run = lint_package(tmp_path, {"runner.py": ON_INPUT, "quant.py": QUANT})
    assert lines(run, "pkg/quant.py") == []
    assert "constant arguments rule out" in cold_reasons(tmp_path, "pkg/quant.py")[10]


def test_a_sync_on_a_passed_tensor_after_a_closure_exit_stays_for_a_caller_that_passes(tmp_path):
    run = lint_package(tmp_path, {"runner.py": ON_INPUT, "quant.py": QUANT, "lora.py": LORA})
    assert lines(run, "pkg/lora.py") == [11]
    assert lines(run, "pkg/quant.py") == []


# -- 2. an early exit on a parameter a per-step caller leaves at its default ---------------
HELPER = """
    import torch

    def scatter(x: torch.Tensor, extra=None):
        if extra is None:
            return x
        n = int(x.sum().item())
        return x[:n]
"""

STEP = """
    import torch
    from pkg.ops import scatter

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return scatter(x)
"""


def test_the_lines_after_an_early_exit_no_per_step_call_passes_are_cold(tmp_path):
    run = lint_package(tmp_path, {"ops.py": HELPER, "model.py": STEP})
    assert lines(run) == []
    assert "runs only when `not extra is None` in `scatter`" in cold_reasons(tmp_path)[7]


def test_the_lines_after_an_early_exit_a_per_step_call_passes_still_sync(tmp_path):
    step = STEP.replace("scatter(x)", "scatter(x, extra=x)")
    run = lint_package(tmp_path, {"ops.py": HELPER, "model.py": step})
    assert lines(run) == [7]


def test_an_if_that_may_fall_through_is_no_early_exit(tmp_path):
    ops = HELPER.replace("            return x\n", "            x = x + 1\n")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": STEP})
    assert lines(run) == [7]


# -- 3. a conditional expression's fallback every caller rules out -------------------------
FILTER = """
    import torch

    class Draft:
        def filter_batch(self, idx: torch.Tensor, idx_cpu=None):
            host = (
                idx_cpu if idx_cpu is not None else idx.cpu()
            )
            return host
"""

BATCH = """
    import torch
    from pkg.ops import Draft

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.draft = Draft()

        def forward(self, x: torch.Tensor, keep: list[int]):
            return self.draft.filter_batch(x, idx_cpu=keep)
"""


def test_a_fallback_expression_every_caller_rules_out_is_cold(tmp_path):
    run = lint_package(tmp_path, {"ops.py": FILTER, "model.py": BATCH})
    assert lines(run) == []
    assert "runs only when `idx_cpu` is None, and every caller passes it" in cold_reasons(tmp_path)[7]


def test_a_fallback_expression_a_caller_leaves_open_still_syncs(tmp_path):
    run = lint_package(tmp_path, {"ops.py": FILTER, "model.py": BATCH.replace(", idx_cpu=keep", "")})
    assert lines(run) == [7]


def test_a_fallback_sharing_its_line_with_a_call_is_no_guard(tmp_path):
    ops = FILTER.replace("idx_cpu if idx_cpu", "idx_cpu.tolist() if idx_cpu")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": BATCH})
    assert lines(run) == [7]


# -- 4. a call line that syncs under two tests passed on, one a per-step call takes --------
KERNEL = """
    import torch

    def kernel(x: torch.Tensor, scale: torch.Tensor, *, check: bool = False, out=None):
        if check:
            torch.cuda.synchronize()
        if out is not None:
            x = x * float(scale)
        return x

    def wrapper(x: torch.Tensor, scale: torch.Tensor, out=None, check: bool = False):
        return kernel(x, scale, check=check, out=out)

    def self_test(x: torch.Tensor, scale: torch.Tensor):
        return wrapper(x, scale, check=True)
"""

WRAPPED = """
    import torch
    from pkg.ops import wrapper

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, scale: torch.Tensor):
            return wrapper(x, scale, out=x)
"""


def test_a_call_line_stays_when_one_of_its_tests_passed_on_is_taken(tmp_path):
    run = lint_package(tmp_path, {"ops.py": KERNEL, "model.py": WRAPPED})
    # no per-step call turns `check` on, but one passes `out`: `float(scale)` runs every step
    assert lines(run) == [8, 12]
    assert lines(run, "pkg/model.py") == [7]


def test_a_call_line_whose_tests_passed_on_no_call_takes_is_cold(tmp_path):
    run = lint_package(tmp_path, {"ops.py": KERNEL, "model.py": WRAPPED.replace(", out=x", "")})
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []


# -- 5. a parameter stored into before its test is no guard on what the caller passed -------
FILLED = """
    import torch

    def kernel(x: torch.Tensor, scale: torch.Tensor, out=None, output: bool = True):
        if out is None and output:
            out = torch.empty_like(x)
        if out is not None:
            out.copy_(x * float(scale))
        return out
"""

FILLED_STEP = """
    import torch
    from pkg.ops import kernel

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, scale: torch.Tensor):
            return kernel(x, scale)
"""


def test_a_test_on_a_parameter_filled_in_before_it_does_not_rule_out_a_call(tmp_path):
    run = lint_package(tmp_path, {"ops.py": FILLED, "model.py": FILLED_STEP})
    assert lines(run, "pkg/model.py") == [7]


def test_a_test_on_a_parameter_not_filled_in_rules_out_a_call(tmp_path):
    ops = FILLED.replace("            out = torch.empty_like(x)", "            x = torch.empty_like(x)")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": FILLED_STEP})
    assert lines(run, "pkg/model.py") == []


def test_a_call_line_that_also_syncs_under_no_test_stays(tmp_path):
    ops = KERNEL.replace("        if out is not None:\n            x = x * float(scale)", "        x = x * float(scale)")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": WRAPPED.replace(", out=x", "")})
    assert lines(run) == [7, 11]
