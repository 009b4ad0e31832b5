"""A class attribute that names a class, called through `self`, builds that class (loops.py).

SGLang 0.5.23 `HybridReqToTokenPool` holds `mamba_pool_cls = MambaPool` in its class body and
builds its pool with `self.mamba_pool_cls(...)` in `__init__`; `MambaPool._conv_slot_desc` is a
`@cached_property` whose first read copies a pointer table to the device (a blocking
`torch.tensor(ptrs, device=...)`). A memo on an object fills once per object where every place
the tree builds the object runs once (memo_owners.py); before, the call through the class
attribute was no place the tree builds a `MambaPool`, so its lifetime was unknown and the fill
stayed a sync in every step that clears a slot.
VALID: the pool built through the attribute in a constructor that runs once. INVALID twins:
the same attribute called in the step, and the pool also built by an ordinary function.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOL = """
from functools import cached_property
import torch


class Pool:
    def __init__(self, convs, device):
        self.convs = convs
        self.device = device

    @cached_property
    def table(self):
        return torch.tensor([c.data_ptr() for c in self.convs], device=self.device)

    def clear_slots(self, slots):
        table = self.table
        for c in self.convs:
            c[slots] = 0
        return table
"""

HOLDER = """
import torch
from pkg.pool import Pool
{factory}

class Holder:
    pool_cls = Pool

    def __init__(self, convs, device):
        self.pool = self.pool_cls(convs, device)

    def clear_slots(self, slots):
        {inner}
        return self.pool.clear_slots(slots)
"""

MODEL = """
import torch
from torch import nn
from pkg.holder import Holder


class Model(nn.Module):
    def __init__(self, convs, device):
        super().__init__()
        self.holder = Holder(convs, device)

    def forward(self, x, slots):
        self.holder.clear_slots(slots)
        return x
"""

SYNC = ("pkg/pool.py", 16, "SYN602")  # `table = self.table`: the first read copies the table


FACTORY = """

def make_pool(convs, device):
    return Pool(convs, device)
"""


def _run(tmp_path, inner="pass", factory="", **overrides):
    return lint_package(tmp_path, {"pool.py": POOL, "holder.py": HOLDER.format(inner=inner, factory=factory),
                                   "model.py": MODEL}, **overrides)


def test_a_pool_built_through_a_class_attribute_in_a_constructor_fills_once(tmp_path):
    assert SYNC not in where(_run(tmp_path))
    assert SYNC not in where(_run(tmp_path, include_cold=True))  # no sync: the fill is once per pool


def test_the_same_attribute_called_in_the_step_stays(tmp_path):
    assert SYNC in where(_run(tmp_path, inner="self.pool = self.pool_cls(self.pool.convs, self.pool.device)"))


def test_a_pool_also_built_by_an_ordinary_function_stays(tmp_path):
    # `make_pool` may run in any step: the objects' lifetime is unknown
    assert SYNC in where(_run(tmp_path, factory=FACTORY))
