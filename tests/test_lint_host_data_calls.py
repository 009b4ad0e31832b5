"""Host data handed through calls that the linter used to take for device data (issue 24, class
4; branch h-host2; docs/lint.md, "2026-11-27 (session 4): host data"): a torch function on a
parameter (`torch.sum(ent)`), the result of the object's own method (`self.get_mapped_blocks(
np.asarray(ids)).tolist()`), an `if` arm that copies a parameter to the device and returns, the
pieces of a tensor's `.split()`, and a method called through a `type[Base]` field whose override
syncs. Each VALID package has an INVALID twin where the value is on the device, still reported."""

from __future__ import annotations

from test_lint_host_data import lint_package
from test_lint_host_facts import where


def test_a_torch_function_on_a_parameter_is_the_callers_data(tmp_path):
    # vLLM deep_gemm_utils.expert_num_tokens_round_up_and_sum: its only caller passes
    # `expert_tokens_meta.expert_num_tokens_cpu`; `torch.sum(ent)` is on `ent`'s device
    source = """
        import torch

        class Meta:
            expert_num_tokens_cpu: torch.Tensor
            expert_num_tokens: torch.Tensor

        def round_up_and_sum(expert_num_tokens: torch.Tensor, alignment: int) -> int:
            ent = (expert_num_tokens.to(torch.int64) + (alignment - 1)) // alignment * alignment
            return torch.sum(ent).item()

        class Experts(torch.nn.Module):
            def forward(self, x, meta: Meta):
                return round_up_and_sum(meta.{field}, alignment=4)
    """
    assert where(lint_package(tmp_path / "valid", {"m.py": source.format(field="expert_num_tokens_cpu")})) == []
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(field="expert_num_tokens")}))
    assert found == [("pkg/m.py", 10, "SYN201"), ("pkg/m.py", 14, "SYN601")]


def test_the_result_of_the_objects_own_method_is_that_methods_return(tmp_path):
    # vLLM nixl base_worker: `self.get_mapped_blocks(np.asarray(ids), r).tolist()` reads a numpy
    # array the method builds; it was read as a sync on `self`
    source = """
        import numpy as np
        import torch

        class Worker:
            def get_mapped_blocks(self, block_ids, ratio: int):
                start_ids = block_ids * ratio
                return {made}

            def map_ids(self, groups, ratio: int):
                out = []
                for group in groups:
                    out.append(self.get_mapped_blocks(np.asarray(group), ratio).tolist())
                return out

        class Model(torch.nn.Module):
            def forward(self, x):
                self.worker.map_ids([[1]], 2)
                return x
    """
    host = "(start_ids[:, None] + np.arange(ratio)[None, :]).flatten()"
    assert where(lint_package(tmp_path / "valid", {"m.py": source.format(made=host)})) == []
    device = "torch.as_tensor(start_ids, device='cuda')"
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(made=device)}))
    assert ("pkg/m.py", 13, "SYN202") in found


def test_an_arm_that_copies_to_the_device_and_returns_leaves_the_parameter_after_it(tmp_path):
    # vLLM fmha_sm100/api.py `_fmha_sm100_plan`: `if prefill: kv = kv.to(device); return ...`,
    # then `kv.tolist()` on what the caller passed (`kv_lens_cpu[lo:hi]`, indexer_msa.py:207)
    api = """
        import torch

        def plan(kv: torch.Tensor, mode: int, device=None):
            if mode > 0:
                kv = kv.to(device)
                {end}
            return kv.tolist()
    """
    caller = """
        import torch
        from pkg.api import plan

        class Builder(torch.nn.Module):
            def forward(self, seq_lens: torch.Tensor, n: int):
                kv_lens_cpu = seq_lens[:n].cpu()
                return plan(kv_lens_cpu[1:], n)
    """
    valid = lint_package(tmp_path / "valid", {"api.py": api.format(end="return kv"), "b.py": caller})
    assert [f for f in where(valid) if f[0] == "pkg/api.py"] == []
    # the arm falls through: `kv` may be the device copy at `.tolist()`
    invalid = lint_package(tmp_path / "invalid", {"api.py": api.format(end="kv = kv + 1"), "b.py": caller})
    assert ("pkg/api.py", 8, "SYN202") in where(invalid)


