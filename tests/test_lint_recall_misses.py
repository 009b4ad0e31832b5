"""The misses of issue 25's recall corpus (docs/lint.md, "2026-11-27 (session 2)"), one general
cause each, on a small package run with the default per-step scope."""

from __future__ import annotations

from test_lint_scope import lint_package, where


def test_a_memo_keyed_by_an_arguments_identity_runs_for_every_new_object(tmp_path):
    # SGLang 0.5.20 KDA prefill: `key = id(cu_seqlens)`; serving passes a fresh tensor every
    # step, so the memo misses and its host-to-device copy runs every step. A memo keyed by
    # configuration values stays cold.
    run = lint_package(tmp_path, {
        "ops.py": """
            import torch

            _repack_cache = {}

            def repack_info(cu_seqlens, device):
                key = id(cu_seqlens)
                cached = _repack_cache.get(key)
                if cached is not None:
                    return cached
                new_cu = [0, 1, 2]
                new_cu_tensor = torch.tensor(new_cu, dtype=cu_seqlens.dtype, device=device)
                _repack_cache[key] = new_cu_tensor
                return new_cu_tensor

            def config_info(block_size, device):
                key = (block_size, id)
                t = torch.tensor([block_size], device=device)
                _repack_cache[key] = t
                return t
        """,
        "model.py": """
            import torch
            from pkg.ops import config_info, repack_info

            class Model(torch.nn.Module):
                def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor):
                    return repack_info(cu_seqlens, x.device), config_info(64, x.device)
        """,
    })
    found = [f for f in run.findings if f.site.path == "pkg/model.py"]
    assert [(f.site.line, f.code) for f in found] == [(7, "SYN602")]
    assert "pkg/ops.py:12" in found[0].message  # the chain ends at the copy, not at config_info's


def test_nonzero_as_tuple_names_a_tensor_even_when_iteration_guessed_a_python_value(tmp_path):
    # SGLang 0.5.20 sampler.py: `for _, (processor, batch_mask) in info.custom_logit_processor
    # .items(): batch_mask.nonzero(as_tuple=True)`. The values of `.items()` are taken for Python
    # values, but only torch's `nonzero` takes `as_tuple`.
    run = lint_package(tmp_path, {
        "sampler.py": """
            import torch

            def apply_custom_logit_processor(logits: torch.Tensor, info):
                for _, (processor, batch_mask) in info.custom_logit_processor.items():
                    batch_indices = batch_mask.nonzero(as_tuple=True)[0]
                    logits[batch_indices] = processor(logits[batch_indices])
                for _, sizes in info.sizes.items():
                    first = sizes.nonzero()
                return first

            class Sampler(torch.nn.Module):
                def forward(self, logits: torch.Tensor, sampling_info):
                    return apply_custom_logit_processor(logits, sampling_info)
        """,
    })
    assert ("pkg/sampler.py", 6, "SYN105") in where(run)
    assert ("pkg/sampler.py", 9, "SYN105") not in where(run)  # numpy's nonzero(): no evidence


def test_a_field_made_by_an_alternative_constructor_has_that_class(tmp_path):
    # SGLang 0.5.22: `self.dllm_algorithm = DllmAlgorithm.from_server_args(args)` (imported inside
    # the method), then `self.dllm_algorithm.run(...)` every step; `run` is too common a name to
    # dispatch by name, so only the field's class reaches it.
    run = lint_package(tmp_path, {
        "algo.py": """
            import torch

            class DllmAlgorithm:
                @staticmethod
                def from_server_args(args):
                    return DllmAlgorithm()

                def run(self, input_ids: torch.Tensor):
                    return self._block_starts(input_ids)

                def _block_starts(self, input_ids: torch.Tensor):
                    return (input_ids != 0).sum(dim=1).tolist()
        """,
        "worker.py": """
            import torch

            class TpWorker:
                def __init__(self, args):
                    from pkg.algo import DllmAlgorithm

                    self.dllm_algorithm = DllmAlgorithm.from_server_args(args)

                def forward_batch_generation(self, input_ids: torch.Tensor):
                    return self.dllm_algorithm.run(input_ids)
        """,
    })
    assert ("pkg/algo.py", 13, "SYN202") in where(run)


def test_torch_cat_of_a_list_named_list_lives_where_its_items_are(tmp_path):
    # SGLang 0.5.20 logits_processor.py: `pt, pruned_states_list = 0, []` (the `_list` word reads
    # as host data), `pruned_states = torch.cat(pruned_states_list)`, then index tensors are
    # copied `.to(pruned_states.device, non_blocking=True)`. Taking the cat for host memory made
    # those indices host data, and the masks built from them in the logprob processor
    # (`torch.nonzero(chunk_mask)`, `if chunk_sample_mask.any():`) were dropped.
    run = lint_package(tmp_path, {
        "proc.py": """
            import torch

            class InputLogprobProcessor:
                def forward(self, sample_indices: torch.Tensor, input_indices: torch.Tensor):
                    for i in range(3):
                        chunk_mask = (input_indices >= i) & (input_indices < i + 1)
                        mask_indices = torch.nonzero(chunk_mask, as_tuple=True)[0]
                        chunk_sample_mask = (sample_indices >= i) & (sample_indices < i + 1)
                        if chunk_sample_mask.any():
                            mask_indices = mask_indices + 1
                    return mask_indices
        """,
        "logits.py": """
            import torch
            from pkg.proc import InputLogprobProcessor

            class LogitsProcessor(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.input_logprob_processor = InputLogprobProcessor()

                def forward(self, hidden_states: torch.Tensor, lens_cpu):
                    sample_indices, input_indices = self._pruned(hidden_states, lens_cpu)
                    return self.input_logprob_processor.forward(sample_indices=sample_indices, input_indices=input_indices)

                def _pruned(self, hidden_states: torch.Tensor, lens_cpu):
                    sample_indices, input_indices = [], []
                    pt, pruned_states_list = 0, []
                    for a, b in lens_cpu:
                        pruned_states_list.append(hidden_states[a:b])
                        sample_indices.append(b)
                        input_indices.extend([a, b])
                    pruned_states = torch.cat(pruned_states_list)
                    sample_indices = torch.tensor(sample_indices, pin_memory=True).to(pruned_states.device, non_blocking=True)
                    input_indices = torch.tensor(input_indices, pin_memory=True).to(pruned_states.device, non_blocking=True)
                    return sample_indices, input_indices
        """,
    })
    found = where(run)
    assert ("pkg/proc.py", 8, "SYN105") in found
    assert ("pkg/proc.py", 10, "SYN206") in found
