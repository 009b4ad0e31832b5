"""Not a sync, session 15 (branch `r2-nosync`): `forward_<device word>` names a method, not data.

A module's platform variants of `forward` (`forward_cuda`, `forward_native`) are methods: read
as an attribute (`act_fn.forward_cuda`) they are bound methods, so a comparison with one
(`act_fn._forward_method != act_fn.forward_cuda`, SGLang's fused FP8 activation check) reads no
GPU value, although the name ends in a device word. What such a method RETURNS is still a
tensor wherever it lives: `act_fn.forward_cuda(x).item()` stays a finding (INVALID twin).
"""

from __future__ import annotations

from syncscope.lint import provenance as P
from test_lint_scope import lint_package, where

ACT = """
import torch
from torch import nn


class SiluAndMul(nn.Module):
    def __init__(self):
        super().__init__()
        self._forward_method = None

    def _resolve_forward_method(self):
        self._forward_method = self.forward_native
        return self._forward_method

    def forward_native(self, x):
        return x

    def forward_cuda(self, x):
        return x
"""

FUSE = """
import torch
from pkg.act import SiluAndMul


def fuse(x: torch.Tensor, act_fn: SiluAndMul):
    if (act_fn._forward_method or act_fn._resolve_forward_method()) != act_fn.forward_cuda:
        return act_fn.forward_native(x)
    return x


def reads(x: torch.Tensor, act_fn: SiluAndMul):
    y = act_fn.forward_cuda(x)
    return y.item()
"""


def test_a_platform_forward_read_as_an_attribute_is_a_method(tmp_path):
    found = where(lint_package(tmp_path, {"act.py": ACT, "fuse.py": FUSE}, include_cold=True, all_functions=True))
    assert ("pkg/fuse.py", 7, "SYN206") not in found
    assert ("pkg/fuse.py", 14, "SYN201") in found  # INVALID: what the method returns is a tensor


def test_the_name_hint():
    hints = P.NameHints([], ["cuda", "gpu"])
    assert hints.where("forward_cuda") == P.PY
    assert hints.where("input_ids_cuda") == P.DEVICE
    assert hints.where("forward") == P.UNKNOWN
    assert hints.where("forward_mode") == P.UNKNOWN  # data: only a device word last makes it a method
    assert hints.where("forward_batch") == P.UNKNOWN
