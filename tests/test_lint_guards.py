"""Guards the normal serving path never takes (issue 24): error paths (errorpaths.py), dead code
after an unconditional `raise`, and pageable fallbacks that run only without pinned memory
(library_facts.toml `true-on-cuda`). Each VALID package is left out of the default report and
shows up as cold, with its reason, under `include_cold`; each INVALID one is still reported."""

from __future__ import annotations

from test_lint_scope import lint_package, where

MODEL = """
    import torch
    from pkg.ops import helper

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return helper(x)
"""


def lines(run, path="pkg/ops.py") -> list[int]:
    """The lines of `path` the default report flags (the rule codes are not the point here)."""
    return sorted({line for at, line, _ in where(run) if at == path})


def cold_reasons(tmp_path, path="pkg/ops.py") -> dict[int, str]:
    cold = lint_package(tmp_path, {}, include_cold=True)
    return {f.site.line: f.cold for f in cold.findings if f.site.path == path and f.cold}


# -- 1. error paths -----------------------------------------------------------------------
ERROR_BLOCK = """
    import torch

    def helper(x: torch.Tensor):
        bad = x < 0
        if bool(bad.any()):
            idx = int(bad.nonzero()[0].item())
            raise ValueError(f"negative at {idx}")
        return x
"""


def test_a_sync_formatting_the_message_of_a_raise_is_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": ERROR_BLOCK})
    # the guard itself syncs every step: still reported; the `.item()` for the message is not
    assert lines(run) == [6]
    assert "error path: the block ends in `raise`" in cold_reasons(tmp_path)[7]


def test_a_block_that_may_return_before_raising_stays_per_step(tmp_path):
    ops = ERROR_BLOCK.replace("idx = int(bad.nonzero()[0].item())",
                              "idx = int(bad.nonzero()[0].item())\n        if idx > 3:\n            return x")
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": ops})
    assert 7 in lines(run)


def test_a_raise_inside_a_try_the_function_catches_stays_per_step(tmp_path):
    ops = """
        import torch

        def helper(x: torch.Tensor):
            try:
                if x.numel() > 4:
                    n = x.sum().item()
                    raise StopIteration(n)
            except StopIteration:
                pass
            return x
    """
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": ops})
    assert 7 in lines(run)


RAISING_HELPER = """
    import torch
    from pkg.checks import fail_stale

    class Pool:
        def _raise_stale(self, *, bad):
            ids = bad.tolist()
            raise AssertionError(f"stale {ids}")

        def free(self, x: torch.Tensor):
            if bool((x < 0).any()):
                self._raise_stale(bad=x)
            if bool((x > 9).any()):
                n = x.sum().item()
                fail_stale(n)
            return x

    def helper(x: torch.Tensor):
        return Pool().free(x)
"""

CHECKS = """
    def fail_stale(n):
        if n > 3:
            raise ValueError(n)
        else:
            raise KeyError(n)
"""


def test_a_function_all_of_whose_paths_raise_is_an_error_path_and_so_is_a_call_to_it(tmp_path):
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": RAISING_HELPER, "checks.py": CHECKS})
    # the two guards stay; the helper's `.tolist()`, the call into it and the block that ends in
    # a call to `fail_stale` (in another module) do not. `Pool().free(x)` (19) calls a method
    # that syncs on its object's class (session 15: as `p = Pool(); p.free(x)` always did)
    assert lines(run) == [11, 13, 19]
    reasons = cold_reasons(tmp_path)
    assert "every path of `_raise_stale` raises" in reasons[7]
    assert "ends in a call to `fail_stale`" in reasons[14]


def test_a_helper_that_may_return_is_not_an_error_path(tmp_path):
    checks = CHECKS.replace("raise ValueError(n)", "return n")
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": RAISING_HELPER, "checks.py": checks})
    assert 14 in lines(run)


# -- 2. dead code -------------------------------------------------------------------------
def test_code_after_an_unconditional_raise_never_runs(tmp_path):
    ops = """
        import torch

        def helper(x: torch.Tensor, enabled: bool):
            if not enabled:
                return False
            raise NotImplementedError("not supported yet")

            return x.abs().mean().cpu().item() < 0.1
    """
    run = lint_package(tmp_path, {"model.py": MODEL.replace("helper(x)", "helper(x, x.dim() > 2)"), "ops.py": ops})
    assert lines(run) == []
    assert "unreachable: after an unconditional `raise`" in cold_reasons(tmp_path)[9]


