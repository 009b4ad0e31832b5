"""`syncscope lint` as users run it: in a subprocess, with every output format, exit codes,
--statistics, --fix/--diff, and without ever importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(REPO, "tests", "sarif-schema-2.1.0.json")

SOURCE = """\
import torch


def step(x: torch.Tensor, mask_cpu: torch.Tensor, lens: torch.Tensor):
    mask = mask_cpu.cuda(non_blocking=True)
    y = x[mask]
    n = lens.sum().item()
    torch.cuda.synchronize()
    return y, n
"""


def run_cli(*args, cwd, check_code=None):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    if check_code is not None:
        assert proc.returncode == check_code, proc.stdout + proc.stderr
    return proc


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(SOURCE)
    (tmp_path / "clean.py").write_text("import torch\ndef f(x: torch.Tensor):\n    return x + 1\n")
    return tmp_path


def test_exit_codes(project):
    run_cli("clean.py", cwd=project, check_code=0)
    run_cli("model.py", cwd=project, check_code=1)
    run_cli("model.py", "--exit-zero", cwd=project, check_code=0)
    run_cli("missing.py", cwd=project, check_code=2)
    run_cli("model.py", "--output-format", "xml", cwd=project, check_code=2)
    (project / "pyproject.toml").write_text("[tool.syncscope.lint]\nnot-a-key = 1\n")
    proc = run_cli("model.py", cwd=project, check_code=2)
    assert "not-a-key" in proc.stderr


def test_text_format_has_code_frame(project):
    out = run_cli("model.py", cwd=project, check_code=1).stdout
    assert "model.py:6:9: SYN101 [*] `x[mask]` indexes with a boolean mask" in out
    assert "6 |     y = x[mask]\n  |         ^ SYN101" in out
    assert "Found 3 findings (1 fixable with `--fix`)" in out


def test_concise_format(project):
    lines = run_cli("model.py", "--output-format", "concise", cwd=project, check_code=1).stdout.splitlines()
    assert lines[0].startswith("model.py:6:9: SYN101 [*] ")
    assert lines[1].startswith("model.py:7:") and " SYN201 " in lines[1]
    assert lines[2].startswith("model.py:8:") and " SYN501 " in lines[2]


def test_json_format(project):
    data = json.loads(run_cli("model.py", "--output-format", "json", cwd=project, check_code=1).stdout)
    assert [(d["code"], d["line"], d["function"]) for d in data] == [("SYN101", 6, "step"), ("SYN201", 7, "step"), ("SYN501", 8, "step")]
    assert data[0]["fix"] == {"applicability": "safe"} and data[1]["fix"] is None
    assert data[0]["name"] == "device-bool-mask-index" and len(data[0]["fingerprint"]) == 20
    assert data[0]["source"] == "y = x[mask]"


def test_sarif_format_is_valid_sarif_2_1_0(project):
    out = run_cli("model.py", "clean.py", "--output-format", "sarif", cwd=project, check_code=1).stdout
    log = json.loads(out)
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["SYN101", "SYN201", "SYN501"]
    rules = run["tool"]["driver"]["rules"]
    assert rules[results[0]["ruleIndex"]]["id"] == "SYN101"
    assert all(len(r["partialFingerprints"]["syncscope/v1"]) == 20 for r in results)
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "model.py"
    assert location["region"]["startLine"] == 6 and location["region"]["startColumn"] == 9


def test_github_format(project):
    lines = run_cli("model.py", "--output-format", "github", cwd=project, check_code=1).stdout.splitlines()
    assert lines[0].startswith("::error file=model.py,line=6,col=9,title=SYN101::SYN101 ")
    assert len(lines) == 3


def test_statistics(project):
    out = run_cli(".", "--statistics", cwd=project, check_code=1).stdout
    rows = [line.split("\t") for line in out.splitlines() if "\t" in line]
    assert [(r[0].strip(), r[1]) for r in rows] == [("1", "SYN101"), ("1", "SYN201"), ("1", "SYN501")]
    assert "[*]" in rows[0][2]


def test_fix_diff_and_unsafe(project):
    before = (project / "model.py").read_text()
    diff = run_cli("model.py", "--diff", cwd=project, check_code=1).stdout
    assert "-    y = x[mask]\n+    y = x[mask_cpu]" in diff
    assert (project / "model.py").read_text() == before  # --diff changes nothing
    proc = run_cli("model.py", "--fix", cwd=project, check_code=1)
    after = (project / "model.py").read_text()
    assert "y = x[mask_cpu]" in after and after.replace("x[mask_cpu]", "x[mask]") == before
    assert "SYN101" not in proc.stdout and "SYN201" in proc.stdout
    (project / "host_copy.py").write_text("import torch\ndef forward(x_cpu: torch.Tensor, device):\n    return x_cpu.to(device)\n")
    run_cli("host_copy.py", "--fix", cwd=project, check_code=1)  # unsafe: not applied
    assert "non_blocking" not in (project / "host_copy.py").read_text()
    run_cli("host_copy.py", "--fix", "--unsafe-fixes", cwd=project, check_code=0)
    assert "x_cpu.pin_memory().to(device, non_blocking=True)" in (project / "host_copy.py").read_text()


def test_select_and_ignore_options(project):
    out = run_cli("model.py", "--select", "SYN2,SYN5", "--ignore", "SYN501", "--output-format", "concise",
                  cwd=project, check_code=1).stdout
    assert [line.split()[1] for line in out.splitlines() if line.startswith("model.py")] == ["SYN201"]


def test_lint_never_imports_torch_nor_typer(project):
    """The command runs in a fresh interpreter; torch must not be among its modules, even with
    several files (process pool) and every output format. Nor typer: lint parses its own
    options (typer 0.29 and the pydantic adapters it builds for every option cost ~0.15 s of a
    warm pre-commit run)."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['syncscope', 'lint', '.', '--output-format', 'sarif', '--no-cache', '-j', '2', '-o', 'out.sarif']\n"
        "try:\n    runpy.run_module('syncscope', run_name='__main__')\n"
        "except SystemExit as stop:\n    assert stop.code == 1, stop.code\n"
        "loaded = sorted(m for m in ('torch', 'typer', 'pydantic', 'click') if m in sys.modules)\n"
        "assert not loaded, loaded\n"
        "print('NEITHER')\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert "NEITHER" in proc.stdout, proc.stdout + proc.stderr
    assert "SYN101" in (project / "out.sarif").read_text()


