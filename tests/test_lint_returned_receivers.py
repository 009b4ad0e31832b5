"""A local bound once to `self.m()` stands for that call as a receiver (field_locals.py).

SGLang 0.5.23's diffusion layer offload gets its courier through a method annotated to return it
(`courier = self._ensure_mapped_courier()`, `-> Optional[MappedLayerCourier]`) and calls
`courier.submit(layer_idx)`. With the local untyped, the call went by name to every `submit` of
the tree that its import closure allows: the streaming VAE decode queue's, whose decode then
counted as per step. VALID: the method's return annotation tells the receiver's class, so the
call reaches that class's method only (named `enqueue` here: `submit` itself now reaches no
method by name, below). INVALID twins: no annotation, or a local bound twice,
and the call is still dispatched by name.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

QUEUE = """
import torch


class DecodeQueue:
    def {method}(self, latents: torch.Tensor):
        return int(latents.sum().item())
"""

OFFLOAD = """
from typing import Optional

import torch
from torch import nn

from pkg.decode import DecodeQueue


class Courier:
    def enqueue(self, layer_idx: int) -> bool:
        return layer_idx >= 0


class Offload(nn.Module):
    def __init__(self):
        super().__init__()
        self._courier = None
        self.queue: Optional[DecodeQueue] = None

    def _ensure_courier(self){returns}:
        if self._courier is None:
            self._courier = Courier()
        return self._courier

    def forward(self, x: torch.Tensor):
        courier = self._ensure_courier()
{rebind}        if courier is not None and courier.enqueue(0):
            return x
        return x * 2
"""

SYNC = ("pkg/decode.py", 7, "SYN201")


def offload(returns=" -> Optional[Courier]", rebind=""):
    return {"decode.py": QUEUE.format(method="enqueue"), "offload.py": OFFLOAD.format(returns=returns, rebind=rebind)}


def test_a_local_bound_to_an_annotated_method_call_reaches_the_returned_class_only(tmp_path):
    run = lint_package(tmp_path, offload(), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)  # nothing per step runs `DecodeQueue.submit`


def test_without_a_return_annotation_the_call_is_still_dispatched_by_name(tmp_path):
    assert SYNC in where(lint_package(tmp_path, offload(returns="")))


def test_a_local_bound_twice_stands_for_nothing(tmp_path):
    rebind = "        courier = self.queue\n"
    assert SYNC in where(lint_package(tmp_path, offload(rebind=rebind)))


# `submit` is an executor's (`executor.submit(fn, ...)`, 53 calls so named in SGLang 0.5.23 and
# vLLM 0.33.0): on a receiver of unknown class it reaches no method by name (library facts
# `no-dispatch`), as `result`, `done` and `cancel` do not.
POOLED = """
import torch
from torch import nn


class Runner(nn.Module):
    def __init__(self, pool):
        super().__init__()
        self.pool = pool

    def forward(self, x: torch.Tensor):
        self.pool.{method}(x)
        return x
"""


def test_an_executor_style_submit_on_an_unknown_receiver_reaches_no_method_by_name(tmp_path):
    run = lint_package(tmp_path, {"decode.py": QUEUE.format(method="submit"), "runner.py": POOLED.format(method="submit")}, include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)


def test_another_name_on_an_unknown_receiver_is_still_dispatched(tmp_path):
    assert SYNC in where(lint_package(tmp_path, {"decode.py": QUEUE.format(method="push"), "runner.py": POOLED.format(method="push")}))
