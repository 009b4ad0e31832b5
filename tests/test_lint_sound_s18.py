"""Soundness faults found on session 17's main, each fixed with a package that reached a real
sync and was not reported (INVALID: reported now) beside one the rule still rules out (VALID)."""

from __future__ import annotations

from test_lint_kernel_names_s8 import BATCH, RELAY, lines
from test_lint_scope import GUARDED, lint_package, where


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
