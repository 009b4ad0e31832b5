"""The linter fails closed (issue 28): every selector that names nothing is an error naming where
it came from and the nearest rule; its output says what `--fix` really does. On the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from syncscope.lint.confirm import confirm
from syncscope.report.schema import Report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE = """\
import torch


def step(x: torch.Tensor, lens: torch.Tensor):
    y = torch.ones(3, device="cuda")
    return y.sum().item()
"""


def cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "model.py").write_text(SOURCE)
    return tmp_path


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--select", "SYN2O1"], "--select: 'SYN2O1' names no rule; did you mean 'SYN201'?"),
        (["--select", "FOO"], "--select: 'FOO' names no rule"),
        (["--select", "SYN21"], "--select: 'SYN21' names no rule; did you mean 'SYN201'?"),
        (["--select", ","], "--select: empty: it selects no rule"),
        (["--extend-select", "SYN2,SYN7"], "--extend-select: 'SYN7' names no rule"),
        (["--ignore", "SYN9OO"], "--ignore: 'SYN9OO' names no rule; did you mean 'SYN900'?"),
    ],
)
def test_a_selector_option_that_names_nothing_is_an_error(project, args, message):
    result = cli("lint", "model.py", *args, cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    assert one_line(result.stderr).startswith(f"syncscope lint: {message}"), result.stderr


@pytest.mark.parametrize(
    "toml, message",
    [
        ('[tool.syncscope.lint]\nselect = ["SYN21"]\n', "{path}: [tool.syncscope.lint] select: 'SYN21' names no rule; did you mean 'SYN201'?"),
        ('[tool.syncscope.lint]\nignore = ["SYN2O1"]\n', "{path}: [tool.syncscope.lint] ignore: 'SYN2O1' names no rule; did you mean 'SYN201'?"),
        ('[tool.syncscope.lint]\nextend-select = ["SYM2"]\n', "{path}: [tool.syncscope.lint] extend-select: 'SYM2' names no rule"),
        ('[tool.syncscope.lint.per-file-ignores]\n"model.py" = ["SYN1O1"]\n',
         "{path}: [tool.syncscope.lint] per-file-ignores 'model.py': 'SYN1O1' names no rule; did you mean 'SYN101'?"),
        ('[tool.syncscope.lint]\nselct = ["SYN2"]\n', "{path}: unknown key 'selct' in [tool.syncscope.lint]; did you mean 'select'?"),
        ('[tool.syncscope.lnt]\nselect = ["SYN2"]\n', "{path}: unknown table [tool.syncscope.lnt]"),
    ],
)
def test_a_selector_in_the_config_that_names_nothing_is_an_error(project, toml, message):
    (project / "pyproject.toml").write_text(toml)
    result = cli("lint", "model.py", cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith("syncscope lint: " + message.format(path=project / "pyproject.toml")), line
    if "lnt" in toml:
        assert line.endswith("did you mean 'lint'?")


def test_valid_prefixes_and_all_still_select(project):
    for selector in ("SYN", "SYN2", "SYN20", "SYN201", "ALL", "syn2"):
        result = cli("lint", "model.py", "--select", selector, "--output-format", "concise", cwd=project)
        assert result.returncode == 1 and "SYN201" in result.stdout, (selector, result.stderr)


def test_a_suppression_of_a_code_that_names_nothing_is_a_warning_and_suppresses_nothing(project):
    (project / "model.py").write_text(SOURCE.replace("return y.sum().item()", "return y.sum().item()  # noqa: SYN2O1"))
    result = cli("lint", "model.py", "--output-format", "concise", cwd=project)
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("model.py")]
    # `SYN2O1` is one unknown code: not `SYN2` (which would suppress every SYN2xx rule) and junk
    assert lines == [
        "model.py:6:1: SYN900 `# noqa` of 'SYN2O1' names no rule; did you mean 'SYN201'?",
        "model.py:6:19: SYN201 `y.sum().item()` copies a device value to the host and waits for the GPU (keep a host mirror of it)"
        "; no fix: no host copy of `y.sum()` in scope",  # a fixable rule says whether it has a fix (issue 27)
    ], lines


def test_an_unused_suppression_is_not_called_fixable(project):
    (project / "model.py").write_text(SOURCE + "z = 1  # noqa: SYN201\n")
    result = cli("lint", "model.py", cwd=project)
    assert "SYN900 unused suppression" in result.stdout and "[*]" not in result.stdout
    assert "Found 2 findings in" in result.stdout and "fixable" not in result.stdout
    before = (project / "model.py").read_text()
    cli("lint", "model.py", "--fix", cwd=project)
    assert (project / "model.py").read_text() == before


HOST_COPY = "import torch\ndef f(x_cpu: torch.Tensor, device):\n    return x_cpu.to(device)\n"


def test_the_summary_counts_hidden_fixes_as_such(project):
    (project / "host_copy.py").write_text(HOST_COPY)
    plain = cli("lint", "host_copy.py", cwd=project).stdout
    assert "Found 1 finding (1 hidden fix can be enabled with `--unsafe-fixes`) in 1 file" in plain
    flagged = cli("lint", "host_copy.py", "--unsafe-fixes", cwd=project).stdout
    assert "Found 1 finding (1 fixable with `--fix`) in 1 file" in flagged and "--unsafe-fixes" not in flagged


def test_the_unsafe_fix_of_a_pageable_copy_pins_it(project):
    (project / "host_copy.py").write_text(HOST_COPY)
    result = cli("lint", "host_copy.py", "--fix", "--unsafe-fixes", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "host_copy.py").read_text().endswith("    return x_cpu.pin_memory().to(device, non_blocking=True)\n")


def _report(sites: list[dict]) -> Report:
    full = [{"function": "f", "in_scope": True, "allowed": False, "count": 1, "source": "", **s} for s in sites]
    return Report.from_json({"schema": "syncscope.report", "version": 2, "sites": full, "events": []})


def test_confirm_credits_a_chain_only_with_the_sync_it_ends_at():
    """`prog.py:10` calls a helper that syncs at helper.py:2 (the chain's root) and, through the
    same call, at helper.py:3: that second sync is no finding's, so it stays uncaught."""
    report = _report([
        {"path": "helper.py", "line": 2, "kind": "item", "stack": [{"path": "helper.py", "line": 2, "function": "h"},
                                                                   {"path": "prog.py", "line": 10, "function": "step"}]},
        {"path": "helper.py", "line": 3, "kind": "tolist", "stack": [{"path": "helper.py", "line": 3, "function": "h"},
                                                                     {"path": "prog.py", "line": 10, "function": "step"}]},
    ])
    finding = {"code": "SYN602", "path": "prog.py", "line": 10, "function": "step", "source": "h(x)",
               "chain": [{"path": "prog.py", "line": 10, "function": "step", "note": "calls h"},
                         {"path": "helper.py", "line": 2, "function": "h", "note": "SYN201"}]}
    result = confirm([finding], report)
    assert [(s.path, s.line) for s in result.confirmed[0].runtime] == [("helper.py", 2)]
    assert [(s.path, s.line) for s in result.uncaught] == [("helper.py", 3)]


def test_a_lint_baseline_sees_one_site_when_syn601_turns_into_syn602(tmp_path):
    finding = {"path": "engine.py", "line": 12, "function": "Engine.step", "source": "chunks = prepare(cu_seqlens, 64)",
               "message": "a call into a helper that syncs", "level": "error"}
    (tmp_path / "before.json").write_text(json.dumps([{**finding, "code": "SYN601"}]))
    (tmp_path / "after.json").write_text(json.dumps([{**finding, "code": "SYN602", "line": 14}]))
    assert cli("baseline", "create", "before.json", "-o", "base.json", cwd=tmp_path).returncode == 0
    gate = cli("gate", "after.json", "--baseline", "base.json", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "1 accepted by the baseline, 0 new, 0 over budget, 0 fixed" in gate.stdout
