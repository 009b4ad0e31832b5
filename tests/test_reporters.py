"""Reporters for runtime reports: Markdown summary, Perfetto/Chrome trace, and `syncscope export`."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from syncscope.ci import combine
from syncscope.cli import app
from syncscope.render import markdown, perfetto
from syncscope.report.schema import Report, load_report
from test_gate_support import runtime_report, write

PROGRAM = '''
import threading

import torch

import syncscope

x = torch.arange(16, device="cuda")


def worker():
    for _ in range(3):
        x.tolist()


for step in range(4):
    with syncscope.region("decode_step"):
        y = x * 2
        n = int(y.sum())  # sync | with a pipe and `backticks`
t = threading.Thread(target=worker, name="loader")  # after the steps: outside every region
t.start()
t.join()
with syncscope.allow_sync("one read for the log"):
    x.max().item()
'''


@pytest.fixture(scope="module")
def sim_report(tmp_path_factory) -> str:
    """A real report: the program above under `syncscope run --device sim`."""
    tmp = tmp_path_factory.mktemp("sim")
    (tmp / "prog.py").write_text(PROGRAM)
    cmd = [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", "r.json", "prog.py"]
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return str(tmp / "r.json")


# -- a structural check of the Chrome trace event format ---------------------------------------
PHASES = set("BEXiIMCbenstfPONDR")
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def check_chrome_trace(data) -> None:
    """What Perfetto's JSON importer and chrome://tracing need (trace event format, JSON object
    form): typed fields per phase, metadata names, no NaN, and slices on one track nested, never
    overlapping part-way (the importer drops or misplaces those)."""
    json.dumps(data, allow_nan=False)
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    assert data.get("displayTimeUnit", "ms") in ("ms", "ns")
    named_processes, named_threads, tracks = set(), set(), {}
    for e in data["traceEvents"]:
        assert isinstance(e, dict), e
        assert e["ph"] in PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if "args" in e:
            assert isinstance(e["args"], dict), e
        if e["ph"] == "M":
            assert e["name"] in METADATA, e
            if e["name"] in ("process_name", "thread_name"):
                assert isinstance(e["args"]["name"], str)
                (named_processes if e["name"] == "process_name" else named_threads).add((e["pid"], e["tid"]) if e["name"] == "thread_name" else e["pid"])
            continue
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and math.isfinite(e["ts"]), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        if e["ph"] in ("i", "I"):
            assert e.get("s", "t") in ("g", "p", "t"), e
    for (pid, tid), slices in tracks.items():
        assert pid in named_processes and (pid, tid) in named_threads, (pid, tid)
        open_ends: list[float] = []
        for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start + 1e-6:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-6, f"slice {start}-{end} overlaps its parent part-way"
            open_ends.append(end)


def test_check_chrome_trace_catches_bad_traces():
    good = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "p"}}]}
    check_chrome_trace(good)
    for bad in (
        {"traceEvents": [{"name": "x", "ph": "Q", "pid": 1, "tid": 1, "ts": 0}]},
        {"traceEvents": [{"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": 0}]},
        {"traceEvents": [{"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": float("nan"), "dur": 1}]},
        {"traceEvents": [{"name": "x", "ph": "i", "pid": "1", "tid": 1, "ts": 0}]},
    ):
        with pytest.raises((AssertionError, KeyError, ValueError)):
            check_chrome_trace(bad)


def test_perfetto_trace_of_a_real_run(sim_report):
    report = load_report(sim_report)
    data = perfetto.trace(report)
    check_chrome_trace(data)
    syncs = [e for e in data["traceEvents"] if e.get("cat") in ("sync", "allowed", "out_of_scope")]
    assert len(syncs) == sum(s.count for s in report.sites) == len(report.events)
    threads = {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert {"MainThread", "loader", "MainThread: regions"} <= threads
    regions = [e for e in data["traceEvents"] if e.get("cat") == "region"]
    assert regions and all(e["name"] == "decode_step" for e in regions)
    assert any(e["cat"] == "allowed" for e in syncs)


def test_perfetto_timed_slices_and_processes_of_a_combined_report(tmp_path):
    source = "def step(x):\n    a = x.sum().item()\n"
    paths = [write(tmp_path, f"r{r}.json", runtime_report(source, counts={2: 3}, pid=100 + r, rank=r)) for r in range(2)]
    merged = Report.from_json(combine.combine(paths))
    data = perfetto.trace(merged)
    check_chrome_trace(data)
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 6 and all(e["dur"] == 0.5 for e in slices)  # 500 ns blocked each
    names = sorted(e["args"]["name"] for e in data["traceEvents"] if e["name"] == "process_name")
    assert names == ["rank 0 (pid 100, hostA)", "rank 1 (pid 101, hostA)"]


def test_markdown_summary_of_a_real_run(sim_report):
    text = markdown.render_report(load_report(sim_report))
    assert text.startswith("## syncscope: 4 host sync(s) at 1 site(s) in scope")
    assert "| site | function | kind | count | blocked ms | source |" in text
    assert "`n = int(y.sum())  # sync \\| with a pipe and 'backticks'`" in text  # table-safe
    assert "1 allowed" in text and "3 outside the regions in scope" in text
    for line in text.splitlines():
        if line.startswith("| "):
            assert len(re.split(r"(?<!\\)\|", line)) == 6 + 2  # 6 cells in every row, escaped pipes kept


def test_markdown_of_a_clean_report(tmp_path):
    path = write(tmp_path, "clean.json", runtime_report("def f():\n    pass\n"))
    assert "No host syncs in scope." in markdown.render_report(load_report(path))


def test_export_command(sim_report, tmp_path):
    runner = CliRunner()
    out = tmp_path / "trace.json"
    result = runner.invoke(app, ["export", sim_report, "--format", "perfetto", "-o", str(out)])
    assert result.exit_code == 0, result.output
    check_chrome_trace(json.loads(out.read_text()))
    result = runner.invoke(app, ["export", sim_report, "--format", "markdown"])
    assert result.exit_code == 0 and result.output.startswith("## syncscope:")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    result = runner.invoke(app, ["export", sim_report, "-f", "markdown", "-o", str(summary)], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text().startswith("earlier step\n## syncscope:")  # appended, as GitHub expects
    assert runner.invoke(app, ["export", sim_report, "--format", "html"]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert runner.invoke(app, ["export", str(bad), "--format", "markdown"]).exit_code == 2


SARIF_SCHEMA = os.path.join(os.path.dirname(__file__), "sarif-schema-2.1.0.json")


def test_sarif_export_of_a_runtime_report_validates_against_the_2_1_0_schema(sim_report, tmp_path):
    import jsonschema

    out = tmp_path / "r.sarif"
    result = CliRunner().invoke(app, ["export", sim_report, "--format", "sarif", "-o", str(out)])
    assert result.exit_code == 0, result.output
    sarif = json.loads(out.read_text())
    schema = json.load(open(SARIF_SCHEMA))
    jsonschema.validators.validator_for(schema)(schema).validate(sarif)
    (res,) = sarif["runs"][0]["results"]  # the one in-scope site (allowed and out-of-scope left out)
    assert res["ruleId"] == "item"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "prog.py"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 19
    assert "4 event(s)" in res["message"]["text"]
    fingerprint = load_report(sim_report).in_scope_sites[0].fingerprint
    assert res["partialFingerprints"]["syncscope/v1"] == fingerprint  # the same key as the baseline's


def test_github_annotations_of_a_runtime_report(sim_report):
    result = CliRunner().invoke(app, ["export", sim_report, "--format", "github"])
    assert result.exit_code == 0
    assert result.output.startswith("::error file=prog.py,line=19,title=item::item host sync (item) via ")


def test_gate_prints_github_annotations_for_new_sites(tmp_path):
    base = write(tmp_path, "a.json", runtime_report("def f(x):\n    a = x.sum().item()\n"))
    new = write(tmp_path, "b.json", runtime_report("def f(x):\n    a = x.sum().item()\n    b = x.max().item()\n"))
    runner = CliRunner()
    assert runner.invoke(app, ["baseline", "create", base, "-o", str(tmp_path / "bl.json")]).exit_code == 0
    result = runner.invoke(app, ["gate", new, "--baseline", str(tmp_path / "bl.json"), "--github"])
    assert result.exit_code == 1
    annotations = [line for line in result.output.splitlines() if line.startswith("::")]
    assert annotations == [annotations[0]] and annotations[0].startswith("::error file=model.py,line=3,")
