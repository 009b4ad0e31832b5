"""A call site whose only sync below is accepted by the code is marked accepted too (summaries.py):
vLLM's sync check and the runtime trap let a sync pass when any frame on the stack is inside
`with gpu_sync_allowed():`, so the linter says the same of the call that leads there. Where a
call reaches a sync the code accepts and one it does not, the call is shown the one it does
not accept, even when that one is further down, and is not marked.

VALID (marked): a call into a helper whose only sync sits in such a block; the callers of a
function that makes its syncing call inside such a block. INVALID (not marked, and the chain
names the unaccepted sync): a helper with an accepted sync and an unaccepted one deeper down.
"""

from __future__ import annotations

from test_lint_scope import lint_package

DEBUG = """
from contextlib import contextmanager


@contextmanager
def gpu_sync_allowed():
    yield
"""

HELPERS = """
import torch

from pkg.debug import gpu_sync_allowed


def deep(x: torch.Tensor):
    return int(x.max().item())


def only_accepted(x: torch.Tensor):
    with gpu_sync_allowed():
        n = int(x.sum().item())
    return n


def both(x: torch.Tensor):
    with gpu_sync_allowed():
        n = int(x.sum().item())
    return n + deep(x)


def accepted_call(x: torch.Tensor):
    with gpu_sync_allowed():
        n = deep(x)
    return n
"""

MODEL = """
import torch
from torch import nn

from pkg.helpers import accepted_call, both, only_accepted


class Model(nn.Module):
    def forward(self, x: torch.Tensor):
        a = only_accepted(x)
        b = both(x)
        c = accepted_call(x)
        return x * a * b * c
"""


def _call_sites(tmp_path) -> dict:
    run = lint_package(tmp_path, {"debug.py": DEBUG, "helpers.py": HELPERS, "model.py": MODEL})
    return {f.site.line: f for f in run.findings if f.site.path == "pkg/model.py"}


def test_a_call_whose_only_sync_is_accepted_is_marked(tmp_path):
    site = _call_sites(tmp_path)[10]
    assert site.code == "SYN601" and site.chain[-1][:2] == ("pkg/helpers.py", 13)
    assert site.accepted == "accepted by the code: pkg/helpers.py:13 is inside `with gpu_sync_allowed()`"


def test_a_call_made_inside_an_accepting_block_marks_the_callers_above_it(tmp_path):
    site = _call_sites(tmp_path)[12]
    assert site.chain[-1][:2] == ("pkg/helpers.py", 8)  # `deep`'s own sync is not in a block
    assert site.accepted == "accepted by the code: pkg/helpers.py:25 is inside `with gpu_sync_allowed()`"


def test_a_call_that_also_reaches_an_unaccepted_sync_is_shown_that_one_unmarked(tmp_path):
    site = _call_sites(tmp_path)[11]
    # the accepted `.item()` at :19 is nearer; the report names the one the code does not accept
    assert site.chain[-1][:2] == ("pkg/helpers.py", 8)
    assert site.accepted is None
