"""Soundness faults found on session 17's main, each fixed with a package that reached a real
sync and was not reported (INVALID: reported now) beside one the rule still rules out (VALID)."""

from __future__ import annotations

from test_lint_kernel_names_s8 import BATCH, RELAY, lines
from test_lint_scope import GUARDED, GUARDED_CALLER, lint_package, where


def test_a_caller_passing_a_literal_none_takes_the_none_branch(tmp_path):
    # `chunk_fwd(x, cu, None)`: the parameter is written, but None is what the guard tests for
    for call in ("chunk_fwd(x, cu_seqlens, None)", "chunk_fwd(x, cu_seqlens, chunk_indices=None)"):
        run = lint_package(tmp_path, {
            "ops.py": GUARDED,
            "model.py": f"""
                import torch
                from pkg.ops import chunk_fwd

                class Layer(torch.nn.Module):
                    def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor):
                        return {call}
            """,
        })
        assert ("pkg/model.py", 7, "SYN601") in where(run), call


def test_a_caller_passing_a_value_still_rules_the_none_branch_out(tmp_path):
    run = lint_package(tmp_path, {
        "ops.py": GUARDED,
        "model.py": """
            import torch
            from pkg.ops import chunk_fwd

            class Layer(torch.nn.Module):
                def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor, meta):
                    return chunk_fwd(x, cu_seqlens, meta.chunk_indices)
        """,
    })
    assert where(run) == []


def test_a_call_by_name_passing_a_literal_none_takes_the_none_branch(tmp_path):
    # the receiver's class is unknown: the call reaches `Relay.filter_batch` by its name
    for call in ("filter_batch(new_indices=keep_device, new_indices_cpu=None)", "filter_batch(keep_device, None)"):
        batch = BATCH.replace("filter_batch(new_indices=keep_device, new_indices_cpu=keep)", call)
        run = lint_package(tmp_path, {"relay.py": RELAY, "batch.py": batch})
        assert lines(run, "pkg/relay.py") == [6], call
    run = lint_package(tmp_path, {"relay.py": RELAY, "batch.py": BATCH})
    assert lines(run, "pkg/relay.py") == []


# -- a name one arm takes from a parameter and the other from elsewhere (branch_merge.merge_names)
EITHER = """
    import torch

    def longest(x: torch.Tensor, lens=None):
        if lens is not None:
            m = lens
        else:
            m = torch.arange(8, device=x.device)
        return int(m.max().item())
"""


def test_a_name_either_arm_binds_is_not_the_parameters_data(tmp_path):
    # the caller's None takes the `else`: `m` is a device tensor there, and `.item()` waits
    for call in ("longest(x)", "longest(x, None)"):
        run = lint_package(tmp_path, {"ops.py": EITHER, "model.py": f"""
            import torch
            from pkg.ops import longest

            class Layer(torch.nn.Module):
                def forward(self, x: torch.Tensor):
                    return {call}
        """})
        assert any(path == "pkg/ops.py" and line == 9 for path, line, _ in where(run)) \
            or ("pkg/model.py", 7, "SYN601") in where(run), (call, where(run))


def test_a_name_both_arms_take_from_the_parameter_stays_its_data(tmp_path):
    # both arms keep the parameter's (host) data: what the caller passes decides, and it is a list
    ops = EITHER.replace('m = torch.arange(8, device=x.device)', 'm = lens[1:]')
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": """
        import torch
        from pkg.ops import longest

        class Layer(torch.nn.Module):
            def forward(self, x: torch.Tensor, lens_cpu: torch.Tensor):
                return longest(x, lens_cpu.tolist())
    """})
    assert where(run) == []


# -- a value of two paths passed where a callee tests for a tensor (numberguards.TensorArgs) -----
def test_a_value_of_two_paths_is_no_known_tensor(tmp_path):
    from test_lint_argguard_s16 import _stash

    for arg in ("x[:1] if rows.numel() else [0, 1]", "x[:1] or [0, 1]"):
        assert ("pkg/coord.py", 11, "SYN401") in where(_stash(tmp_path, arg=arg)), arg


def test_a_local_bound_to_a_list_and_to_a_tensor_is_no_known_tensor(tmp_path):
    from test_lint_argguard_s16 import RUNNER, STASH

    runner = RUNNER.replace("        return self.coord._stash(rows, {arg})", """\
        picked = [0, 1]
        if rows.numel():
            picked = x[:1]
        return self.coord._stash(rows, picked)""")
    run = lint_package(tmp_path, {"coord.py": STASH, "runner.py": runner})
    assert ("pkg/coord.py", 11, "SYN401") in where(run)
    # a local every binding of which is a tensor stays one
    runner = runner.replace("picked = [0, 1]", "picked = x[1:]")
    assert where(lint_package(tmp_path, {"coord.py": STASH, "runner.py": runner})) == []


# -- a test of where a value lives is no platform test (comparetests.compare_test) --------------
PLACED = """
    import torch

    def total(lens: torch.Tensor, x: torch.Tensor):
        if lens.device.type != "cpu":
            raise ValueError("lens must be on the host")
        rows = lens.tolist()
        return rows, int(x.sum().item())