def test_the_pieces_of_a_tensors_split_are_where_the_tensor_is(tmp_path):
    # vLLM deepseek_ocr `_pixel_values_to_embedding`: `images_crop.split(sizes)` then
    # `self._encode_local_features(images_crop[j])`, which `.item()`s a sum of it: the crops
    # are pixel data on the device, so the pieces are too (not Python values like str.split's)
    source = """
        import torch

        class M(torch.nn.Module):
            def _local(self, patches: torch.Tensor):
                if torch.sum(patches).item() == 0:
                    return None
                return patches

            def _embed(self, images_crop: torch.Tensor, sizes_cpu: torch.Tensor):
                images_crop = images_crop.split(sizes_cpu.tolist())
                out = []
                for j in range(len(images_crop)):
                    out.append(self._local(images_crop[j]))
                return out

            def forward(self, x):
                return self._embed({arg}, torch.ones(3))
    """
    valid = where(lint_package(tmp_path / "valid", {"m.py": source.format(arg="x.cpu()")}))
    assert [f for f in valid if f[2] != "SYN203"] == []  # the `.cpu()` itself is reported
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(arg="x")}))
    assert ("pkg/m.py", 6, "SYN201") in found


def test_a_method_called_through_a_type_field_feeds_the_overrides(tmp_path):
    # vLLM EPLB: `self.policy: type[AbstractEplbPolicy]`, `self.policy.rebalance_experts(
    # load.cpu(), ..., map.cpu())`; DefaultEplbPolicy's override `.cpu()`s its arguments again
    policy = """
        import torch

        class AbstractPolicy:
            @classmethod
            def rebalance_experts(cls, weight: torch.Tensor, n: int):
                raise NotImplementedError

        class DefaultPolicy(AbstractPolicy):
            @classmethod
            def rebalance_experts(cls, weight: torch.Tensor, n: int):
                return weight.float().cpu().numpy()
    """
    state = """
        import torch
        from pkg.policy import AbstractPolicy, DefaultPolicy

        class State:
            def __init__(self, device):
                self.policy: type[AbstractPolicy] = DefaultPolicy
                self.window = torch.zeros(4, device=device)

            def step(self):
                return self.policy.rebalance_experts(self.window{copy}, 4)
    """
    valid = lint_package(tmp_path / "valid", {"policy.py": policy, "state.py": state.format(copy=".cpu()")},
                         include_cold=True)
    assert [f for f in where(valid) if f[0] == "pkg/policy.py"] == []
    invalid = lint_package(tmp_path / "invalid", {"policy.py": policy, "state.py": state.format(copy="")},
                           include_cold=True)
    assert ("pkg/policy.py", 12, "SYN203") in where(invalid)


def test_a_super_call_feeds_only_the_base_method(tmp_path):
    # SGLang HunyuanImage3VisionModel(Siglip2Model).forward calls `super().forward(...)` without
    # its own `attention_mask`: that call runs the base method, it is no caller of the override
    # (whose `pixel_values[mask]` with a device mask is a sync, as long as no resolved call
    # says otherwise)
    base = """
        import torch

        class Base(torch.nn.Module):
            def forward(self, pixel_values, attention_mask=None):
                return pixel_values
    """
    model = """
        import torch
        from pkg.base import Base

        class Sub(Base):
            def forward(self, pixel_values, attention_mask):
                mask = attention_mask.bool()
                return super().forward(pixel_values[mask])

        class Runner(torch.nn.Module):
            def forward(self, tower, x, m):  # the tower's caller, which no call resolves to it
                return tower(x.cuda(), m.cuda())
    """
    found = where(lint_package(tmp_path / "pkg", {"base.py": base, "m.py": model}, include_cold=True))
    assert ("pkg/m.py", 8, "SYN101") in found


def test_a_torch_function_on_a_list_parameter_stays_a_sync(tmp_path):
    # `torch.cat(parts)`: a caller passing a list literal passes a Python value, which says
    # nothing of where the tensors in it live, so the helper's sync is not the callers' to clear
    source = """
        import torch

        def total(parts):
            return torch.cat(parts).sum().item()

        class M(torch.nn.Module):
            def forward(self, x):
                return total([x, x + 1])
    """
    found = where(lint_package(tmp_path / "pkg", {"m.py": source}))
    assert ("pkg/m.py", 5, "SYN201") in found
