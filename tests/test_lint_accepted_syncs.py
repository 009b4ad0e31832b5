"""Syncs the code itself accepts: inside `with gpu_sync_allowed():` (vLLM's sync check lets them
pass, callees included) or `with syncscope.allow_sync("why"):` (the runtime trap marks them
allowed), a finding leaves the default report for a category of its own, `accepted`, and is no
sync for the callers (with_blocks.py).

vLLM 0.33 marks 140 blocks so; 45 of its 396 default findings sat in them. VALID: the finding in
the block, and the caller of a helper whose sync sits in one. INVALID twins, where the finding
stays in the default report: a keyword that narrows the allowance (`first_only=True`), a
conditional manager, an unrelated context manager, and the line after the block.
"""

from __future__ import annotations

import io

from test_lint_scope import lint_package, where

from syncscope.lint.output import scope_json, summary, write_concise

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


def _lint(tmp_path, manager: str, **overrides):
    files = {"debug.py": DEBUG, "model.py": MODEL.replace("{manager}", manager)}
    return lint_package(tmp_path, files, **overrides)


def test_inside_gpu_sync_allowed_leaves_the_default_report_and_the_callers(tmp_path):
    assert SYNC in where(_lint(tmp_path, "with timer():"))  # the premise: the sync is reported
    run = _lint(tmp_path, "with gpu_sync_allowed():")
    assert where(run) == []
    assert run.cold == 1 and run.accepted == 1
    assert summary(run, run.findings).endswith(" 1 more inside blocks that accept their syncs (`--include-cold`).")


def test_syncscope_allow_sync_is_read_too(tmp_path):
    assert where(_lint(tmp_path, 'with syncscope.allow_sync("warm-up read"):')) == []


def test_accepted_findings_are_shown_as_their_own_category_with_include_cold(tmp_path):
    run = _lint(tmp_path, "with gpu_sync_allowed():", include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert len(found) == 1
    assert scope_json(found[0]) == {"category": "accepted",
                                    "cold": "accepted by the code: inside `with gpu_sync_allowed()`"}
    assert CALLER not in where(run)  # no sync for the caller, not even a cold one
    out = io.StringIO()
    write_concise(found, out)
    assert out.getvalue().endswith(" [accepted by the code: inside `with gpu_sync_allowed()`]\n")


def test_a_keyword_narrowing_the_allowance_is_not_read(tmp_path):
    run = _lint(tmp_path, "with gpu_sync_allowed(first_only=True):")
    assert SYNC in where(run) and CALLER in where(run)


def test_a_conditional_manager_is_not_read(tmp_path):
    run = _lint(tmp_path, "with timer() if x.is_cuda else gpu_sync_allowed():")
    assert SYNC in where(run) and CALLER in where(run)


def test_an_unrelated_manager_keeps_the_finding(tmp_path):
    run = _lint(tmp_path, "with timer():")
    assert SYNC in where(run) and CALLER in where(run)


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


def test_the_line_after_the_block_is_still_reported(tmp_path):
    run = lint_package(tmp_path, {"debug.py": DEBUG, "model.py": AFTER})
    assert where(run) == [("pkg/model.py", 12, "SYN201")]
