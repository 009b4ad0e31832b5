"""Host data, sixth pass (session 8). Each VALID package has an INVALID twin that stays reported.

- A name's container word (`masks_list`) says the value is a Python list, not where its items
  live: the items of a list parameter are host only when a caller passes host memory by another
  fact (a `_cpu` name, a `keep_on_cpu` field), not a `_list` name (SGLang `sana_wm/base.py`
  `_seq_lens_from_masks(neg_masks_list)`, fifth pass's open regression).
- `x.to(get_device())`: a call named for a device returns one, so the copy goes there (SGLang
  `dump_comparator._load_object`), instead of keeping the receiver's host place.
- `processor(image, return_tensors="pt")`: Hugging Face's processors and tokenizers build the
  tensors on the host (SGLang `hunyuan_image3/ar_stage.py` `spatial_shapes`); a `.to(device)` of
  the result still moves them.
- `self.tower(**args)` with `args` a local dict literal of string keys passes those keywords;
  `Tower._from_config(cfg)` makes a `Tower` (vLLM `kanana_v.py` `forward_vision`).
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

HELPERS = """
import torch

def seq_lens_from_masks(masks: list[torch.Tensor | None]) -> list[int]:
    lens = []
    for mask in masks:
        lens.append(int(mask.sum().item()))
    return lens

def peak(x: torch.Tensor) -> float:
    return x.max().item()
"""

LIST_MODEL = """
import torch
from pkg.helpers import seq_lens_from_masks

