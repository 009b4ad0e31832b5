"""Not a sync, session 14 (branch `s-nosync`): findings on lines that never wait for the GPU.

1. A block under `isinstance(p, (int, float))` (or `not isinstance(p, torch.Tensor)`) on a
   parameter runs only when `p` is a Python number; when every resolved call in the tree passes
   a value known to be a tensor for `p` (its fact, a field the tree only gives device tensors, or
   a parameter passed on whose own callers all pass tensors), the block never runs
   (numberguards.py, callguards.guarded_lines). SGLang's `NVFP4KVQuantizeUtil.quantize`.
   INVALID twins: a caller passing a number, a caller passing a value of unknown kind.
2. `torch.tensor([], device=d)`: no bytes to copy (SYN401). SGLang's pooler.
3. `self.x.synchronize()` where every `self.x = ...` of the class builds an object of a class of
   the tree or of a native extension (field_makers.py). SGLang's n-gram corpus. INVALID twins:
   a torch event, a parameter, a class of the tree whose `synchronize` does sync (SYN602).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

QUANT = """
import torch


class Quant:
    @staticmethod
    def quantize(tensor: torch.Tensor, scale):
        if isinstance(scale, (int, float)):
            scale = torch.tensor([scale], dtype=torch.float32, device=tensor.device)
        return tensor * scale
"""

POOL = """
import torch
from torch import nn
from pkg.quant import Quant


class Pool:
    def __init__(self, device):
        self.global_scale = torch.ones(1, device=device)
        self.scales_gpu = torch.ones(8, device=device)

    def store(self, x, i: int):
        a = Quant.quantize(x, self.global_scale)
        return a + Quant.quantize(x, self.scales_gpu[i:i + 1])

    def store_scaled(self, x, k_scale=None):
        return Quant.quantize(x, k_scale)


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.k_scale = torch.ones(1, device=device)
        self.pool = Pool(device)

    def forward(self, x: torch.Tensor):
        y = self.pool.store(x, 0)
        return y + self.pool.store_scaled(x, {arg})
"""


def _quant(tmp_path, arg="self.k_scale", **overrides):
    return lint_package(tmp_path, {"quant.py": QUANT, "pool.py": POOL.format(arg=arg)}, **overrides)


def test_a_number_branch_every_caller_passes_a_tensor_to_is_cold(tmp_path):
    assert where(_quant(tmp_path)) == []
    run = _quant(tmp_path, include_cold=True)
    assert [(f.site.path, f.site.line, f.code) for f in run.findings] == [("pkg/quant.py", 9, "SYN401")]
    # decided for the whole tree (numberguards.py), or since session 17 for each per-step call
    # (typeargs.py: the device fields the pool passes), whichever the run asks first
    assert "is not a tensor, and every caller passes a tensor" in run.findings[0].cold \
        or "no per-step call passes arguments that take it" in run.findings[0].cold


def test_invalid_a_caller_passing_a_number_keeps_the_copy(tmp_path):
    found = where(_quant(tmp_path, arg="1.0"))
    assert ("pkg/quant.py", 9, "SYN401") in found


def test_invalid_a_caller_passing_a_value_of_unknown_kind_keeps_the_copy(tmp_path):
    found = where(_quant(tmp_path, arg="self.k_factor"))
    assert ("pkg/quant.py", 9, "SYN401") in found


def test_not_a_tensor_test_is_a_number_guard_too(tmp_path):
    quant = QUANT.replace("isinstance(scale, (int, float))", "not isinstance(scale, torch.Tensor)")
    run = lint_package(tmp_path, {"quant.py": quant, "pool.py": POOL.format(arg="self.k_scale")})
    assert where(run) == []


def test_invalid_a_test_admitting_tensors_is_no_number_guard(tmp_path):
    quant = QUANT.replace("isinstance(scale, (int, float))", "isinstance(scale, (int, torch.Tensor))")
    run = lint_package(tmp_path, {"quant.py": quant, "pool.py": POOL.format(arg="self.k_scale")})
    assert ("pkg/quant.py", 9, "SYN401") in where(run)


EMPTY = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, n: int):
        empty = torch.tensor([], dtype=torch.long, device=x.device)
        some = torch.tensor([n], dtype=torch.long, device=x.device)
        return x[empty], x[some]
"""


def test_an_empty_literal_copies_nothing(tmp_path):
    assert where(lint_package(tmp_path, {"model.py": EMPTY})) == [("pkg/model.py", 9, "SYN401")]


CORPUS = """
from pkg.ext import get_cls


class Corpus:
    def __init__(self, capacity):
        cls = get_cls()
        self._obj = cls(capacity=capacity)

    def synchronize(self):
        self._obj.synchronize()
"""

EXT = """
def get_cls():
    from native_ext import Native
    return Native
"""

WORKER = """
import torch
from torch import nn
from pkg.corpus import Corpus


class Worker(nn.Module):
    def __init__(self, done):
        super().__init__()
        self.corpus = Corpus(10)
        self.event = torch.cuda.Event()
        self.done = done

    def forward(self, x: torch.Tensor):
        self.corpus.synchronize()
        self.event.synchronize()
        self.done.synchronize()
        torch.get_device_module().synchronize()
        return x
"""


def _worker(tmp_path, corpus=CORPUS):
    return where(lint_package(tmp_path, {"corpus.py": corpus, "ext.py": EXT, "worker.py": WORKER}))


def test_synchronize_on_a_tree_or_native_object_is_no_sync(tmp_path):
    found = _worker(tmp_path)
    assert not [f for f in found if f[0] == "pkg/corpus.py" or f[1] == 15]
    # INVALID twins: a torch event, a field given a parameter, the device module
    assert {("pkg/worker.py", 16, "SYN503"), ("pkg/worker.py", 17, "SYN501"), ("pkg/worker.py", 18, "SYN501")} <= set(found)


def test_invalid_a_tree_class_whose_synchronize_syncs_is_still_reached(tmp_path):
    corpus = CORPUS.replace("        self._obj.synchronize()", "        torch.cuda.synchronize()").replace(
        "from pkg.ext", "import torch\nfrom pkg.ext")
    found = _worker(tmp_path, corpus)
    assert ("pkg/worker.py", 15, "SYN602") in found
    assert ("pkg/worker.py", 15, "SYN501") not in found


BY_NAME = """
import torch
from torch import nn


class Cache(nn.Module):
    def __init__(self, util, device):
        super().__init__()
        self.util = util
        self.global_scale = torch.ones(1, device=device)

    def forward(self, x: torch.Tensor):
        return self.util.quantize(x, {arg})
"""


def test_a_call_by_name_is_read_from_its_record(tmp_path):
    run = lint_package(tmp_path, {"quant.py": QUANT, "cache.py": BY_NAME.format(arg="self.global_scale")})
    assert ("pkg/quant.py", 9, "SYN401") not in where(run)
    run = lint_package(tmp_path, {"quant.py": QUANT, "cache.py": BY_NAME.format(arg="0.5")})
    assert ("pkg/quant.py", 9, "SYN401") in where(run)
