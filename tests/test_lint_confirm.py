"""`syncscope lint --confirm REPORT`: static findings cross-checked with a run."""

import subprocess
import sys
import textwrap


def test_confirmed_findings_come_first_and_uncaught_runtime_sites_are_listed(tmp_path):
    (tmp_path / "helper.py").write_text("def peek(x):\n    return x.max().item()\n")
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import torch
        import helper

        def cold(x):
            return x.tolist()

        def hot(x):
            return x.sum().item()

        x = torch.ones(4, device="cuda")
        hot(x)
        helper.peek(x)
    """))
    run = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", "r.json", "prog.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    lint = subprocess.run(
        [sys.executable, "-m", "syncscope", "lint", "--no-cache", "--output-format", "concise", "--confirm", "r.json", "prog.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert lint.returncode == 1, lint.stderr
    out = lint.stdout
    # Ranked: the finding the run confirmed (hot, line 9) before the one it never reached (cold, line 6).
    assert out.index("prog.py:9") < out.index("prog.py:6")
    assert "1 finding(s) confirmed by the run, 1 not reached by it" in out
    assert "1 runtime sync site(s) no rule caught" in out and "helper.py:2" in out


def test_confirm_with_a_bad_report_is_exit_2(tmp_path):
    (tmp_path / "prog.py").write_text("import torch\n")
    (tmp_path / "bad.json").write_text("{")
    lint = subprocess.run(
        [sys.executable, "-m", "syncscope", "lint", "--confirm", "bad.json", "prog.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert lint.returncode == 2 and "--confirm" in lint.stderr and "Traceback" not in lint.stderr
