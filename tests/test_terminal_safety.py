"""Untrusted text (file paths, function names, source lines, messages) never reaches a terminal
raw: every console renderer shows control characters escaped, and each machine format escapes
by its own rules (GitHub workflow commands, SARIF/JSON, Markdown tables)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from syncscope.terminal import SafeStream, is_safe, safe_text

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TITLE = "\x1b]0;pwned\x07"  # OSC: retitles the terminal
CLEAR = "\x1b[2J\x1b[H"  # CSI: clears the screen, moves the cursor
C1_CSI = "\x9b31m"  # the one-byte CSI of C1
BIDI = "\u202e"  # right-to-left override: hides what follows
HOSTILE = f"evil{TITLE}{CLEAR}{C1_CSI}{BIDI}\r\x08"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\x08")


def assert_safe(text: str) -> None:
    assert is_safe(text), repr(text)
    assert not any(ch in text for ch in RAW), repr(text)


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("t\x07", "t\\x07"),
        ("\x9b2J", "\\x9b2J"),
        ("x\ny\r", "x\\ny\\r"),
        ("tab\tkept", "tab\tkept"),
        ("\u202eabc", "\\u202eabc"),
        ("\x7f\x00", "\\x7f\\x00"),
        ("bad\udcffname", "bad\\udcffname"),  # an undecodable file name (surrogateescape)
        ("plain ünïcode ✓", "plain ünïcode ✓"),
    ],
)
def test_safe_text_escapes_every_control_character(raw, shown):
    assert safe_text(raw) == shown
    assert_safe(safe_text(raw))


def test_multiline_keeps_newlines_only():
    assert safe_text("a\nb\x1b", multiline=True) == "a\nb\\x1b"
    out = io.StringIO()
    SafeStream(out).write(HOSTILE + "\n")
    assert out.getvalue().endswith("\n") and is_safe(out.getvalue())


# -- the runtime report: console table, `report`, markdown, github, sarif ------------------------
def hostile_report():
    from syncscope.report.aggregate import build_report
    from syncscope.events import Frame, HostSyncEvent

    site = Frame(f"src/{HOSTILE}.py", 7, f"Model.{HOSTILE}")
    event = HostSyncEvent(
        kind="item", api="Tensor.item", site=site, source=f"n = x.item()  | `{HOSTILE}`", stack=(site,),
        thread=HOSTILE, pid=1, region=HOSTILE, in_scope=True,
    )
    return build_report([event], {"device": "sim", "report_path": f"/tmp/{HOSTILE}.json"})


def test_console_table_shows_hostile_text_escaped():
    from syncscope.render import console

    out = io.StringIO()
    console.render(hostile_report(), file=out)
    text = out.getvalue()
    assert_safe(text)
    assert "\\x1b]0;pwned\\x07" in text  # shown, not hidden


def test_report_command_and_its_errors(tmp_path):
    from syncscope.atomic import write_json_atomic

    path = tmp_path / "r.json"
    write_json_atomic(str(path), hostile_report().to_json())
    env = dict(os.environ, PYTHONPATH=REPO, COLUMNS="300")
    shown = subprocess.run([sys.executable, "-m", "syncscope", "report", str(path)], capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout + shown.stderr)
    missing = subprocess.run([sys.executable, "-m", "syncscope", "report", str(tmp_path / f"{HOSTILE}.json")],
                             capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "no such report" in missing.stderr
    assert_safe(missing.stderr)


def test_gate_combine_and_export_outputs(tmp_path):
    from syncscope.atomic import write_json_atomic
    from syncscope.report.aggregate import build_report

    hostile = tmp_path / "hostile.json"
    write_json_atomic(str(hostile), {**hostile_report().to_json(), "pid": 11, "host": "h", "status": "completed"})
    empty = tmp_path / "empty.json"
    write_json_atomic(str(empty), build_report([], {"device": "sim", "pid": 12, "host": "h", "status": "completed"}).to_json())
    env = dict(os.environ, PYTHONPATH=REPO)

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "syncscope", *args], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    made = cli("baseline", "create", str(empty), "-o", "base.json")
    assert made.returncode == 0, made.stderr
    gated = cli("gate", str(hostile), "--baseline", "base.json", "--markdown", "summary.md", "--github")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "\\x1b]0;pwned" in gated.stderr  # the new site, shown escaped
    assert_safe(gated.stdout.replace("%0D", "") + gated.stderr)
    assert_safe((tmp_path / "summary.md").read_text())
    combined = cli("combine", str(hostile), str(empty), "-o", f"c{CLEAR}.json")
    assert combined.returncode == 0, combined.stderr
    assert_safe(combined.stdout + combined.stderr)
    for fmt in ("markdown", "github", "sarif"):
        exported = cli("export", str(hostile), "--format", fmt)
        assert exported.returncode == 0, exported.stderr
        assert_safe(exported.stdout)


def test_github_annotations_follow_githubs_escaping():
    from syncscope.render.github import format_github
    from syncscope.site import Site

    class Record:
        rule_id = "SYN101"
        level = "error"
        column = 3
        message = "100% sure:\nsecond line\r::stop-commands::x \x1b[31m"
        site = Site("dir,with:colons/a%b.py", 4, "f", "SYN101", "")

    line = format_github(Record())
    assert line.count("\n") == 0 and "\r" not in line
    props, data = line[len("::error "):].split("::", 1)
    assert props == "file=dir%2Cwith%3Acolons/a%25b.py,line=4,col=3,title=SYN101"
    assert data == "SYN101 100%25 sure:%0Asecond line\\r::stop-commands::x \\x1b[31m"
    assert_safe(line)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_sarif_and_json_escape_control_characters():
    from syncscope.render.sarif import write_sarif

    from syncscope.ci.baseline import _runtime_sites

    report = hostile_report()
    sites, _ = _runtime_sites(report.to_json(), "r.json")
    out = io.StringIO()
    write_sarif(sites, out, tool_name="syncscope", tool_version="0")
    assert_safe(out.getvalue())
    results = json.loads(out.getvalue())["runs"][0]["results"]
    assert any(HOSTILE in text for text in _strings(results))  # escaped in the file, intact when parsed
    raw = json.dumps(report.to_json(), indent=1)
    assert_safe(raw)
    assert json.loads(raw)["sites"][0]["path"] == f"src/{HOSTILE}.py"


def test_markdown_table_cells_stay_in_their_row():
    from syncscope.render.markdown import render_report

    text = render_report(hostile_report())
    assert_safe(text)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "evil" in line]
    assert len(rows) == 1
    assert rows[0].count(" | ") == rows[0].replace("\\|", "").count(" | ")  # every | in a cell is escaped


# -- lint text / concise / statistics and the warn policy ---------------------------------------
SOURCE = """\
import torch


