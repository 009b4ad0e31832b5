"""Not a sync, session 15 (branch `r2-nosync`): the items of a list field its class fills with
device tensors.

A field bound only to an empty list (or None, or `[] if enabled else None`) whose class adds
items to it only by `self.f.append(torch.zeros(n, device=d))` holds device tensors, whatever its
name says (`_list` names a Python list, not where the items live): no host data. `static = self.flush_list[i]`
is a device tensor, so `static.copy_(dev)` with `dev` moved to the device copies device to device
(SGLang's `_replay_metadata`, `static_ff.copy_(force_flush_dev)`). INVALID twins: a field also
appended a host tensor, a field also bound to another value, and an item copied from a host
destination (`self.flush_list_cpu`, a host name).
"""

from __future__ import annotations

import ast

from syncscope.lint import provenance as P
from syncscope.lint.classinfo import class_hints
from test_lint_scope import lint_package, where

BACKEND = """
import torch


class Backend:
    def __init__(self, device):
        self.device = device
        self.flush_list = None

    def _mask(self, seq_lens_cpu, bs):
        mask = (seq_lens_cpu[:bs].to(torch.int64) % 4) == 0
        return mask.cpu()

    def init_graph_state(self, max_bs, enabled):
        self.flush_list = [] if enabled else None
        for i in range(max_bs):
            if self.flush_list is not None:
                self.flush_list.append(torch.zeros((i + 1,), dtype=torch.int32, device=self.device))

    def replay(self, seq_lens_cpu, bs):
        static = self.flush_list[bs - 1]
        mask = self._mask(seq_lens_cpu, bs)
        flush_dev = mask.to(device=self.device, dtype=torch.int32)
        static.copy_(flush_dev)
        return static
"""

MODEL = """
import torch
from pkg.backend import Backend


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backend = Backend("cuda")

    def forward(self, x: torch.Tensor, seq_lens_cpu: torch.Tensor):
        return x + self.backend.replay(seq_lens_cpu, x.shape[0])
"""

COPY_LINE = 24  # `static.copy_(flush_dev)`


def _run(tmp_path, backend=BACKEND) -> set:
    found = where(lint_package(tmp_path, {"backend.py": backend, "model.py": MODEL}))
    return {line for path, line, code in found if path == "pkg/backend.py" and code == "SYN203"}


def test_an_item_of_a_list_field_filled_on_the_device_is_a_device_tensor(tmp_path):
    assert _run(tmp_path) == set()


def test_invalid_a_field_also_appended_a_host_tensor(tmp_path):
    backend = BACKEND.replace(
        "    def replay(", "    def add(self, t):\n        self.flush_list.append(t.cpu())\n\n    def replay(")
    assert _run(tmp_path, backend) == {COPY_LINE + 3}


def test_invalid_a_field_also_bound_to_another_value(tmp_path):
    backend = BACKEND.replace(
        "    def replay(", "    def reset(self, lists):\n        self.flush_list = lists\n\n    def replay(")
    assert _run(tmp_path, backend) == {COPY_LINE + 3}


def test_invalid_a_host_named_field(tmp_path):
    backend = BACKEND.replace("flush_list", "flush_list_cpu")
    backend = backend.replace("device=self.device))", "device='cpu'))")
    assert _run(tmp_path, backend) == {COPY_LINE}


def test_the_hint_itself():
    hints = class_hints(ast.parse(BACKEND))
    assert hints[("Backend", "flush_list")] == P.UNKNOWN  # a Python list: `if self.flush_list:` is no sync
    assert ("Backend", "flushes") not in class_hints(ast.parse(BACKEND.replace("flush_list", "flushes")))
    extended = BACKEND.replace("self.flush_list.append(", "self.flush_list.extend(")
    assert ("Backend", "flush_list") not in class_hints(ast.parse(extended))
    for adds in ("self.flush_list += [t]", "self.flush_list[0] = t"):
        other = BACKEND.replace("    def replay(", f"    def add(self, t):\n        {adds}\n\n    def replay(")
        assert ("Backend", "flush_list") not in class_hints(ast.parse(other))
