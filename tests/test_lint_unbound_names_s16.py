"""Names a module binds only for another platform, session 16 (branch `s-npunames`).

A module-level name bound only under `if _is_npu:` (every import, assignment, `def` of it in an
arm a CUDA GPU never takes) is unbound on CUDA: a statement that always reads it raises
`NameError` there, so what follows it in its function never runs, and a class whose `__init__`
reads it is never instantiated, so its instance methods never run (unbound_names.py). SGLang's
`models/mindspore.py` (`MindSporeForCausalLM.__init__` calls `ms.set_context(...)`).
INVALID twins: the name also bound by an `except ImportError` fallback, by a module-level import
elsewhere, by the function itself; a read only in the other platform's branch or a conditional
expression's arm; `if TYPE_CHECKING:` imports; an `__init__` that may return before the read; a
`staticmethod` of such a class; a class that a class of the module subclasses with its own
`__init__`.
"""

from __future__ import annotations

import pytest

from test_lint_scope import lint_package, where

PLATFORMS = """
def is_npu():
    return False
"""

NPU_MODEL = """
from __future__ import annotations

import torch
from pkg.platforms import is_npu

_is_npu = is_npu()
{header}
if _is_npu:
    import mindspore as ms
    from mindspore import mutable


class GraphModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, x: torch.Tensor) -> ms.Tensor:
        n = x.sum().item()
        return n

    @staticmethod
    def probe(x: torch.Tensor):
        return x.sum().item()
"""

HELPER = """
from __future__ import annotations

import torch
from pkg.platforms import is_npu

_is_npu = is_npu()
{header}
if _is_npu:
    import mindspore as ms
    import torch_npu


def to_ms(x: torch.Tensor):
{body}
    n = x.sum().item()
    return n
"""

CALLER = """
import torch
from pkg.helper import to_ms
from pkg.model import GraphModel


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        GraphModel.probe(x)
        return to_ms(x)
"""


def _lint(tmp_path, header="", init="        ms.set_context(mode=0)", body="    t = ms.Tensor(x)", **overrides):
    files = {"platforms.py": PLATFORMS, "model.py": NPU_MODEL.format(header=header, init=init),
             "helper.py": HELPER.format(header=header, body=body), "caller.py": CALLER}
    return lint_package(tmp_path, files, **overrides)


def test_reads_of_a_name_bound_only_for_npu_are_cold(tmp_path):
    run = _lint(tmp_path)
    # the staticmethod needs no instance; `to_ms` syncs no more, so its caller is no finding
    assert where(run) == [("pkg/caller.py", 9, "SYN601"), ("pkg/model.py", 25, "SYN201")]
    cold = _lint(tmp_path, include_cold=True)
    why = {(f.site.path, f.site.line): f.cold for f in cold.findings}
    assert "no instance is built there" in why[("pkg/model.py", 20)]
    assert "after a read of `ms`" in why[("pkg/helper.py", 16)]


@pytest.mark.parametrize("header", [
    "try:\n    import mindspore as ms\nexcept ImportError:\n    ms = None\n",  # a fallback binds it
    "import mindspore as ms\n",  # imported at module level too
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mindspore as ms\n",  # no platform test
])
def test_name_bound_elsewhere_too_keeps_the_findings(tmp_path, header):
    assert where(_lint(tmp_path, header=header)) == [
        ("pkg/caller.py", 9, "SYN601"), ("pkg/caller.py", 10, "SYN601"),
        ("pkg/helper.py", 16 + header.count("\n"), "SYN201"),
        ("pkg/model.py", 20 + header.count("\n"), "SYN201"), ("pkg/model.py", 25 + header.count("\n"), "SYN201")]


@pytest.mark.parametrize("body", [
    "    if _is_npu:\n        t = ms.Tensor(x)",  # read only in the other platform's branch
    "    t = ms.Tensor(x) if _is_npu else x",  # in a conditional expression's arm
    "    t = x is None or ms.Tensor(x)",  # after a short-circuit
    "    import mindspore as ms\n    t = ms.Tensor(x)",  # the function binds it itself
    "    t = [ms.Tensor(v) for v in x]",  # a comprehension's body (x may be empty)
])
def test_read_that_may_not_run_keeps_the_finding(tmp_path, body):
    assert ("pkg/helper.py", 16 + body.count("\n"), "SYN201") in where(_lint(tmp_path, body=body))


def test_init_that_may_return_before_the_read_keeps_the_methods(tmp_path):
    init = "        if torch.cuda.is_available():\n            return\n        ms.set_context(mode=0)"
    assert ("pkg/model.py", 22, "SYN201") in where(_lint(tmp_path, init=init))


def test_class_subclassed_with_its_own_init_keeps_the_methods(tmp_path):
    init = "        ms.set_context(mode=0)\n\n    def forward(self, x: torch.Tensor):\n        return x.sum().item()" \
           "\n\n\nclass Sub(GraphModel):\n    def __init__(self):\n        pass\n\n    def run(self, x):\n" \
           "        return GraphModel.forward(self, x)\n\n\nclass Other:"
    # `Sub` builds instances without `GraphModel.__init__`: `GraphModel.forward` may run on them
    assert ("pkg/model.py", 20, "SYN201") in where(_lint(tmp_path, init=init))
