"""Syncs the code itself accepts: inside `with gpu_sync_allowed():` (vLLM's sync check lets them
pass, callees included) or `with syncscope.allow_sync("why"):` (the runtime trap marks them
allowed), a finding stays in the report, marked `accepted` with why (with_blocks.py). Not hidden:
the engines' own later fixes removed such syncs (vLLM 0.30's `mamba_mixer2.py` `.tolist()` calls
in `with gpu_sync_allowed():` are in the recall corpus), so an accepted sync is known debt, not
noise. The block is no cold code either: what it calls still counts for the callers, which are
marked accepted too when that is the only sync they reach.

VALID: the finding in the block is marked, in text, concise, JSON and the summary. INVALID twins,
where it is not marked: a keyword that narrows the allowance (`first_only=True`), a conditional
manager, an unrelated manager, the line after the block.
"""

from __future__ import annotations

import io

from test_lint_scope import lint_package, where

from syncscope.lint.output import scope_json, summary, write_concise, write_text

DEBUG = """
from contextlib import contextmanager


@contextmanager
def gpu_sync_allowed(first_only: bool = False):
    yield


@contextmanager
def timer():
    yield
"""

MODEL = """
import torch
from torch import nn

import syncscope
from pkg.debug import gpu_sync_allowed, timer


def helper(x: torch.Tensor):
    {manager}
        n = int(x.sum().item())
    return n


class Model(nn.Module):
    def forward(self, x: torch.Tensor):
        n = helper(x)
        return x * n
"""

SYNC = ("pkg/model.py", 11, "SYN201")
CALLER = ("pkg/model.py", 17, "SYN601")
WHY = "accepted by the code: inside `with gpu_sync_allowed()`"


def _lint(tmp_path, manager: str, **overrides):
    files = {"debug.py": DEBUG, "model.py": MODEL.replace("{manager}", manager)}
    return lint_package(tmp_path, files, **overrides)


def _accepted(run) -> dict:
    return {(f.site.path, f.site.line, f.code): f.accepted for f in run.findings}


def test_inside_gpu_sync_allowed_the_finding_stays_marked_and_the_caller_still_counts(tmp_path):
    run = _lint(tmp_path, "with gpu_sync_allowed():")
    assert where(run) == sorted([SYNC, CALLER])
    # the caller stays in the report, marked too: the only sync it reaches is accepted
    # (tests/test_lint_accepted_call_sites.py)
    assert _accepted(run) == {SYNC: WHY, CALLER: "accepted by the code: pkg/model.py:11 is inside `with gpu_sync_allowed()`"}
    assert summary(run, run.findings).endswith(" 2 of them inside blocks that accept their syncs (marked `accepted`).")


def test_syncscope_allow_sync_is_read_too(tmp_path):
    run = _lint(tmp_path, 'with syncscope.allow_sync("warm-up read"):')
    assert _accepted(run)[SYNC] == "accepted by the code: inside `with syncscope.allow_sync(...)`"


def test_the_mark_is_in_every_output(tmp_path):
    run = _lint(tmp_path, "with gpu_sync_allowed():")
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    data = scope_json(found[0])
    assert data["accepted"] == WHY and data["category"] == "per-step"
    out = io.StringIO()
    write_concise(found, out)
    assert out.getvalue().endswith(f" [{WHY}]\n")
    out = io.StringIO()
    write_text(found, {}, out)
    assert f"    = {WHY}\n" in out.getvalue()


def test_a_keyword_narrowing_the_allowance_is_not_read(tmp_path):
    assert _accepted(_lint(tmp_path, "with gpu_sync_allowed(first_only=True):"))[SYNC] is None


def test_a_conditional_manager_is_not_read(tmp_path):
    assert _accepted(_lint(tmp_path, "with timer() if x.is_cuda else gpu_sync_allowed():"))[SYNC] is None


def test_an_unrelated_manager_is_not_read(tmp_path):
    run = _lint(tmp_path, "with timer():")
    assert where(run) == sorted([SYNC, CALLER]) and _accepted(run)[SYNC] is None


AFTER = """
import torch
from torch import nn

from pkg.debug import gpu_sync_allowed


class Model(nn.Module):
    def forward(self, x: torch.Tensor):
        with gpu_sync_allowed():
            a = int(x.sum().item())
        b = int(x.max().item())
        return x * a * b
"""


def test_only_the_blocks_lines_are_marked(tmp_path):
    run = lint_package(tmp_path, {"debug.py": DEBUG, "model.py": AFTER})
    assert _accepted(run) == {("pkg/model.py", 11, "SYN201"): WHY, ("pkg/model.py", 12, "SYN201"): None}
