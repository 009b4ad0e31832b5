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
