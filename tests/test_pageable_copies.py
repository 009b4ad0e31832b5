"""A pageable `non_blocking` copy whose measured time says it did not wait is a potential sync:
kept apart from the syncs that blocked in the report, the table and the gate.

The times below are the ones measured on the H200 by `bench/copy_probe.py` (docs/gpu-results.md);
on this CPU machine they stand in for the CUDA detector's clock (the decision is made from the
time and the size only). The real CUDA path is in the GPU test at the end.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from typer.testing import CliRunner

from syncscope.ci import combine
from syncscope.cli import app
from syncscope.render import console, markdown
from syncscope.report.aggregate import build_report
from syncscope.report.schema import Report
from syncscope.runtime import pageable
from syncscope.events import Frame, HostSyncEvent

KiB, MiB, MS = 1 << 10, 1 << 20, 1_000_000
SOURCE = {
    10: ("Engine.upload_ids", "ids = host_ids.to(device, non_blocking=True)"),
    20: ("Engine.upload_table", "table = host_table.to(device, non_blocking=True)"),
    30: ("Engine.step", "n = lens.sum().item()"),
}


@pytest.mark.parametrize(
    "nbytes,blocked_ns,waited",
    [
        (64, int(0.16 * MS), False),  # H200: 0.00 of the queue waited
        (256 * KiB, int(0.12 * MS), False),  # 0.00
        (4 * MiB, int(8.4 * MS), True),  # 0.35 of the 25 ms queue
        (32 * MiB, int(11.8 * MS), True),  # 0.48
        (256 * MiB, int(42.0 * MS), True),  # 1.55
        (4 * MiB, int(1.2 * MS), False),  # idle GPU: staging 4 MiB alone, no wait
        (64, 3 * MS, True),  # a tiny copy that took 3 ms waited for something
        (64, None, None),  # the simulated device measures no time: not decided
    ],
)
def test_measured_time_decides_whether_a_pageable_copy_waited(nbytes, blocked_ns, waited):
    assert pageable.copy_waited(blocked_ns, nbytes) is waited


def test_the_bound_grows_with_the_size_and_is_capped():
    assert pageable.no_wait_bound_ns(0) == pageable.NO_WAIT_BASE_NS
    assert pageable.no_wait_bound_ns(1 * MiB) > pageable.no_wait_bound_ns(256 * KiB)
    assert pageable.no_wait_bound_ns(1 << 40) == pageable.NO_WAIT_CAP_NS


def test_the_cuda_detector_sizes_the_source_tensor_of_each_copy_api():
    from syncscope.runtime import cuda

    specs = {s.api: s for s in cuda._shim_specs()}
    big, small = torch.empty(MiB, dtype=torch.float32), torch.empty(16, dtype=torch.float32)  # 4 MiB, 64 B
    dst = torch.empty(0)
    eight_ms = int(8.4 * MS)
    assert cuda._pageable_copy_waited(specs["Tensor.to"], (big, "cuda"), eight_ms) is True
    assert cuda._pageable_copy_waited(specs["Tensor.cuda"], (small,), int(0.16 * MS)) is False
    # copy_(dst, src): the source is the second argument; 1 ms is over the bound for 64 B, under it for 4 MiB
    assert cuda._pageable_copy_waited(specs["Tensor.copy_"], (dst, small), 1 * MS) is True
    assert cuda._pageable_copy_waited(specs["Tensor.copy_"], (dst, big), 1 * MS) is False


def event(line: int, kind: str = "h2d_pageable", blocked_ns: int | None = 100_000, waited: bool | None = False, pid: int = 1000) -> HostSyncEvent:
    function, source = SOURCE[line]
    frame = Frame("engine.py", line, function)
    return HostSyncEvent(
        kind=kind, api="Tensor.to" if kind == "h2d_pageable" else "Tensor.item", site=frame, source=source,
        stack=(frame, Frame("main.py", 3, "<module>")), thread="MainThread", pid=pid, region="step", in_scope=True,
        blocked_ns=blocked_ns, ts_ns=1000, waited=waited,
    )


def report_of(events, pid: int = 1000) -> Report:
    meta = {"tool": {"name": "syncscope", "version": "0.1.0"}, "created": "2026-11-23T00:00:00+00:00",
            "device": "cuda", "host": "h", "pid": pid, "rank": None, "project_root": "/proj", "status": "completed"}
    return build_report(events, meta)


def run_with_one_potential_site(pid: int = 1000) -> Report:
    return report_of(
        [
            event(10), event(10),  # a small pageable copy, twice, never waited: potential
            event(20), event(20, blocked_ns=9 * MS, waited=True),  # the table copy waited once: a sync
            event(30, kind="item", blocked_ns=2 * MS, waited=None),
        ],
        pid=pid,
    )


def test_report_keeps_the_copies_that_did_not_block_apart():
    report = run_with_one_potential_site()
    in_scope, allowed, out_of_scope = report.grouped()
    assert sorted(s.line for s in in_scope) == [20, 30]
    assert [s.line for s in report.potential()] == [10]
    data = report.to_json()
    by_line = {s["line"]: s for s in data["sites"]}
    assert by_line[10]["potential"] and by_line[10]["did_not_block"] == 2
    assert not by_line[20]["potential"] and by_line[20]["did_not_block"] == 1
    assert data["summary"]["potential_events"] == 2
    assert [e["waited"] for e in data["events"] if data["sites"][e["site"]]["line"] == 20] == [False, True]
    again = Report.from_json(json.loads(json.dumps(data)))
    assert [s.line for s in again.potential()] == [10]


def test_an_unmeasured_pageable_copy_counts_as_a_sync():
    report = report_of([event(10, blocked_ns=None, waited=None)])
    assert report.potential() == [] and [s.line for s in report.grouped()[0]] == [10]


def test_console_table_lists_potential_syncs_under_their_own_heading(tmp_path):
    out = tmp_path / "table.txt"
    with open(out, "w") as fh:
        console.render(run_with_one_potential_site(), file=fh)
    text = out.read_text()
    head, _, tail = text.partition("potential syncs that did not block this run")
    assert tail, text
    assert "3 host syncs at 2 sites in scope" in head  # lines 20 (twice) and 30
    assert "engine.py:20" in head and "engine.py:30" in head and "engine.py:10" not in head
    assert "engine.py:10" in tail
    assert "2 potential" in markdown.render_report(run_with_one_potential_site())


def _write(tmp_path, name, report: Report) -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "w") as fh:
        json.dump(report.to_json(), fh)
    return path


def test_gate_lists_potential_sites_without_failing_and_baselines_leave_them_out(tmp_path):
    runner = CliRunner()
    report = _write(tmp_path, "run.json", run_with_one_potential_site())
    baseline = str(tmp_path / "baseline.json")
    result = runner.invoke(app, ["baseline", "create", report, "-o", baseline])
    assert result.exit_code == 0, result.output
    lines = sorted(s["line"] for s in json.load(open(baseline))["sites"])
    assert lines == [20, 30]  # the potential copy is not accepted into the baseline
    result = runner.invoke(app, ["gate", report, "--baseline", baseline])
    assert result.exit_code == 0, result.output
    assert "1 potential sync site(s), not failing the gate" in result.output
    assert "engine.py:10: h2d_pageable in Engine.upload_ids" in result.output
    assert "1 potential (not gated)" in result.output and "0 fixed" in result.output

    # The same copy blocks in a later run (a larger batch): now it is a new site and fails.
    blocked = _write(tmp_path, "later.json", report_of([event(10, blocked_ns=9 * MS, waited=True), event(20, waited=True), event(30, kind="item", waited=None)]))
    result = runner.invoke(app, ["gate", blocked, "--baseline", baseline])
    assert result.exit_code == 1
    assert "1 new sync site(s)" in result.output and "engine.py:10" in result.output


def test_a_baseline_site_seen_only_as_potential_is_not_dropped_as_fixed(tmp_path):
    runner = CliRunner()
    blocked = _write(tmp_path, "blocked.json", report_of([event(10, blocked_ns=9 * MS, waited=True)]))
    baseline = str(tmp_path / "baseline.json")
    assert runner.invoke(app, ["baseline", "create", blocked, "-o", baseline]).exit_code == 0
    quiet = _write(tmp_path, "quiet.json", report_of([event(10)]))
    result = runner.invoke(app, ["gate", quiet, "--baseline", baseline, "--update"])
    assert result.exit_code == 0, result.output
    assert "0 fixed" in result.output
    assert [s["line"] for s in json.load(open(baseline))["sites"]] == [10]


def test_combined_ranks_keep_a_copy_potential_only_if_no_rank_blocked(tmp_path):
    quiet = _write(tmp_path, "r0.json", report_of([event(10, pid=1)], pid=1))
    loud = _write(tmp_path, "r1.json", report_of([event(10, pid=2, blocked_ns=9 * MS, waited=True)], pid=2))
    quiet2 = _write(tmp_path, "r2.json", report_of([event(10, pid=3)], pid=3))
    mixed = Report.from_json(combine.combine([quiet, loud]))
    assert mixed.potential() == [] and mixed.sites[0].did_not_block == 1
    calm = Report.from_json(combine.combine([quiet, quiet2]))
    assert [s.line for s in calm.potential()] == [10]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_small_pageable_copy_behind_a_queue_is_potential_and_a_large_one_blocks():
    import syncscope

    small, large = torch.ones(16), torch.ones(32 << 20)  # 64 B and 128 MiB, pageable
    small.to("cuda", non_blocking=True)  # first copy outside the trap: allocator and staging set up
    torch.cuda.synchronize()
    with syncscope.trap(device="cuda") as t:
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU work queued ahead of the copies
        small.to("cuda", non_blocking=True)
        large.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
    copies = [e for e in t.events if e.kind == "h2d_pageable"]
    assert len(copies) == 2, t.events
    assert copies[0].waited is False, copies[0]
    assert copies[1].waited is True, copies[1]
    report = report_of(list(t.events))
    assert [s.source for s in report.potential()] == [copies[0].source]


def test_console_table_of_the_simulated_device_has_no_time_columns(tmp_path):
    # The simulated device measures no time: columns that could only say n/m are left out, and
    # the title says it once. A GPU report keeps them.
    def table(device: str) -> str:
        report = report_of([event(30, kind="item", blocked_ns=None if device == "sim" else 2 * MS, waited=None)])
        report.meta["device"] = device
        out = tmp_path / f"{device}.txt"
        with open(out, "w") as fh:
            console.render(report, file=fh)
        return out.read_text()

    sim, gpu = table("sim"), table("cuda")
    assert "blocked time not measured on the simulated" in " ".join(sim.split())
    assert "n/m" not in sim and "total ms" not in sim and "mean ms" not in sim and "engine.py:30" in sim
    assert "total ms" in gpu and "mean ms" in gpu and "2.000" in gpu
