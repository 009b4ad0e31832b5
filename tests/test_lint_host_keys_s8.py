"""Host data, seventh pass (session 8): a typed-dict key the parser fills with a tensor it builds
on the host (vLLM MiniCPM-V 4.6: `num_slices_flat = torch.tensor([len(ps) for ps in
pixel_values])`, `Inputs(num_slices=num_slices_flat)`, then `image_input["num_slices"].tolist()`
in another method) is host data wherever the module reads it, like a `keep_on_cpu` field
(field_keys.carried_keys). Each VALID package has an INVALID twin that stays reported.
"""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

MODEL = """
import torch
from pkg.inputs import MultiModalFieldConfig

class Processor:
    def _get_mm_fields_config(self, hf_inputs, kwargs):
        return dict(pixel_values=MultiModalFieldConfig.batched("image"),
                    image_sizes=MultiModalFieldConfig.batched("image", keep_on_cpu=True))

class PixelInputs(dict):
    pass

class Model(torch.nn.Module):
    def _parse(self, **kwargs):
        pixel_values = kwargs.pop("pixel_values")
        BUILD
        return PixelInputs(pixel_values=torch.cat(pixel_values), num_slices=num_slices_flat)

    def _process(self, image_input):
        num_slices = image_input["num_slices"].tolist()
        return image_input["pixel_values"].split(num_slices)

    def embed_multimodal(self, **kwargs):
        image_input = self._parse(**kwargs)
        return self._process(image_input)

    def forward(self, input_ids: torch.Tensor, **kwargs):
        return self.embed_multimodal(**kwargs)
"""

def findings(tmp_path, build: str):
    source = MODEL.replace("BUILD", build)
    global SYNC_LINE
    SYNC_LINE = source.split("\n").index('        num_slices = image_input["num_slices"].tolist()') + 1
    return [(line, code) for at, line, code in where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))
            if at == "pkg/model.py"]


def test_a_key_filled_with_a_host_built_count_is_host_data(tmp_path):
    found = findings(tmp_path, "num_slices_flat = torch.tensor([len(ps) for ps in pixel_values])")
    assert SYNC_LINE not in [line for line, _ in found]


def test_a_key_filled_with_a_host_built_list_name_is_host_data(tmp_path):
    found = findings(tmp_path, "sizes = [len(ps) for ps in pixel_values]\n        "
                               "num_slices_flat = torch.tensor(sizes)")
    assert SYNC_LINE not in [line for line, _ in found]


def test_a_key_built_on_the_device_stays_reported(tmp_path):
    found = findings(tmp_path, "num_slices_flat = torch.tensor([len(ps) for ps in pixel_values], device='cuda')")
    assert SYNC_LINE in [line for line, _ in found]


def test_a_key_copied_from_a_tensor_stays_reported(tmp_path):
    # `torch.tensor(t)` of a tensor keeps its device: no host build
    found = findings(tmp_path, "num_slices_flat = torch.tensor(pixel_values[0])")
    assert SYNC_LINE in [line for line, _ in found]
