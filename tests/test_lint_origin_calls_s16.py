"""Host data, session 16 (branch `s-poolret`): the call a flagged value comes from may sit on a
later line of the flagged statement (syncscope/lint/origin_calls.py).

    owned = torch.nonzero(                                   # the finding's line
        self.placement.local_mask(host_indices, rank)        # the helper returns its argument's place
    ).squeeze(1)

SGLang's `PageInterleaveHostPool.owned_rows`: the helper, in another module, returns where its
argument lives, and the argument is host data, so `torch.nonzero` reads no GPU value. Only calls at
or above the finding's line counted, so nothing was known of this one. INVALID twins: the helper
given device data stays reported, and so does one given device data in the flagged statement
while an earlier statement calls it on host data (that earlier call alone used to decide).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

PLACEMENT = """
import torch


class Placement:
    def __init__(self, size: int, pages: int):
        self.size = size
        self.pages = pages

    def owner_of(self, loc: torch.Tensor) -> torch.Tensor:
        return (loc % (self.size * self.pages)) // self.pages

    def local_mask(self, loc: torch.Tensor, rank: int) -> torch.Tensor:
        return self.owner_of(loc) == rank
"""

POOL = """
import torch
from pkg.placement import Placement


class Pool:
    def __init__(self, placement: Placement, rank: int):
        self.placement = placement
        self.rank = rank

    def owned_rows(self, host_indices: torch.Tensor, device_indices: torch.Tensor):
        {before}owned = torch.nonzero(
            self.placement.local_mask({arg}, self.rank)
        ).squeeze(1)
        return host_indices[owned], device_indices[owned.to(device_indices.device, non_blocking=True)]
"""

MODEL = """
import torch
from torch import nn
from pkg.pool import Pool


class Model(nn.Module):
    def __init__(self, pool: Pool):
        super().__init__()
        self.pool = pool

    def forward(self, x: torch.Tensor, host_indices: torch.Tensor, device_indices: torch.Tensor):
        host, device = self.pool.owned_rows(host_indices, device_indices)
        return x[device]
"""

NONZERO = ("pkg/pool.py", 12, "SYN105")


def _run(tmp_path, arg="host_indices", before="", **overrides):
    files = {"placement.py": PLACEMENT, "model.py": MODEL, "pool.py": POOL.format(arg=arg, before=before)}
    return lint_package(tmp_path, files, **overrides)


def test_a_helper_on_host_indices_called_on_a_later_line_of_the_statement(tmp_path):
    assert NONZERO not in where(_run(tmp_path))
    assert NONZERO not in where(_run(tmp_path, include_cold=True))


def test_invalid_the_helper_given_device_data(tmp_path):
    assert NONZERO in where(_run(tmp_path, arg="device_indices"))


def test_invalid_an_earlier_call_on_host_data_does_not_stand_in_for_the_statement_s_own(tmp_path):
    before = "first = self.placement.local_mask(host_indices, self.rank)\n        "
    found = where(_run(tmp_path, arg="device_indices", before=before))
    assert ("pkg/pool.py", 13, "SYN105") in found
