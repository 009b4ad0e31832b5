"""Bubble fields in reports (schema 2), the console table, the Perfetto export, combine, old
reports, and `syncscope run --bubbles` where it cannot work. No GPU: the window's result is built
from a synthetic timeline with the same pure function the GPU path uses."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys

from typer.testing import CliRunner

from syncscope.ci import combine
from syncscope.cli import app
from syncscope.render import console, perfetto
from syncscope.atomic import write_json_atomic
from syncscope.report.aggregate import build_report
from syncscope.report.schema import load_report
from syncscope.runtime.bubble_window import WindowResult
from syncscope.runtime.bubbles import GpuActivity, SyncMark, attribute
from syncscope.events import Frame
from syncscope.runtime.recorder import Recorder
from test_reporters import check_chrome_trace


def us(x: float) -> int:
    return int(x * 1000)


def _report(pid_suffix: str = "") -> dict:
    """Two sites: `.item()` at step.py:10 blocks the host briefly (3 x 20 us) but leaves the GPU
    idle 2 ms each time; `.tolist()` at step.py:20 blocks 5 ms once and leaves no gap."""
    rec = Recorder(device="cuda", root="/proj")
    item, tolist = Frame("step.py", 10, "step"), Frame("step.py", 20, "step")
    acts, marks = [], []
    t = 0
    for i in range(3):
        acts.append(GpuActivity(0, 7, us(t), us(t + 1000)))
        rec.record("item", "Tensor.item", blocked_ns=us(20), stack=(item,))
        marks.append(SyncMark(len(rec.events) - 1, us(t + 981), us(t + 1001), us(t + 1011)))
        t += 3000
    acts.append(GpuActivity(0, 7, us(t), us(t + 6000)))
    rec.record("tolist", "Tensor.tolist", blocked_ns=us(5000), stack=(tolist,))
    marks.append(SyncMark(len(rec.events) - 1, us(t + 1000), us(t + 6000), us(t + 6010)))
    # The events' own times (host clock, trap-relative) on the same timeline: each at its release.
    rec.events[:] = [dataclasses.replace(e, ts_ns=m.wait_end_ns) for e, m in zip(rec.events, marks)]
    attribution = attribute(acts, marks, (0, us(t + 6000)))
    window = WindowResult(attribution, "program", 0, 0, marks, len(acts), {"open_ns": 1, "close_ns": 2, "analysis_ns": 3})
    # `ok`: the status word of reports before issue 28, still read as a completed run
    meta = {"device": "cuda", "pid": 4242, "host": "h" + pid_suffix, "created": "2026-11-23T00:00:00" + pid_suffix, "status": "ok"}
    return build_report(rec.events, meta, bubbles=window).to_json()


def test_sites_carry_bubble_fields_and_sort_by_the_larger_cost():
    data = _report()
    assert data["version"] == 2
    first, second = data["sites"]
    # item: 60 us blocked but 3 x 1990 us of GPU idle (each gap 1000 -> 3000 us, less the 10 us of
    # syncscope's own bookkeeping after the release) -> sorted first.
    assert (first["kind"], first["bubble_count"]) == ("item", 3)
    assert first["bubble_ns"] == 3 * us(1990) and first["mean_bubble_ns"] == us(1990)
    assert second["kind"] == "tolist" and second["bubble_count"] == 0 and second["bubble_ns"] == 0
    assert first["bubble_ns"] > second["blocked_ns"] > first["blocked_ns"]
    window = data["bubbles"]
    assert first["bubble_share"] == round(first["bubble_ns"] / window["gpu_time_ns"], 6)
    assert window["idle_ns"]["sync"] == first["bubble_ns"] == window["bubble_ns"] == data["summary"]["bubble_ns"]
    assert window["syncscope_ns"] == 3 * us(10)
    assert sum(window["idle_ns"].values()) + window["syncscope_ns"] == window["total_idle_ns"]
    assert [g["site"] for g in window["gaps"] if g["cause"] == "sync"] == [0, 0, 0]


def test_a_report_round_trips_and_renders_the_bubble_column(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(str(path), _report())
    loaded = load_report(str(path))
    assert loaded.sites[0].bubble_count == 3 and loaded.meta["bubbles"]["gap_count"] == len(loaded.meta["bubbles"]["gaps"])
    out = io.StringIO()
    console.render(loaded, file=out)
    text = out.getvalue()
    header = next(line for line in text.splitlines() if "bubble ms" in line)
    assert "bubbles" in header
    item_row = next(line for line in text.splitlines() if "step.py:10" in line)
    assert "5.970" in item_row  # 3 x 1.990 ms
    assert "GPU idle in the window" in text and "after syncs 5.970 ms in 3 bubbles" in text


def test_perfetto_shows_each_gap_on_the_gpu_track_labelled_with_its_site(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(str(path), _report())
    result = CliRunner().invoke(app, ["export", str(path), "--format", "perfetto"])
    assert result.exit_code == 0, result.output
    trace = json.loads(result.stdout)
    check_chrome_trace(trace)  # what Perfetto's importer needs, gap tracks included
    gaps = [e for e in trace["traceEvents"] if e.get("cat", "").startswith("gpu_idle")]
    bubbles = [e for e in gaps if e["args"]["cause"] == "sync"]
    assert [e["name"] for e in bubbles] == ["bubble after item step.py:10"] * 3
    assert bubbles[0]["ts"] == 1000.0 and bubbles[0]["dur"] == 2000.0 and bubbles[0]["args"]["idle_ms"] == 1.99
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "GPU 0: idle gaps" in names
    assert len({(e["pid"], e["tid"]) for e in gaps}) == 1


def _v1(data: dict) -> dict:
    """The same report as syncscope wrote it before bubbles existed."""
    old = json.loads(json.dumps(data))
    old["version"] = 1
    old.pop("bubbles")
    old["summary"].pop("bubble_ns")
    for site in old["sites"]:
        for key in ("bubble_count", "bubble_ns", "mean_bubble_ns", "bubble_share"):
            site.pop(key)
    return old


def test_version_1_reports_still_read_by_report_gate_and_combine(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(_v1(_report())))
    runner = CliRunner()
    shown = runner.invoke(app, ["report", str(old)])
    assert shown.exit_code == 0 and "step.py:10" in shown.stdout and "bubble ms" not in shown.stdout
    assert load_report(str(old)).sites[0].bubble_ns is None
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(app, ["baseline", "create", str(old), "-o", str(baseline)]).exit_code == 0
    assert runner.invoke(app, ["gate", str(old), "--baseline", str(baseline)]).exit_code == 0
    new = tmp_path / "new.json"
    new.write_text(json.dumps(_report(pid_suffix="2")))
    merged = combine.combine([str(old), str(new)])
    item = next(s for s in merged["sites"] if s["kind"] == "item")
    assert item["count"] == 6 and item["bubble_count"] == 3 and item["bubble_ns"] == 3 * us(1990)


def test_combine_adds_bubbles_of_two_processes(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_report("a")))
    b.write_text(json.dumps(_report("b")))
    item = next(s for s in combine.combine([str(a), str(b)])["sites"] if s["kind"] == "item")
    assert item["bubble_count"] == 6 and item["bubble_ns"] == 6 * us(1990)
    assert item["bubble_share"] is None  # two windows: one share would be meaningless


def test_bubbles_on_the_simulated_device_is_one_clear_error(tmp_path):
    (tmp_path / "prog.py").write_text("print('ran')\n")
    import torch

    for device in ("sim",) if torch.cuda.is_available() else ("sim", "auto"):  # auto: sim without a GPU
        proc = subprocess.run(
            [sys.executable, "-m", "syncscope", "run", "--device", device, "--bubbles", "prog.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == "" and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--bubbles" in lines[0] and "CUDA" in lines[0]
        # the report says the run never started (issue 28), in place of any older one
        assert json.loads((tmp_path / "syncscope-report.json").read_text())["status"] == "never_started"


def test_bad_bubble_options_are_one_clear_error(tmp_path):
    (tmp_path / "prog.py").write_text("print('ran')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--bubbles", "--bubble-steps", "0", "prog.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--bubble-steps" in proc.stderr
