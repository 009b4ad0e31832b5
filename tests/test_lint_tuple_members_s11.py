"""Each member of a returned tuple keeps its own place (session 11). Each VALID package has an
INVALID twin that stays reported.

A helper (another module) builds one member on the host and another on the device, binds the tuple
to a name, keeps it in a memo dict and returns it (`result = (cos, seq); self._memo[key] = result;
return result`). The caller unpacks it, appends the host member to a list and joins it
(`parts.append(seq); cu = torch.cat(parts)`): the joined tensor is host data, where the helper
built it (tuple_names.py, list_origins.py).
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

HELPER = """
import torch

class Rope(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._memo = {}

    def by_thw(self, t: int, h: int):
        key = (t, h)
        if key in self._memo:
            return self._memo[key]
        cos = torch.ones(4, device="cuda")
        seq = torch.repeat_interleave(torch.tensor([h * 2], dtype=torch.int32), t)
        result = (cos, seq)
        self._memo[key] = result
        return result
"""

MODEL = """
import torch
from pkg.helper import Rope

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rope = Rope()

    def metadata(self, grid):
        parts = []
        for t, h in grid:
            t, h = int(t), int(h)
            cos, seq = self.rope.by_thw(t, h)
            parts.append(MEMBER)
        cu = torch.cat(parts)
        cu = torch.cumsum(cu, dim=0)
        return torch.full((3,), cu[-1])

    def forward(self, x, grid):
        return x + self.metadata(grid)
"""


def lint(tmp_path, member: str = "seq", helper: str = HELPER):
    found = where(lint_package(tmp_path, {"helper.py": helper, "model.py": MODEL.replace("MEMBER", member)},
                               include_cold=True))
    return [code for path, _, code in found if path == "pkg/model.py"]


def test_the_host_member_of_a_named_memo_tuple_is_host(tmp_path):
    # VALID: `seq` is built on the host; the list holds only it, so `cu` is host data
    assert lint(tmp_path) == []


def test_the_device_member_stays_reported(tmp_path):
    # INVALID twin: `cos` is made on the device
    assert "SYN408" in lint(tmp_path, member="cos")


def test_a_list_of_mixed_members_stays_reported(tmp_path):
    # INVALID twin: the list holds a device member too
    assert "SYN408" in lint(tmp_path, member="seq)\n            parts.append(cos")


def test_a_memo_filled_with_something_else_stays_reported(tmp_path):
    # INVALID twin: the memo also gets a device tensor, so its read may be one
    helper = HELPER.replace("self._memo[key] = result", "self._memo[key] = result\n        self._memo[0] = cos")
    assert "SYN408" in lint(tmp_path, helper=helper)


def test_a_list_extended_from_elsewhere_stays_reported(tmp_path):
    # INVALID twin: `extend` adds items of unknown place
    found = lint(tmp_path, member="seq)\n            parts.extend(x.split(1)")
    assert "SYN408" in found


POOL = """
import torch

class Pool:
    def __init__(self):
        self.group = None

    def free(self, index: torch.Tensor):
        if self.group is None:
            self.release(index[index > 0])
        else:
            self.group.append(index)

    def release(self, index):
        pass

    def begin(self):
        self.group = []

    def end(self):
        pending, self.group = self.group, None
        if pending:
            self.free(torch.cat(pending))

    def forward(self, x):
        self.end()
        return x
"""


def test_a_container_field_unpacked_from_a_tuple_stays_reported(tmp_path):
    # INVALID: `pending, self.group = self.group, None`: the field holds tensors of unknown place
    found = where(lint_package(tmp_path, {"pool.py": POOL}, include_cold=True))
    assert ("pkg/pool.py", 23, "SYN601") in found