def step(lens: torch.Tensor):
    n = lens.sum().item()  # {hostile}
    return n
"""


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_lint_outputs_with_a_hostile_file_name_and_source(tmp_path, fmt):
    name = "evil\x1b[2J\x07.py"
    (tmp_path / name).write_text(SOURCE.format(hostile=HOSTILE))
    (tmp_path / "pyproject.toml").write_text("")
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", "--output-format", fmt, "--no-cache", name],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "evil" in proc.stdout
    assert_safe(proc.stdout + proc.stderr)


def test_warn_policy_line_is_safe(capsys):
    from syncscope.events import Frame
    from syncscope.runtime.policy import HostSyncError, Policy
    from syncscope.runtime.recorder import Recorder

    recorder = Recorder(policy=Policy.WARN)
    recorder.record("item", "Tensor.item", stack=(Frame(f"{HOSTILE}.py", 1, "f"),))
    assert_safe(capsys.readouterr().err)
    assert_safe(str(HostSyncError("item", "Tensor.item", f"{HOSTILE}.py:1", HOSTILE)))


def test_oracle_tables_show_hostile_text_escaped_and_not_as_markup(tmp_path):
    from syncscope.oracle import render
    from syncscope.oracle.compare import Comparison

    markup = "[red]fake[/red]"
    source = tmp_path / "step.py"
    source.write_text(f"def step(x):\n    n = x.item()  # {HOSTILE} {markup}\n    return n\n")
    line = {"path": str(source), "function": f"step{HOSTILE}{markup}", "scope": HOSTILE, "line": 2, "verdict": "blocked",
            "hits": 3, "blocked_hits": 3, "wait_ns": 10**6, "ratio": 0.9, "source": f"n = x.item() {HOSTILE}{markup}"}
    out = io.StringIO()
    render.render_source([line], str(tmp_path), file=out)
    render.render_summary({"lines": [line], "calibration": {"device": HOSTILE + markup, "sleep_ns": 10**6, "cycles": 5},
                           "repeat": 2, "tracer": HOSTILE}, f"/tmp/{HOSTILE}{markup}.json", file=out)
    render.render_comparison(Comparison(blind_spots=[line]), f"hook{HOSTILE}{markup}.json", file=out)
    text = out.getvalue()
    assert_safe(text)
    assert "\\x1b]0;pwned\\x07" in text  # shown, escaped
    assert text.count("[red]fake") == text.count("fake") >= 4  # the brackets are text, not rich markup


def test_monitor_metric_labels_are_safe():
    from syncscope.monitoring.metrics import SiteFold

    site, kind, function = SiteFold(10).labels(f"src/{HOSTILE}.py", 7, f"Model.{HOSTILE}", "item")
    assert_safe(site + function)
    assert site == f"src/{safe_text(HOSTILE)}.py:7" and function == f"Model.{safe_text(HOSTILE)}"
