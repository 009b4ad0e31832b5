"""Carrier objects' fields read through the mapping that serves them (session 10). Each VALID
package has an INVALID twin that stays reported.

A class that serves undeclared attributes from a mapping (`def __getattr__(self, name): return
self.extras[name]`) lets code read a field either way: `item.grid` or, straight off the mapping,
`item.extras.get("grid")` / `item.extras["grid"]`. Both are the same entry, so where session 9
found `item.grid` to be host data (the tree moves the objects' other fields to the device one by
one, never this one), the mapping's entry is host data too (SGLang's Kimi-K2.5 reads
`item.model_specific_data.get("image_grid_thw")` and hands the joined grids to its tower).
"""

from __future__ import annotations

from test_lint_carrier_fields_s9 import BUILD, ITEMS, SCHEDULE, lines
from test_lint_host_facts import lint_package, where

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
        grids = []
        for item in items:
            grid = item.extras.get("grid")
            if grid is None:
                grid = item.extras["grid"]
            grids.append(grid)
        grid = torch.concat(grids, dim=0)
        x = torch.cat([item.payload for item in items])
        return self.tower(x, grid)

    def first(self, item):
        return item.OWNER["grid"][0, 0].item()
"""


def lint(tmp_path, owner: str = "extras", extra: str = "", move: str = "to(device, non_blocking=True)"):
    files = {"items.py": ITEMS, "build.py": BUILD + extra, "schedule.py": SCHEDULE.replace("MOVE", move),
             "model.py": MODEL.replace("OWNER", owner)}
    return where(lint_package(tmp_path, files, include_cold=True))


def test_an_entry_of_the_carriers_mapping_is_the_host_attribute(tmp_path):
    # VALID: `extras` is what `Bundle.__getattr__` serves `grid` from; `grid` is never moved
    assert lines(lint(tmp_path), "pkg/model.py") == []


def test_the_same_key_off_another_mapping_stays_reported(tmp_path):
    # INVALID twin: `other` is no mapping `__getattr__` reads; its "grid" may be anything
    assert lines(lint(tmp_path, owner="other"), "pkg/model.py") == [28]


def test_an_entry_stored_with_device_data_through_the_mapping_stays_reported(tmp_path):
    # INVALID twin: a processor fills the entry with a device grid through the mapping itself
    extra = """
def make_on_device(outputs: dict, device):
    bundle = Bundle(kind="image")
    bundle.extras["grid"] = outputs["grid"].to(device)
    return bundle
"""
    assert lines(lint(tmp_path, extra=extra), "pkg/model.py") == [8, 28]


def test_without_a_move_of_any_field_the_entries_stay_reported(tmp_path):
    # INVALID twin: nothing moves the objects' fields, so nothing says they arrive on the host
    assert lines(lint(tmp_path, move="float()"), "pkg/model.py") == [8, 28]
