"""Static x runtime (`syncscope.lint.confirm`): findings a run confirmed rank first; runtime syncs no
rule caught are listed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from syncscope.lint.confirm import confirm, render_text
from syncscope.report.schema import load_report
from syncscope.site import Site
from test_gate_support import runtime_report, write

PROGRAM = '''\
import torch


def helper(t):
    return t.tolist()


def step(x, mask):
    n = x.sum().item()
    y = x[mask]
    ids = helper(x)
    if n < 0:
        x.max().item()
    read = getattr(x.min(), "item")
    return n + read() + len(ids) + y.numel()


x = torch.arange(8, device="cuda")
step(x, x > 3)
'''


@pytest.fixture(scope="module")
def lint_and_run(tmp_path_factory):
    """The real linter and a real run on the simulated device, over the same file."""
    tmp = tmp_path_factory.mktemp("confirm")
    (tmp / "prog.py").write_text(PROGRAM)
    lint = subprocess.run([sys.executable, "-m", "syncscope", "lint", "prog.py", "--output-format", "json"],
                          cwd=tmp, capture_output=True, text=True, timeout=120)
    assert lint.returncode == 1, lint.stderr
    run = subprocess.run([sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", "r.json", "prog.py"],
                         cwd=tmp, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(lint.stdout), str(tmp / "r.json")


def test_confirmed_first_unreached_after_and_blind_spots_listed(lint_and_run):
    findings, report = lint_and_run
    result = confirm(findings, report)
    confirmed = {(c.finding["line"], c.finding["code"]): sorted(s.kind for s in c.runtime) for c in result.confirmed}
    assert confirmed == {
        (5, "SYN202"): ["tolist"],
        (9, "SYN201"): ["item"],
        (10, "SYN101"): ["bool_mask_index"],
        (11, "SYN601"): ["tolist"],  # the helper's sync, found through the call site in its stack
    }
    assert [(f["line"], f["code"]) for f in result.unconfirmed] == [(13, "SYN201")]  # never ran
    assert [(s.line, s.kind) for s in result.uncaught] == [(15, "item")]  # getattr(...) hides it from the linter
    ranked = result.ranked()
    assert [f["line"] for f in ranked][-1] == 13
    text = render_text(result)
    assert "4 finding(s) confirmed by the run, 1 not reached" in text
    assert "1 runtime sync site(s) no rule caught" in text and "prog.py:15: item in step" in text


def test_kind_must_fit_the_rule(tmp_path):
    data = runtime_report("def f(x):\n    a = x.sum().item()\n")
    report = load_report(write(tmp_path, "r.json", data))
    wrong_rule = Site("model.py", 2, "f", "SYN202", "a = x.sum().item()")  # tolist rule, item sync
    any_rule = Site("model.py", 2, "f", "SYN301", "a = x.sum().item()")  # a syncing property: any kind
    result = confirm([wrong_rule, any_rule], report)
    assert [c.finding for c in result.confirmed] == [any_rule]
    assert result.unconfirmed == (wrong_rule,)
    assert result.uncaught == ()


def test_ranking_by_blocked_time(tmp_path):
    source = "def f(x):\n    a = x.sum().item()\n    b = x.max().item()\n"
    data = runtime_report(source, counts={2: 1, 3: 5})  # 500 ns each: line 3 blocked longer
    report = load_report(write(tmp_path, "r.json", data))
    findings = [Site("model.py", 2, "f", "SYN201", ""), Site("model.py", 3, "f", "SYN201", "")]
    assert [f.line for f in confirm(findings, report).ranked()] == [3, 2]


def test_allowed_and_out_of_scope_syncs_neither_confirm_nor_count(tmp_path):
    data = runtime_report("def f(x):\n    a = x.sum().item()\n", in_scope=False)
    report = load_report(write(tmp_path, "r.json", data))
    finding = Site("model.py", 2, "f", "SYN201", "")
    assert confirm([finding], report).unconfirmed == (finding,)
    assert len(confirm([finding], report, include_out_of_scope=True).confirmed) == 1


def test_lint_root_rebases_runtime_paths(tmp_path):
    data = runtime_report("def f(x):\n    a = x.sum().item()\n", path="pkg/model.py")
    data["project_root"] = "/repo"
    report = load_report(write(tmp_path, "r.json", data))
    finding = Site("model.py", 2, "f", "SYN201", "")  # linted from /repo/pkg
    assert not confirm([finding], report).confirmed
    assert confirm([finding], report, lint_root="/repo/pkg").confirmed
