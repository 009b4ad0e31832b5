"""Host data through a helper's return, where the helper is reached through a submodule field
(`self.audio_tower._get_feat_extract_output_lengths(mask.sum(-1))`), a class of the module
(`Encoder._compute_downsampled_length(seqlens)`) or a torch op on its result (`torch.any(lens
<= 0).item()`): the helper's return summary decides, as for `helper(x)` and `self.helper(x)`
(issue 24 class 4; vLLM 0.33.0 funaudiochat.py:947, moss_audio.py:1692). Each VALID source has
an INVALID twin that passes device data and stays reported."""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

HEAD = """
import torch
from pkg.inputs import MultiModalFieldConfig

class Processor:
    def _get_mm_fields_config(self, hf_inputs):
        return {"speech_mask": MultiModalFieldConfig.batched("audio", keep_on_cpu=True)}
"""

TOWER = """
class Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.group_size = 5

    def output_lengths(self, input_lengths: torch.Tensor):
        out = (input_lengths + self.group_size - 1) // self.group_size
        return input_lengths, out

    @staticmethod
    def downsampled(lengths: torch.Tensor) -> torch.Tensor:
        def conv_out_len(length: torch.Tensor) -> torch.Tensor:
            return (length - 1) // 2 + 1
        return conv_out_len(conv_out_len(lengths))
"""

# `{source}`: what the model hands the helper (the host-only field, or a device tensor)
SUBMODULE = """
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.audio_tower = Tower()

    def embed_multimodal(self, **kwargs):
        speech_mask = kwargs.pop("speech_mask")
        _, lengths = self.audio_tower.output_lengths({source}.sum(-1))
        return lengths.tolist()
"""

CLASS_CALL = """
class Model(torch.nn.Module):
    def embed_multimodal(self, **kwargs):
        speech_mask = kwargs.pop("speech_mask")
        token_lens = Tower.downsampled({source})
        if torch.any(token_lens <= 0).item():
            raise ValueError("too short")
        return token_lens
"""

DEVICE = "speech_mask.cuda()"


def lint(tmp_path, body: str, source: str):
    files = {"inputs.py": INPUTS, "model.py": HEAD + TOWER + body.format(source=source)}
    return [code for _, _, code in where(lint_package(tmp_path, files))]


def test_a_submodule_method_returning_host_field_data_is_no_sync(tmp_path):
    assert lint(tmp_path, SUBMODULE, "speech_mask") == []


def test_a_submodule_method_returning_device_data_is_flagged(tmp_path):
    assert "SYN202" in lint(tmp_path, SUBMODULE, f"({DEVICE})")


def test_a_class_qualified_method_returning_host_field_data_is_no_sync(tmp_path):
    assert lint(tmp_path, CLASS_CALL, "speech_mask") == []


def test_a_class_qualified_method_returning_device_data_is_flagged(tmp_path):
    assert "SYN201" in lint(tmp_path, CLASS_CALL, DEVICE)


def test_a_field_not_kept_on_the_cpu_stays_device_data(tmp_path):
    # vLLM moves every field not declared keep_on_cpu to the device
    files = {"inputs.py": INPUTS,
             "model.py": HEAD.replace(", keep_on_cpu=True", "") + TOWER + SUBMODULE.format(source="speech_mask")}
    assert [code for _, _, code in where(lint_package(tmp_path, files))] == ["SYN202"]


JOINED = """
import torch

class Prefetcher:
    @staticmethod
    def pages_for_rows(row_ids: torch.Tensor, row_bytes: int) -> list[int]:
        start = row_ids.to(torch.int64) * row_bytes
        end = start + (row_bytes - 1)
        return torch.cat([start >> 12, end >> 12]).unique(sorted=True).tolist()

    def forward(self, flat_ids: torch.Tensor):
        row_ids = flat_ids.detach(){copy}
        return self.pages_for_rows(row_ids, 4)
"""


def test_a_literal_list_joined_by_torch_is_where_its_tensors_are(tmp_path):
    # SGLang 0.5.23 qwen4_exp_ple_table.py: the only caller passes `flat_ids.detach().cpu()`;
    # the `.cpu()` is the sync, not the `.tolist()` of the joined host pages
    found = where(lint_package(tmp_path, {"m.py": JOINED.format(copy=".cpu()")}))
    assert [code for _, _, code in found] == ["SYN203"]


def test_a_literal_list_of_device_tensors_joined_by_torch_is_flagged(tmp_path):
    found = where(lint_package(tmp_path, {"m.py": JOINED.format(copy="")}))
    assert ("pkg/m.py", 9, "SYN202") in found


GATHERED = """
import torch

def all_heads(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(4)]
    return torch.cat(parts, dim=2)

class Check:
    def compare(self, q: torch.Tensor, out: torch.Tensor):
        full = all_heads(q)
        return int(torch.equal(full, out))

    def forward(self, x):
        return self.compare(x.cuda(), x.cuda())
"""


def test_a_helper_joining_a_list_it_built_returns_a_tensor_not_a_python_value(tmp_path):
    # SGLang 0.5.23 cosmos3_sim_auto.py `_all_heads`: `torch.cat(parts)` of a list comprehension
    # is a tensor; read as a Python value, `torch.equal(mine, out)` on its result looked host
    assert ("pkg/m.py", 11, "SYN205") in where(lint_package(tmp_path, {"m.py": GATHERED}))


ITEM_OF_DICT = """
import torch
from typing import Dict

class Offload:
    def __init__(self, model):
        self.model = model
        self._named_parameters: Dict[str, torch.nn.Parameter] = {}

    @staticmethod
    def _to_local_tensor(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def get_target_with_name(self, name: str) -> torch.Tensor:
        return self._named_parameters[name]

    def forward(self, name):
        target = self.get_target_with_name(name)
        target_local = self._to_local_tensor(target)
        return target_local.cpu()
"""


def test_an_item_of_a_dict_field_is_no_python_value(tmp_path):
    # SGLang 0.5.23 layerwise_offload.py `sync_layer_to_cpu`: a parameter looked up in a
    # `Dict[str, Parameter]` field and copied to the host is a real device->host copy
    assert ("pkg/m.py", 20, "SYN203") in where(lint_package(tmp_path, {"m.py": ITEM_OF_DICT}, include_cold=True))
