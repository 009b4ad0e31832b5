"""What the table after a run says (issue 28, point 5): nothing watched is not "no host syncs",
sampled counts are not totals, a site's line number stays on its row, counts agree in number,
a run that did not complete says so, and a monitor's wait at exit is announced. On the CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def show(tmp_path, data: dict) -> str:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "syncscope.report", "version": 2, "device": "sim", "status": "completed",
                                "ending": "ok", "exit_code": 0, "error": None, "events": [], **data}))
    result = subprocess.run([sys.executable, "-m", "syncscope", "report", str(path)], env=_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def site(path="serve.py", line=26, count=1, **extra):
    return {"path": path, "line": line, "function": "step", "kind": "item", "source": "n = x.item()", "in_scope": True,
            "allowed": False, "count": count, **extra}


def test_a_monitor_that_sampled_nothing_never_says_no_host_syncs(tmp_path):
    sampling = {"mode": "time", "rate": 0.01, "regions": 0, "sampled_regions": 0, "monitored_s": 2.5, "sampled_s": 0.0}
    out = show(tmp_path, {"sites": [], "sampled": True, "sampling": sampling})
    assert "no host syncs" not in out
    assert "the monitor sampled nothing (in 0 s sampled of 2.5 s): no syncs seen, none ruled out" in out


def test_sampled_counts_are_labelled_as_samples(tmp_path):
    sampling = {"mode": "region", "rate": 0.01, "regions": 400, "sampled_regions": 8, "monitored_s": 9.0, "sampled_s": 0.2}
    out = show(tmp_path, {"sites": [site(count=8)], "sampled": True, "sampling": sampling})
    words = " ".join(out.split())  # the summary line may wrap at the console's width
    assert "8 host syncs at 1 site in scope, in 8 of 400 regions sampled (sampled counts, not totals)" in words
    header = next(line for line in out.splitlines() if "site" in line and "kind" in line)
    assert " sampled " in header and " count " not in header  # the column says what it holds


def test_counts_agree_in_number(tmp_path):
    out = show(tmp_path, {"sites": [site()]})
    assert "syncscope: 1 host sync at 1 site in scope (device: sim)" in out
    out = show(tmp_path, {"sites": [site(count=2), site(line=30)]})
    assert "syncscope: 3 host syncs at 2 sites in scope (device: sim)" in out


def test_a_site_outside_the_working_directory_keeps_its_line_number_on_its_row(tmp_path):
    far = "/opt/some/very/long/virtualenv/lib/python3.11/site-packages/engine/worker/model_runner_helpers.py"
    long = dict(function="GPUModelRunner._prepare_inputs_for_speculative_decode",
                source="num_scheduled_tokens_per_request = scheduler_output.num_scheduled_tokens.item()",
                regions=["decode_step_with_speculation"])
    out = show(tmp_path, {"sites": [site(path=far, line=1234, **long)]})
    rows = [line for line in out.splitlines() if "model_runner_helpers.py:1234" in line]
    assert len(rows) == 1 and "GPUModelRunner" in rows[0], out
    assert not any(line.strip("│ ").startswith("1234") for line in out.splitlines())


def test_a_run_that_did_not_complete_says_so_above_its_table(tmp_path):
    out = show(tmp_path, {"sites": [site()], "status": "failed", "ending": "exception", "exit_code": 1,
                          "error": "ValueError: boom"})
    assert "the run failed (exit code 1: ValueError: boom): the sites shown are what it saw before that" in out
    out = show(tmp_path, {"sites": [], "status": "never_started", "ending": "never_started", "exit_code": 2,
                          "error": "No module named 'serve'"})
    assert "the run never started (No module named 'serve')" in out and "no host syncs" not in out


WAITING = """
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read()   # scraped once: a scraper is there
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_monitor_says_when_it_waits_for_a_last_scrape(tmp_path):
    (tmp_path / "prog.py").write_text(WAITING)
    port = _free_port()
    result = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--device", "sim", "--metrics-port", str(port),
         "--metrics-exit-wait", "1", "--no-table", "-o", "r.json", "prog.py", str(port)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert f"syncscope: waiting up to 1 s for a last scrape of /metrics on port {port} (--metrics-exit-wait 0 to skip)" in lines
    assert "syncscope: no scrape came within 1 s: the last counts were not read from /metrics (they are in the JSON report)" in lines