def test_option_forms(project):
    # a flag pair: the later one wins, and neither given leaves the configuration's choice
    (project / "weights.py").write_text("import torch\n\ndef load_weights(x: torch.Tensor):\n"
                                        "    return x.sum().item()\n")
    lint = ("weights.py", "--output-format", "concise", "--no-cache")
    run_cli(*lint, cwd=project, check_code=0)  # runs once: skipped by default
    run_cli(*lint, "--hot-functions", "--all-functions", cwd=project, check_code=1)
    run_cli(*lint, "--all-functions", "--hot-functions", cwd=project, check_code=0)
    (project / "pyproject.toml").write_text("[tool.syncscope.lint]\nall-functions = true\n")
    assert "weights.py:4:19: SYN201" in run_cli(*lint, cwd=project, check_code=1).stdout
    run_cli(*lint, "--hot-functions", cwd=project, check_code=0)
    # after `--` only paths, without --verify
    assert "model.py:6" in run_cli("--output-format", "concise", "--no-cache", "--", "model.py",
                                   cwd=project, check_code=1).stdout
    # no abbreviations: `--exit` is not `--exit-zero`
    proc = run_cli("model.py", "--exit", cwd=project, check_code=2)
    assert "unrecognized arguments: --exit" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("model.py", "--jobs", "two", cwd=project, check_code=2)
    assert "invalid int value" in proc.stderr
    assert "--include-cold" in run_cli("--help", cwd=project, check_code=0).stdout


def test_typer_app_forwards_lint(project, monkeypatch):
    """`syncscope --help` lists lint, and the typer application (CliRunner, embedders) runs it
    with the same options."""
    from typer.testing import CliRunner

    from syncscope.cli import app

    monkeypatch.chdir(project)
    runner = CliRunner()
    listing = runner.invoke(app, ["--help"])
    assert listing.exit_code == 0 and "lint" in listing.output
    result = runner.invoke(app, ["lint", "model.py", "--no-cache", "--output-format", "concise", "-j", "1"])
    assert result.exit_code == 1, result.output
    assert "model.py:6:9: SYN101" in result.output
    assert runner.invoke(app, ["lint", "model.py", "--no-cache", "--exit-zero", "-j", "1"]).exit_code == 0

def test_fix_keeps_the_file_encoding(project):
    path = project / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\ndef forward(x_cpu: torch.Tensor, device):\n"
                     b"    s = '\xe9t\xe9'\n    return x_cpu.to(device)\n")
    run_cli("latin.py", "--fix", "--unsafe-fixes", cwd=project, check_code=0)
    data = path.read_bytes()
    assert b"'\xe9t\xe9'" in data and b"non_blocking=True" in data
