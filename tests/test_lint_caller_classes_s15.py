"""Host data, session 15 (branch `s-host6`): the class of a private helper's parameter, from
what its callers in the module pass.

A module-level function named with a leading `_` whose every call in the module passes, for a
parameter it does not annotate, a parameter of the caller annotated with one class (`C`,
`Optional[C]`) reads `param.attr` as the field `C.attr`; when the tree keeps that field on the
host (here: on a device local that is the CPU unless an environment switch the tree declares off
is on, switch_devices.py), the read is host data (SGLang's `_apply_metadata_gate(polls,
decode_reqs, metadata_buffers)` reading `metadata_buffers.bootstrap_room[...].item()`).
INVALID twins: another call passing a value of unknown class, the helper used as a callback,
a public helper, a field the tree puts on the GPU, a caller annotating another class.
"""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.caller_classes import caller_class
from test_lint_scope import lint_package, where

ENVIRON = """
class EnvStr:
    def __init__(self, default):
        self.default = default

    def get(self):
        return self.default


class Envs:
    POOL_KIND = EnvStr(None)


envs = Envs()
"""

BUFFERS = """
from typing import Optional

import torch
from pkg.environ import envs


def _gate(polls, reqs, buffers):
    for i, poll in enumerate(polls):
        room = buffers.room[reqs[i], 0].item()
        if room == 0:
            polls[i] = 0


def poll_all(polls, reqs=None, buffers: Optional[Buffers] = None):
    if reqs is not None and buffers is not None:
        _gate(polls, reqs, {arg})
    return polls
{more}

class Buffers:
    def __init__(self, size: int):
        device = "cpu"
        if envs.POOL_KIND.get() == "NVLINK":
            device = "cuda"
        self.room = torch.zeros((size, 8), dtype=torch.int64, device={device})
"""

MODEL = """
import torch
from torch import nn
from pkg.buffers import poll_all


class Model(nn.Module):
    def forward(self, x: torch.Tensor, queue):
        queue.polls = poll_all(queue.polls, queue.reqs, queue.buffers)
        return x
"""


def _run(tmp_path, arg="buffers", more="", device="device", buffers=BUFFERS, **overrides):
    files = {"environ.py": ENVIRON, "model.py": MODEL,
             "buffers.py": buffers.format(arg=arg, more=more, device=device)}
    return lint_package(tmp_path, files, **overrides)


def test_a_field_the_switch_keeps_on_the_host_read_through_a_private_helper(tmp_path):
    assert where(_run(tmp_path)) == []
    assert where(_run(tmp_path, include_cold=True)) == []


def test_the_same_with_the_argument_passed_by_keyword(tmp_path):
    found = where(_run(tmp_path, buffers=BUFFERS.replace("_gate(polls, reqs, {arg})", "_gate(polls, reqs, buffers={arg})")))
    assert found == []


def test_invalid_another_call_passing_a_value_of_unknown_class(tmp_path):
    more = "\n\ndef poll_other(polls, reqs, other):\n    _gate(polls, reqs, other)\n"
    found = where(_run(tmp_path, more=more))
    assert ("pkg/buffers.py", 10, "SYN201") in found


def test_invalid_the_helper_used_as_a_callback(tmp_path):
    more = "\n\nCALLBACKS = [_gate]\n"
    assert ("pkg/buffers.py", 10, "SYN201") in where(_run(tmp_path, more=more))


def test_invalid_a_public_helper(tmp_path):
    source = BUFFERS.replace("_gate", "gate")
    assert ("pkg/buffers.py", 10, "SYN201") in where(_run(tmp_path, buffers=source))


def test_invalid_a_field_on_the_gpu(tmp_path):
    found = where(_run(tmp_path, device='"cuda"'))
    assert ("pkg/buffers.py", 10, "SYN201") in found
    assert ("pkg/model.py", 9, "SYN602") in found


def test_invalid_a_caller_annotating_another_class(tmp_path):
    source = BUFFERS.replace("buffers: Optional[Buffers] = None", "buffers: Optional[Other] = None")
    assert ("pkg/buffers.py", 10, "SYN201") in where(_run(tmp_path, buffers=source))


def _table(source: str, function: str, param: str):
    return caller_class(ast.parse(textwrap.dedent(source)), function, param)


def test_the_table_itself():
    source = """
        def _h(a, b, c: int):
            return a.x

        def f(p: "Pool", q: Pool | None, r):
            _h(p, q, 1)

        def g(p: Optional[Pool]):
            _h(p, b=p, c=2)
    """
    assert _table(source, "_h", "a") == "Pool"
    assert _table(source, "_h", "b") == "Pool"
    assert _table(source, "_h", "c") is None  # annotated by the helper itself
    assert _table(source, "f", "r") is None  # not a private helper
    two = source + "\n        def k(p: Other):\n            _h(p, p, 3)\n"
    assert _table(two, "_h", "a") is None  # two classes
    starred = source + "\n        def k(p: Pool, *rest):\n            _h(p, *rest)\n"
    assert _table(starred, "_h", "a") is None
    nested = """
        def _h(a):
            return a.x

        def f(p: Pool):
            def inner(p):
                return _h(p)
            return inner(p)
    """
    assert _table(nested, "_h", "a") is None  # the nested function's own `p` has no class
    named = source + "\n        __all__ = ['_h']\n"
    assert _table(named, "_h", "a") is None
    at_top = source + "\n        _h(POOL, POOL, 4)\n"
    assert _table(at_top, "_h", "a") is None
