"""Host-only fields, session 11 (branch `v-keepcpu`): two places where a `keep_on_cpu=True` field
still read as device data.

* `a or b` is one of its operands, as it is: `is_tiled = crop[0] > 1 or crop[1] > 1` on a
  parameter is that parameter's data, so `if is_tiled:` syncs only where a caller passes device
  data (vLLM DeepSeek-OCR, fed the rows of its host-only `images_spatial_crop`).
* a refill built on the device of the field it refills (`grid_device = source_grid.device if
  isinstance(source_grid, torch.Tensor) else None`, then `torch.tensor(rows, device=grid_device)`
  under the field's key) stays where the field is: it does not make the field device data in
  the module (vLLM Kimi-K3's encoder CUDA-graph item selection). A refill built on another
  tensor's device (`pixel_values.device`) still does.
* a local bound once to the device of host data (`grid_device = source_grid.device if ... else
  None`) points at the host: `torch.tensor(rows, device=grid_device)` copies nothing (SYN401).

Each VALID case has an INVALID twin that stays reported.
"""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

OCR = """
import torch
from pkg.inputs import MultiModalFieldConfig

class Processor:
    def _get_mm_fields_config(self, hf_inputs, kwargs):
        return dict(crops=MultiModalFieldConfig.batched("image"KEEP))

class Model(torch.nn.Module):
    def _count(self, crop: torch.Tensor | None = None) -> int:
        is_tiled = False
        if crop is not None:
            is_tiled = TEST
        n = 1
        if is_tiled:
            n += 4
        return n

    def item_specs(self, mm_kwargs):
        specs = []
        for crop in mm_kwargs["crops"]:
            specs.append(self._count(crop))
        return specs

    def forward(self, input_ids: torch.Tensor, mm_kwargs):
        return self.item_specs(mm_kwargs)
"""


def ocr_findings(tmp_path, keep: bool, test: str = "crop[0] > 1 or crop[1] > 1"):
    source = OCR.replace("KEEP", ", keep_on_cpu=True" if keep else "").replace("TEST", test)
    line = source.split("\n").index("        if is_tiled:") + 1
    found = [ln for at, ln, _ in where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))
             if at == "pkg/model.py"]
    return line, found


def test_an_or_of_a_host_parameters_tests_is_host_data(tmp_path):
    line, found = ocr_findings(tmp_path, keep=True)
    assert line not in found


def test_an_or_of_a_device_parameters_tests_stays_reported(tmp_path):
    line, found = ocr_findings(tmp_path, keep=False)
    assert line in found


def test_an_or_with_another_tensor_stays_reported(tmp_path):
    # `crop[0] > 1 or flags.any()`: the value may be the other operand, a tensor of unknown device
    line, found = ocr_findings(tmp_path, keep=True, test="crop[0] > 1 or torch.ones(2, device='cuda')[0] > 1")
    assert line in found


PROCESSOR = """
from pkg.inputs import MultiModalFieldConfig

class Processor:
    def _get_mm_fields_config(self, hf_inputs, kwargs):
        return dict(pixel_values=MultiModalFieldConfig.batched("image"),
                    grid_thws=MultiModalFieldConfig.batched("image", keep_on_cpu=True))
"""

TOWER = """
import torch

def tower_forward(tower, pixel_values, grid_thw):
    sizes = grid_thw.tolist()
    return tower(pixel_values, sizes)
"""

MODEL = """
import torch
from pkg.processor import Processor
from pkg.tower import tower_forward

@REGISTRY.register_processor(Processor)
class Model(torch.nn.Module):
    def select_items(self, mm_kwargs, indices: list[int]):
        rows = mm_kwargs["grid_thws"].tolist()
        pixel_values = mm_kwargs["pixel_values"]
        source_grid = mm_kwargs["grid_thws"]
        grid_device = DEVICE
        selected = torch.tensor([rows[i] for i in indices], dtype=torch.long, device=grid_device)
        return {"pixel_values": pixel_values[:1], "grid_thws": selected}

    def embed_multimodal(self, **kwargs):
        grid_thws = kwargs.pop("grid_thws", None)
        return tower_forward(self.vision_tower, kwargs["pixel_values"], grid_thws)

    def forward(self, input_ids: torch.Tensor, mm_kwargs, indices: list[int]):
        self.select_items(mm_kwargs, indices)
        return self.embed_multimodal(**mm_kwargs)
"""


def refill_findings(tmp_path, device: str):
    source = MODEL.replace("DEVICE", device)
    files = {"inputs.py": INPUTS, "processor.py": PROCESSOR, "tower.py": TOWER, "model.py": source}
    line = source.split("\n").index("        return tower_forward(self.vision_tower, kwargs[\"pixel_values\"], grid_thws)") + 1
    found = where(lint_package(tmp_path, files))
    return line, [ln for at, ln, _ in found if at == "pkg/model.py"], [ln for at, ln, _ in found if at == "pkg/tower.py"]


def test_a_refill_on_the_fields_own_device_keeps_the_field_host(tmp_path):
    line, model, tower = refill_findings(
        tmp_path, "source_grid.device if isinstance(source_grid, torch.Tensor) else None")
    assert line not in model
    assert tower == []


def test_a_refill_on_the_field_read_directly_keeps_the_field_host(tmp_path):
    line, model, tower = refill_findings(tmp_path, 'mm_kwargs["grid_thws"].device')
    assert line not in model


def test_a_refill_on_another_tensors_device_stays_reported(tmp_path):
    line, model, tower = refill_findings(tmp_path, "pixel_values.device")
    assert line in model or tower


def test_a_refill_on_a_device_only_in_one_arm_stays_reported(tmp_path):
    line, model, tower = refill_findings(
        tmp_path, "source_grid.device if isinstance(source_grid, torch.Tensor) else pixel_values.device")
    assert line in model or tower


COPY = """
import torch
from pkg.inputs import MultiModalFieldConfig

class Processor:
    def _get_mm_fields_config(self, hf_inputs, kwargs):
        return dict(grid_thws=MultiModalFieldConfig.batched("image", keep_on_cpu=True))

class Model(torch.nn.Module):
    def forward(self, input_ids: torch.Tensor, mm_kwargs, rows: list[list[int]]):
        source_grid = mm_kwargs["grid_thws"]
        grid_device = DEVICE
        MORE
        return torch.tensor(rows, dtype=torch.long, device=grid_device)
"""


def copy_findings(tmp_path, device: str, more: str = "pass"):
    source = COPY.replace("DEVICE", device).replace("MORE", more)
    line = source.split("\n").index("        return torch.tensor(rows, dtype=torch.long, device=grid_device)") + 1
    found = where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))
    return line, [(ln, code) for at, ln, code in found if at == "pkg/model.py"]


def test_a_tensor_built_on_a_host_fields_device_copies_nothing(tmp_path):
    line, found = copy_findings(tmp_path, "source_grid.device if isinstance(source_grid, torch.Tensor) else None")
    assert (line, "SYN401") not in found


def test_a_tensor_built_on_another_tensors_device_stays_reported(tmp_path):
    line, found = copy_findings(tmp_path, "input_ids.device")
    assert (line, "SYN401") in found


def test_a_device_local_bound_twice_stays_reported(tmp_path):
    line, found = copy_findings(tmp_path, "source_grid.device", more="if input_ids.numel() > 4:\n"
                                "            grid_device = input_ids.device")
    assert (line, "SYN401") in found
