"""Guards a caller's arguments decide, third pass (issue 24, class 5): the arm of a conditional
expression that may sync is a guard block like an `if` body (exprguards.ifexp_blocks, read by
constargs.py and stepargs.py). SGLang's `get_token_ids_logprobs_raw` collects
`vals.append(row if no_copy_to_cpu else row.tolist())`; its per-step callers pass
`no_copy_to_cpu=True`. Each VALID package is left out of the default report (cold, with its
reason); each INVALID twin is still reported."""

from __future__ import annotations

from test_lint_guards import cold_reasons, lines
from test_lint_scope import lint_package

COLLECT = """
    import torch

    def collect(logprobs: torch.Tensor, ids: list[int], no_copy: bool = False):
        vals = []
        for i in ids:
            row = logprobs[i]
            vals.append(row if no_copy else row.tolist())
        return vals
"""

STEP = """
    import torch
    from pkg.ops import collect

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, ids: list[int]):
            return collect(x, ids, no_copy=True)
"""


def test_an_arm_no_per_step_call_takes_is_cold(tmp_path):
    run = lint_package(tmp_path, {"ops.py": COLLECT, "model.py": STEP})
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []
    assert 8 in cold_reasons(tmp_path)


def test_an_arm_a_per_step_call_takes_still_syncs(tmp_path):
    run = lint_package(tmp_path, {"ops.py": COLLECT, "model.py": STEP.replace("no_copy=True", "no_copy=False")})
    assert lines(run) == [8]


def test_an_arm_a_caller_that_leaves_the_default_takes_still_syncs(tmp_path):
    run = lint_package(tmp_path, {"ops.py": COLLECT, "model.py": STEP.replace(", no_copy=True", "")})
    assert lines(run) == [8]


# the same statement shape, but something else on the arm's line may sync: no guard
def test_an_arm_sharing_its_line_with_a_call_that_syncs_is_no_guard(tmp_path):
    ops = COLLECT.replace("vals.append(row if no_copy else row.tolist())",
                          "vals.append(row.sum().item() if no_copy else row.tolist())")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": STEP})
    assert lines(run) == [8]


def test_an_arm_passed_to_a_call_that_is_no_list_method_is_no_guard(tmp_path):
    ops = COLLECT.replace("vals.append(", "torch.save(")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": STEP})
    assert lines(run) == [8]


def test_a_test_with_a_call_of_its_own_is_no_guard(tmp_path):
    ops = COLLECT.replace("row if no_copy else", "row if no_copy or bool(row.any()) else")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": STEP})
    assert lines(run) == [8]


# through a wrapper that passes the flag on, and a per-request caller left alone
WRAPPER = """
    import torch
    from pkg.ops import collect

    def top(logprobs: torch.Tensor, ids: list[int], no_copy: bool = False):
        return collect(logprobs, ids, no_copy=no_copy)

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, ids: list[int]):
            return top(x, ids, no_copy=True)
"""


def test_an_arm_behind_a_flag_a_wrapper_passes_on_is_ruled_out_for_its_caller(tmp_path):
    run = lint_package(tmp_path, {"ops.py": COLLECT, "model.py": WRAPPER})
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []


def test_an_arm_behind_a_flag_a_wrapper_passes_on_stays_when_its_caller_turns_it_off(tmp_path):
    run = lint_package(tmp_path, {"ops.py": COLLECT, "model.py": WRAPPER.replace("no_copy=True)", "no_copy=False)")})
    assert lines(run) == [8]
    assert lines(run, "pkg/model.py") == [6, 10]
