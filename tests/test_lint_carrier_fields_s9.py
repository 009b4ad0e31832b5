"""Carrier objects' extra attributes (session 9). Each VALID package has an INVALID twin that
stays reported.

A class that serves undeclared attributes from a mapping (`__getattr__`, filled by
`item.set("grid", value)`) carries a processor's outputs to a model. When the tree moves the
objects' fields to the device one by one, in place (`item.payload = item.payload.to(device)`),
the objects arrive with host data: an attribute nobody moves, and that no code fills with device
data, is host where a model reads it (`torch.cat([item.grid for item in items])`,
`torch.as_tensor(getattr(item, "grid", None))`). SGLang's multimodal items: only `feature` is
moved to the GPU, the grids a model reads are the processor's CPU tensors.
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

ITEMS = """
from typing import List

class Bundle:
    kind: str
    payload: object = None
    extras: dict = None

    def __getattr__(self, name):
        if name in self.extras:
            return self.extras[name]
        raise AttributeError(name)

    def set(self, key, value):
        self.extras[key] = value


class Inputs:
    items: List[Bundle]
"""

BUILD = """
from pkg.items import Bundle

def make(outputs: dict):
    bundle = Bundle(kind="image", payload=outputs["pixels"])
    bundle.set("grid", outputs.get("grid"))
    return bundle
"""

SCHEDULE = """
import torch
from typing import List
from pkg.items import Bundle

def upload(items: List[Bundle], device):
    for item in items:
        if isinstance(item.payload, torch.Tensor):
            item.payload = item.payload.MOVE
"""

MODEL = """
import torch
from typing import List
from pkg.items import Bundle

class Tower(torch.nn.Module):
    def forward(self, x: torch.Tensor, grid: torch.Tensor):
        sizes = grid.prod(-1).tolist()
        return x.split(sizes)

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = Tower()

    def encode(self, items: List[Bundle]):
        grid = torch.cat([item.grid for item in items])
        x = torch.cat([item.payload for item in items])
        return self.tower(x, grid=grid)

    def mask(self, item):
        grid = getattr(item, "grid", None)
        grid_t = torch.as_tensor(grid, dtype=torch.long)
        return grid_t[0, 0].item()
"""


# a module that imports only the class holding the objects (`inputs.items`), not theirs
HOLDER_MODEL = """
import torch
from pkg.items import Inputs

def frames(inputs: Inputs):
    item = inputs.items[0]
    grid = torch.as_tensor(getattr(item, "grid", None), dtype=torch.long)
    return grid[0, 0].item()
"""


def lint(tmp_path, move: str = "to(device, non_blocking=True)", extra: str = ""):
    files = {"items.py": ITEMS, "build.py": BUILD + extra, "schedule.py": SCHEDULE.replace("MOVE", move),
             "model.py": MODEL, "holder.py": HOLDER_MODEL}
    return where(lint_package(tmp_path, files, include_cold=True))


def lines(found, path: str) -> list[int]:
    return sorted({line for at, line, _ in found if at == path})


def test_an_attribute_the_tree_never_moves_is_host_where_a_model_reads_it(tmp_path):
    # VALID: `payload` is moved to the device in place, `grid` never: it arrives on the host
    found = lint(tmp_path)
    assert lines(found, "pkg/model.py") == []
    assert lines(found, "pkg/holder.py") == []


def test_without_a_move_of_any_field_nothing_says_the_objects_arrive_on_the_host(tmp_path):
    # INVALID twin: nothing moves the objects' fields, so the grid may be anywhere
    found = lint(tmp_path, move="float()")
    assert lines(found, "pkg/model.py") == [8, 24]
    assert lines(found, "pkg/holder.py") == [8]


def test_an_attribute_some_code_fills_with_device_data_stays_reported(tmp_path):
    # INVALID twin: a processor stores a device grid under the same key
    extra = """
def make_on_device(outputs: dict, device):
    bundle = Bundle(kind="image")
    bundle.set("grid", outputs["grid"].to(device))
    return bundle
"""
    found = lint(tmp_path, extra=extra)
    assert lines(found, "pkg/model.py") == [8, 24]
    assert lines(found, "pkg/holder.py") == [8]


def test_an_attribute_moved_in_place_stays_reported(tmp_path):
    # INVALID twin: the moved field itself is device data where it is read
    extra = """
import torch

def upload_grid(items: list[Bundle], device):
    for item in items:
        item.grid = item.grid.to(device)
"""
    found = lint(tmp_path, extra=extra)
    assert lines(found, "pkg/model.py") == [8, 24]