# -- 3. pageable fallbacks ------------------------------------------------------------------
PINNED = """
    import torch
    from pkg.platform import is_pin_memory_available

    def helper(x: torch.Tensor):
        if not is_pin_memory_available(x.device):
            return x.to("cpu")
        host = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
        host.copy_(x, non_blocking=True)
        return host
"""


def test_a_copy_that_runs_only_without_pinned_memory_is_not_per_step(tmp_path):
    files = {"model.py": MODEL, "ops.py": PINNED, "platform.py": "def is_pin_memory_available(d=None): return True\n"}
    run = lint_package(tmp_path, files)
    assert lines(run) == []
    assert "is true on CUDA" in cold_reasons(tmp_path)[7]


def test_a_copy_under_another_memory_predicate_stays_per_step(tmp_path):
    ops = PINNED.replace("is_pin_memory_available(x.device)", "is_shared_memory_ready(x.device)") \
        .replace("import is_pin_memory_available", "import is_shared_memory_ready")
    files = {"model.py": MODEL, "ops.py": ops, "platform.py": "def is_shared_memory_ready(d=None): return True\n"}
    run = lint_package(tmp_path, files)
    assert lines(run) == [7]


# -- 5. constant arguments that rule out the callee's syncing branch -------------------------
PLANNER = """
    import torch

    def plan(lens: torch.Tensor, num_kv_splits: int = -1, attn=None, num_tokens=None):
        if num_kv_splits < 1 and lens.numel() > 0:
            cost = torch.zeros(2, device="cuda")
            totals = cost.tolist()
            num_kv_splits = len(totals)
        if attn is not None or num_tokens is not None:
            torch.cuda.synchronize()
        return num_kv_splits
"""


def test_a_call_whose_constant_arguments_rule_out_the_syncing_branch_is_not_flagged(tmp_path):
    model = """
        import torch
        from pkg.planner import plan

        class Model(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return plan(x, num_kv_splits=1)

        class Other(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return plan(x, 0)

        class Third(torch.nn.Module):
            def forward(self, x: torch.Tensor, attn):
                return plan(x, 4, attn)
    """
    run = lint_package(tmp_path, {"model.py": model, "planner.py": PLANNER})
    # `num_kv_splits=1` with the other two left at None: neither branch runs for that call;
    # `0` takes the first; an `attn` of unknown value may take the second
    assert lines(run, "pkg/model.py") == [11, 15]
    assert "constant arguments rule out the branch of `plan`" in cold_reasons(tmp_path, "pkg/model.py")[7]



def test_a_call_to_an_abstract_stub_or_an_overridden_raiser_is_not_an_error_path(tmp_path):
    ops = """
        import torch

        class Grammar:
            def accept_token(self, token: int) -> None:
                raise NotImplementedError()

            def reject(self, token: int) -> None:
                raise RuntimeError(token)

        class Real(Grammar):
            def accept_token(self, token: int) -> None:
                self.last = token

            def reject(self, token: int) -> None:
                self.bad = token

        def helper(x: torch.Tensor, grammar: Grammar):
            if x.dim() > 1:
                grammar.accept_token(int(x[0]))
            if x.dim() > 2:
                grammar.reject(int(x[1]))
            return x
    """
    model = MODEL.replace("helper(x)", "helper(x, None)")
    run = lint_package(tmp_path, {"model.py": model, "ops.py": ops})
    assert lines(run) == [20, 22]


def test_a_caller_further_up_of_a_ruled_out_call_is_cold_too(tmp_path):
    model = """
        import torch
        from pkg.planner import plan

        def plan_one_split(x: torch.Tensor):
            return plan(x, num_kv_splits=1)

        class Model(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return plan_one_split(x)
    """
    run = lint_package(tmp_path, {"model.py": model, "planner.py": PLANNER})
    assert lines(run, "pkg/model.py") == []
    reasons = cold_reasons(tmp_path, "pkg/model.py")
    assert "constant arguments rule out the branch of `plan`" in reasons[6]
    assert "constant arguments rule out the branch of `plan`" in reasons[10]
