"""Host data joined from a list, and host data in an operation (session 14). Each VALID package
has an INVALID twin that stays reported.

- A list bound to `[]` whose every `append` in the function gives host data is joined on the
  host: torch joins tensors of one device only, so `torch.cat(grid_thw_list)` is host data, in
  the rules' walk and in the call facts (SGLang's MOSS-VL `_collect_mm_data`: each item's
  `torch.as_tensor(getattr(item, "grid_thw", None))`, a carrier's host attribute).
- In the call facts, an operator with a known host operand gives host data whatever another
  operand follows (a parameter, an attribute of the tree), as the rules' walk has it: torch does
  not mix devices (`get_num_new_pages(seq_lens=seq_lens_cpu // self.compress_ratio, ...)`).
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
    bundle.set("grid_thw", outputs.get("grid_thw"))
    return bundle
"""

SCHEDULE = """
import torch
from typing import List
from pkg.items import Bundle

def upload(items: List[Bundle], device):
    for item in items:
        if isinstance(item.payload, torch.Tensor):
            item.payload = item.payload.to(device, non_blocking=True)
"""

MODEL = """
import torch
from typing import List, Optional
from pkg.items import Inputs


class Tower(torch.nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
        sizes = grid_thw.prod(-1).tolist()
        return x.split(sizes)


class Batch:
    mm_inputs: List[Optional[Inputs]]


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = Tower()

    def _collect(self, batch: Batch):
        pixel_values_list = []
        grid_thw_list = []
        for mm_input in batch.mm_inputs:
            if mm_input is None:
                continue
            item = mm_input.items[0]
            pixel_values_list.append(item.payload)
            grid = getattr(item, "grid_thw", None)
            if grid is not None:
                grid_thw_list.append(APPENDED)
        if not pixel_values_list:
            return None, None
        pixel_values = torch.cat(pixel_values_list, dim=0)
        grid_thw = torch.cat(grid_thw_list, dim=0) if grid_thw_list else None
        counts = grid_thw.prod(-1).tolist()
        return pixel_values, grid_thw

    def _features(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor):
        return self.visual(pixel_values, grid_thw=grid_thw)

    def forward(self, batch: Batch):
        pixel_values, grid_thw = self._collect(batch)
        if pixel_values is not None and grid_thw is not None:
            return self._features(pixel_values, grid_thw)
"""


def lint_model(tmp_path, appended: str, extra: str = ""):
    files = {"items.py": ITEMS, "build.py": BUILD, "schedule.py": SCHEDULE,
             "model.py": MODEL.replace("APPENDED", appended) + extra}
    return where(lint_package(tmp_path, files, include_cold=True))


def lines(found, path: str) -> list[int]:
    return sorted({line for at, line, _ in found if at == path})


def test_a_list_of_host_items_is_joined_on_the_host(tmp_path):
    # VALID: every item appended is a tensor made from a carrier's host attribute
    found = lint_model(tmp_path, 'torch.as_tensor(grid, dtype=torch.long)')
    assert lines(found, "pkg/model.py") == []


def test_an_item_moved_to_the_device_keeps_the_join_on_the_device(tmp_path):
    # INVALID twin: the appended item is copied to the device first
    found = lint_model(tmp_path, 'torch.as_tensor(grid, dtype=torch.long).to("cuda")')
    assert 9 in lines(found, "pkg/model.py")  # the tower's `.tolist()`, through its callers
    assert 37 in lines(found, "pkg/model.py")  # the line's own `.tolist()` of the join


def test_a_second_source_of_items_keeps_the_join_unknown(tmp_path):
    # INVALID twin: another method adds items of unknown place to the same list
    appended = 'torch.as_tensor(grid, dtype=torch.long))\n                grid_thw_list.extend(mm_input.grids'
    found = lint_model(tmp_path, appended)
    assert 38 in lines(found, "pkg/model.py")  # one line further down
    assert 9 in lines(found, "pkg/model.py")


PARTS = """
import torch

def joined(lens_cpu: torch.Tensor, lens: torch.Tensor, n: int):
    parts = []
    for i in range(n):
        parts.append(SOURCE)
    return torch.cat(parts).tolist()
"""


def test_items_sliced_from_host_data_join_on_the_host(tmp_path):
    # VALID: the rules' walk alone (no call facts): every appended item is host data
    found = where(lint_package(tmp_path, {"parts.py": PARTS.replace("SOURCE", "lens_cpu[i:i + 1]")}, include_cold=True))
    assert found == []


def test_items_of_a_tensor_parameter_keep_the_join_reported(tmp_path):
    # INVALID twin: the items come from a tensor whose place the callers decide (none here)
    found = where(lint_package(tmp_path, {"parts.py": PARTS.replace("SOURCE", "lens[i:i + 1]")}, include_cold=True))
    assert ("pkg/parts.py", 8, "SYN202") in found


UTIL = """
import torch

def new_pages(seq_lens: torch.Tensor, page_size: int) -> int:
    return (seq_lens % page_size == 1).int().sum().item()
"""

ALLOC = """
import torch
from pkg.util import new_pages

class Allocator:
    def __init__(self):
        self.ratio = 4

    def alloc_extend(self, seq_lens: torch.Tensor, seq_lens_cpu: torch.Tensor):
        return new_pages(ARG, 16)
"""


def test_an_operation_on_host_data_passes_host_data(tmp_path):
    # VALID: the only call passes `seq_lens_cpu // self.ratio`, host data whatever the field is
    found = where(lint_package(tmp_path, {"util.py": UTIL, "alloc.py": ALLOC.replace("ARG", "seq_lens_cpu // self.ratio")},
                               include_cold=True))
    assert found == []


def test_an_operation_on_a_device_tensor_stays_reported(tmp_path):
    # INVALID twin: the operand is a tensor made on the device
    arg = 'torch.ones(4, device="cuda") // self.ratio'
    found = where(lint_package(tmp_path, {"util.py": UTIL, "alloc.py": ALLOC.replace("ARG", arg)}, include_cold=True))
    assert ("pkg/util.py", 5, "SYN201") in found
    assert ("pkg/alloc.py", 10, "SYN601") in found