"""


def _placed(tmp_path, ops=PLACED, **overrides):
    return lint_package(tmp_path, {"ops.py": ops, "model.py": """
        import torch
        from pkg.ops import total

        class Layer(torch.nn.Module):
            def forward(self, x: torch.Tensor, lens: torch.Tensor):
                return total(lens, x)
    """}, **overrides)


def test_a_tensors_device_test_narrows_the_tensor_not_the_platform(tmp_path):
    # the code after the test runs on a CUDA GPU (with host `lens`): the `.item()` on the
    # caller's device tensor is reported; `lens.tolist()` reads host memory there
    found = where(_placed(tmp_path))
    assert ("pkg/model.py", 7, "SYN601") in found or ("pkg/ops.py", 8, "SYN401") in found, found
    assert not any(path == "pkg/ops.py" and line == 7 for path, line, _ in found), found


def test_the_process_device_test_still_decides_the_platform(tmp_path):
    ops = PLACED.replace("def total(lens: torch.Tensor, x: torch.Tensor):", "def total(lens, x, cfg=None):") \
        .replace("if lens.device.type", "if cfg.device_config.device.type")
    assert "cfg.device_config.device.type" in ops
    assert where(_placed(tmp_path, ops)) == []
    cold = _placed(tmp_path, ops, include_cold=True)
    assert any("device type `cpu`" in (f.cold or "") for f in cold.findings)


def test_a_warm_up_caller_passing_none_leaves_the_per_step_callers_guard(tmp_path):
    # vLLM's `_warm_causal_conv1d_fwd_kernel` calls the kernel with `metadata=None` once at
    # start-up; the layers pass their metadata every step
    run = lint_package(tmp_path, {
        "ops.py": GUARDED,
        "model.py": GUARDED_CALLER + """
            def _warm_chunk_kernel(device):
                x = torch.zeros(4, device=device)
                return chunk_fwd(x, torch.tensor([0, 4], device=device), chunk_indices=None)
        """,
    })
    assert where(run) == []


def test_a_values_device_test_that_dispatches_stays_a_platform_test(tmp_path):
    # vLLM's watermark sampler: `if all_token_ids.device.type == "cpu":` picks the reference
    # implementation the CPU platform runs; a CUDA GPU takes the other arm
    ops = PLACED.replace('''        if lens.device.type != "cpu":
            raise ValueError("lens must be on the host")
        rows = lens.tolist()''', '''        if x.device.type == "cpu":
            return lens, int(x.sum().item())''').replace("return rows, int(x.sum().item())", "return lens, x.sum()")
    assert 'if x.device.type == "cpu":' in ops
    assert where(_placed(tmp_path, ops)) == []


def test_an_assert_on_a_values_device_narrows_it(tmp_path):
    ops = PLACED.replace('''        if lens.device.type != "cpu":
            raise ValueError("lens must be on the host")''', '''        assert lens.device.type == "cpu"''')
    found = where(_placed(tmp_path, ops))
    assert ("pkg/model.py", 7, "SYN601") in found or ("pkg/ops.py", 7, "SYN401") in found, found
    assert not any(path == "pkg/ops.py" and line == 6 for path, line, _ in found), found
