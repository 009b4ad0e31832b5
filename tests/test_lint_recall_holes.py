"""Three recall holes of issue 24, each on a small multi-module package run with the default
per-step scope: a helper named for the host data it returns, an attribute typed only by the
constructor that fills it, a boolean mask that arrives as a parameter."""

from __future__ import annotations

from test_lint_scope import lint_package, where


def test_a_helper_named_for_what_it_returns_is_flagged_at_its_device_callers(tmp_path):
    run = lint_package(tmp_path, {
        "ops.py": """
            def lens_list(cu_seqlens):
                return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
        """,
        "model.py": """
            import torch
            from pkg.ops import lens_list

            class Attention(torch.nn.Module):
                def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor, cu_seqlens_cpu: torch.Tensor):
                    host = lens_list(cu_seqlens_cpu)
                    dev = lens_list(cu_seqlens)
                    return x.split(dev), host
        """,
    })
    assert ("pkg/model.py", 8, "SYN601") in where(run)
    assert ("pkg/model.py", 7, "SYN601") not in where(run)


def test_an_attribute_set_from_a_constructor_is_resolved(tmp_path):
    run = lint_package(tmp_path, {
        "builder.py": """
            import torch

            class AttnMetadataBuilder:
                def __init__(self, device):
                    self.device = device

                def build(self, seq_lens: torch.Tensor):
                    return int(seq_lens.max())
        """,
        "runner.py": """
            import torch
            from pkg.builder import AttnMetadataBuilder

            class ModelRunner:
                def __init__(self, device):
                    self.builder = AttnMetadataBuilder(device)

                def execute_model(self, seq_lens: torch.Tensor):
                    return self.builder.build(seq_lens)
        """,
    })
    assert ("pkg/runner.py", 10, "SYN601") in where(run)


def test_a_boolean_mask_parameter_is_flagged(tmp_path):
    files = {
        "ops.py": """
            import torch

            def prefill_lens(seq_lens: torch.Tensor, is_prefill: torch.Tensor):
                return seq_lens[is_prefill]

            def pick(seq_lens: torch.Tensor, is_prefill: bool):
                return seq_lens[is_prefill]
        """,
        "model.py": """
            import torch
            from pkg.ops import pick, prefill_lens

            class Model(torch.nn.Module):
                def forward(self, seq_lens: torch.Tensor):
                    return prefill_lens(seq_lens, seq_lens > 16), pick(seq_lens, True)
        """,
    }
    run = lint_package(tmp_path, files)
    assert ("pkg/ops.py", 5, "SYN101") in where(run)
    assert not any(line == 8 for _, line, _ in where(run))  # a Python bool indexes without a sync