class Stage(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        embeds, NAME = self.encoder(x)
        return seq_lens_from_masks(NAME)
"""


def lines(found, path: str) -> list[int]:
    return sorted({line for at, line, _ in found if at == path})


def list_findings(tmp_path, name: str):
    model = LIST_MODEL.replace("NAME", name)
    return where(lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": model}))


def test_the_items_of_a_cpu_named_list_are_host_data(tmp_path):
    found = list_findings(tmp_path, "masks_cpu")
    assert lines(found, "pkg/helpers.py") == []
    assert lines(found, "pkg/model.py") == []


def test_a_list_name_says_nothing_of_its_items(tmp_path):
    # `masks_list` is a Python list, whose masks may be CUDA tensors: the sync stays, at the call
    found = list_findings(tmp_path, "masks_list")
    assert lines(found, "pkg/model.py") == [8]


DEVICE_MODEL = """
import numpy as np
import torch
from pkg.helpers import peak

def get_device():
    return torch.device("cuda", torch.cuda.current_device())

def get_cpu_device():
    return torch.device("cpu")

def load(path):
    x = torch.from_numpy(np.load(path))
    return x.to(TARGET())

class Stage(torch.nn.Module):
    def forward(self, path):
        x = load(path)
        return peak(x)
"""


def device_findings(tmp_path, target: str):
    model = DEVICE_MODEL.replace("TARGET", target)
    return where(lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": model}))


def test_a_copy_to_a_call_named_for_the_host_stays_host(tmp_path):
    found = device_findings(tmp_path, "get_cpu_device")
    assert lines(found, "pkg/model.py") == []


def test_a_copy_to_a_call_named_for_a_device_goes_there(tmp_path):
    # the copy itself (a pageable host-to-device copy), its caller, and the sync on the copy
    found = device_findings(tmp_path, "get_device")
    assert lines(found, "pkg/model.py") == [14, 18, 19]


PROCESSOR_MODEL = """
import torch
from pkg.helpers import peak

class Stage(torch.nn.Module):
    def forward(self, image, processor):
        inputs = processor(image, return_tensors="pt")MOVE
        shapes = inputs["spatial_shapes"].squeeze(0)
        h = int(shapes[0].item())
        return h, peak(inputs["pixel_values"])
"""


def processor_findings(tmp_path, move: str):
    model = PROCESSOR_MODEL.replace("MOVE", move)
    return where(lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": model}))


def test_a_processors_tensors_are_host_data(tmp_path):
    found = processor_findings(tmp_path, "")
    assert lines(found, "pkg/model.py") == []


def test_a_processors_tensors_moved_to_the_device_are_flagged(tmp_path):
    found = processor_findings(tmp_path, '.to("cuda")')
    assert lines(found, "pkg/model.py") == [7, 9, 10]  # the copy, and the syncs on its result


# `self.tower(**args)` with `args` a local dict literal of string keys passes those keywords
# (vLLM kanana_v `forward_vision`: `vision_model_args = {"grid_thw": image_metas[...]}`)
TOWER = """
import torch

class Tower(torch.nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
        sizes = grid_thw.prod(-1).tolist()
        return x.split(sizes)
"""

KEYED_MODEL = """
import torch
from pkg.tower import Tower

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = Tower()

    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
        args = {"x": x, "grid_thw": GRID}
        CHANGE
        return self.tower(**args)
"""


def keyed_findings(tmp_path, grid: str, change: str = "pass"):
    model = KEYED_MODEL.replace("GRID", grid).replace("CHANGE", change)
    return where(lint_package(tmp_path, {"tower.py": TOWER, "model.py": model}))


def test_a_local_dict_literal_passes_its_host_values_as_keywords(tmp_path):
    found = keyed_findings(tmp_path, "grid_thw.cpu()")
    assert lines(found, "pkg/tower.py") == []
    assert lines(found, "pkg/model.py") == [11]  # the `.cpu()` itself


def test_a_local_dict_literal_passes_its_device_values_as_keywords(tmp_path):
    found = keyed_findings(tmp_path, "grid_thw.cuda()")
    assert lines(found, "pkg/tower.py") == [6]


def test_a_dict_changed_after_it_is_built_passes_anything(tmp_path):
    found = keyed_findings(tmp_path, "grid_thw.cpu()", 'args["grid_thw"] = grid_thw')
    assert lines(found, "pkg/tower.py") == [6]


def test_a_tower_made_by_from_config_is_typed_by_its_class(tmp_path):
    # `self.vision_model = Tower._from_config(cfg)` (Hugging Face's private alternative
    # constructor) types the field, so the `**args` call reaches `Tower.forward`
    tower = TOWER + """
    @classmethod
    def _from_config(cls, config):
        return cls()
"""
    for grid, expected in (("grid_thw.cpu()", []), ("grid_thw.cuda()", [6])):
        model = KEYED_MODEL.replace("GRID", grid).replace("CHANGE", "pass").replace(
            "self.tower = Tower()", "self.tower = Tower._from_config(None)")
        found = where(lint_package(tmp_path, {"tower.py": tower, "model.py": model}))
        assert lines(found, "pkg/tower.py") == expected, grid


# the rows of a tensor parameter zipped with another value, unpacked by an assignment, are still
# what the callers pass (vLLM kanana_v `DynamicCAbstractor.forward`: `for _e, _grid_thw in
# zip(split_embeds, grid_thw): T, H, W = _grid_thw; assert T == 1`)
PROJECTOR = """
import torch

class Projector(torch.nn.Module):
    def forward(self, embeds: torch.Tensor, grid_thw: torch.Tensor):
        out = []
        for e, row in zip(embeds, grid_thw):
            t, h, w = row
            assert t == 1
            out.append(e)
        return out
"""

PROJECTOR_MODEL = """
import torch
from pkg.projector import Projector

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.projector = Projector()

    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
        return self.projector(x, grid_thw=GRID)
"""


def projector_findings(tmp_path, grid: str):
    model = PROJECTOR_MODEL.replace("GRID", grid)
    return where(lint_package(tmp_path, {"projector.py": PROJECTOR, "model.py": model}))


def test_zipped_rows_of_a_host_parameter_are_host_data(tmp_path):
    assert lines(projector_findings(tmp_path, "grid_thw.cpu()"), "pkg/projector.py") == []


def test_zipped_rows_of_a_device_parameter_are_flagged(tmp_path):
    assert lines(projector_findings(tmp_path, "grid_thw.cuda()"), "pkg/projector.py") == [9]
