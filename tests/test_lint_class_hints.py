"""The class hints (syncscope/lint/classinfo.py): an attribute one method fills with host data
is host data where another method reads it. The hints and `self_assignments` (owner_fields) read
one walk of a method's assignments (`assignments`), which also follows the locals that hold
host data, in source order, so a later device value for the same local takes the hint away."""

from __future__ import annotations

import ast
import textwrap

from lint_helpers import codes, lint_source
from syncscope.lint import provenance as P
from syncscope.lint.classinfo import assignments, class_hints, self_assignments

SOURCE = textwrap.dedent("""
    import numpy as np
    import torch

    class Runner:
        counts: list[int]

        def __init__(self, n):
            self.device_buf = torch.zeros(n, device="cuda")

        def refresh(self, x, flag):
            staged = np.zeros(4)
            if flag:
                for i in range(2):
                    self.mirror = staged[1:]          # a host local, read in nested blocks
            moved = np.ones(4)
            moved = x.to("cuda")                      # the local now holds device data
            self.moved = moved
            self.sizes: int = 3

        def step(self):
            return self.mirror.sum().item()
""")


def test_a_host_local_read_into_an_attribute_in_a_nested_block_is_a_host_hint():
    hints = class_hints(ast.parse(SOURCE))
    assert hints[("Runner", "mirror")] == P.HOST
    assert hints[("Runner", "counts")] == P.PY  # the class body's annotation
    assert hints[("Runner", "sizes")] == P.PY  # an annotated `self.x: int = ...`
    # a local reassigned to device data before the store gives no hint; nor does a device buffer
    assert ("Runner", "moved") not in hints
    assert ("Runner", "device_buf") not in hints


def test_self_assignments_are_the_self_targets_of_the_shared_walk():
    method = ast.parse(SOURCE).body[2].body[2]  # Runner.refresh
    assert [t.id if isinstance(t, ast.Name) else ast.unparse(t) for t, _, _ in assignments(method)] == [
        "staged", "self.mirror", "moved", "moved", "self.moved", "self.sizes"]
    assert [(attr, annotation is not None) for attr, _, annotation in self_assignments(method)] == [
        ("mirror", False), ("moved", False), ("sizes", True)]


def test_the_hint_keeps_an_item_on_host_data_out_of_the_report(tmp_path):
    assert codes(lint_source(tmp_path, SOURCE)) == []
    # the INVALID twin: the same local filled from the device; its `.item()` is reported
    device = SOURCE.replace("staged = np.zeros(4)", "staged = x.to('cuda')")
    assert codes(lint_source(tmp_path, device)) == ["SYN201"]
