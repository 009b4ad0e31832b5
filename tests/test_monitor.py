"""Monitor mode without a Prometheus server: the sampling gate, the site bound, the metrics a
process exports, the Python API, and bad input (one line, exit 2, the program never starts)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.request

import pytest

from syncscope.monitoring.metrics import OTHER, SiteFold, SyncMetrics
from syncscope.monitoring.sampling import Gate, SampledRecorder
from syncscope.runtime import regions
from syncscope.events import Frame, HostSyncEvent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the gate ----------------------------------------------------------------------------------
@pytest.fixture
def gate_in_regions():
    """Installs a gate as region()'s sampler for the test."""
    replaced = []

    def install(gate):
        replaced.append(regions.enter_trap_state(regions.TrapState(sampler=gate)))
        return gate

    yield install
    if replaced:  # the state before the first gate, with its declared flag as it was
        regions.restore_trap_state(replaced[0])


def test_each_outermost_region_is_drawn_once_and_nested_regions_inherit(gate_in_regions):
    reported = []
    gate = gate_in_regions(Gate(0.3, seed=7, on_regions=lambda n, sampled: reported.append((n, sampled))))
    armed_inside = []
    for _ in range(2000):
        with regions.region("step"):
            outer = gate.armed_here()
            with regions.region("inner"):
                armed_inside.append((outer, gate.armed_here()))
        assert not gate.armed_here()  # armed only while the region runs
    assert gate.counts.regions == 2000  # inner regions draw nothing
    assert 0.25 < gate.counts.sampled / 2000 < 0.35
    # The metrics hear of regions at each sampled one (with the unsampled ones before it) and at stop.
    assert len(reported) == gate.counts.sampled and all(s == 1 for _, s in reported)
    gate.stop()
    assert sum(n for n, _ in reported) == 2000 and sum(s for _, s in reported) == gate.counts.sampled
    assert all(outer == inner for outer, inner in armed_inside)


def test_one_region_object_nested_in_itself_and_a_policy_region_keep_their_state_under_a_monitor(gate_in_regions):
    """An unsampled region takes the short path (regions.region.__enter__): a region object
    entered again inside itself, and a region with a policy, must leave the stack, the policy and
    the counts as they were, sampled or not."""
    gate = gate_in_regions(Gate(0.5, seed=3))
    step = regions.region("step")
    armed = []
    for _ in range(400):
        with step:
            assert regions._regions.get() == ("step",)
            with step:
                assert regions._regions.get() == ("step", "step")
                armed.append(gate.armed_here())
            assert regions._regions.get() == ("step",)
        assert regions._regions.get() == () and not gate.armed_here()
        with regions.region("strict", policy="error"):
            assert regions.policy_override() is regions.Policy.ERROR and regions.current_region() == "strict"
        assert regions.policy_override() is None
    assert gate.counts.regions == 800  # two outermost regions a round; the nested entry draws nothing
    assert 0 < sum(armed) < 400


def test_a_scoped_function_under_a_monitor_counts_each_outermost_call_and_restores_the_stack(gate_in_regions):
    """`--scope` and the decorator wrap a function with regions.run_in_region, whose unsampled
    calls make no region object: recursion is nested, an exception leaves the stack as it was."""
    gate = gate_in_regions(Gate(0.5, seed=11))
    seen = []

    @regions.region("step")
    def step(depth):
        seen.append((regions._regions.get(), gate.armed_here()))
        if depth < 0:
            raise KeyError("boom")
        return step(depth - 1) if depth else None

    for _ in range(300):
        step(1)  # and step(0) inside it
        with pytest.raises(KeyError):
            step(-1)
        assert regions._regions.get() == () and not gate.armed_here()
    assert gate.counts.regions == 600
    assert {stack for stack, _ in seen} == {("step",), ("step", "step")}
    assert 0.3 < gate.counts.sampled / 600 < 0.7
    # A nested call inherits its outermost call's decision.
    assert all(seen[i][1] == seen[i + 1][1] for i in range(0, len(seen), 3))


def test_regions_are_sampled_independently_at_the_set_rate(gate_in_regions):
    # The gate draws the gap to the next sampled region instead of one draw per region: the
    # outcome must still be one independent Bernoulli(sample) per region.
    gate = gate_in_regions(Gate(0.2, seed=11))
    picks = []
    for _ in range(20000):
        with regions.region("step"):
            picks.append(gate.armed_here())
    rate = sum(picks) / len(picks)
    assert 0.19 < rate < 0.21
    after_sampled = [b for a, b in zip(picks, picks[1:]) if a]
    after_unsampled = [b for a, b in zip(picks, picks[1:]) if not a]
    assert abs(sum(after_sampled) / len(after_sampled) - 0.2) < 0.02  # no memory of the last draw
    assert abs(sum(after_unsampled) / len(after_unsampled) - 0.2) < 0.02
    assert Gate(1.0)._gap() == 1
    assert Gate(1e-18)._gap() > 10**15  # a valid, tiny rate: no division by zero


def test_regions_entered_from_many_threads_are_all_counted(gate_in_regions):
    reported = []
    gate = gate_in_regions(Gate(0.05, seed=3, on_regions=lambda n, sampled: reported.append((n, sampled))))

    def steps():
        for _ in range(3000):
            with regions.region("step"):
                pass

    threads = [threading.Thread(target=steps) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gate.stop()
    assert gate.counts.regions == 12000
    assert sum(n for n, _ in reported) == 12000 and sum(s for _, s in reported) == gate.counts.sampled
    assert 0.035 < gate.counts.sampled / 12000 < 0.065


def test_the_detector_is_armed_while_any_thread_runs_a_sampled_region(gate_in_regions):
    calls = []
    gate = gate_in_regions(Gate(1.0, arm_detector=lambda: calls.append("arm"), disarm_detector=lambda: calls.append("disarm")))
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        with regions.region("b"):
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other_thread)
    t.start()
    inside.wait(5)
    with regions.region("a"):
        assert calls == ["arm"]  # already armed by the other thread's region: not again
    assert calls == ["arm"]  # the other thread's region still runs
    release.set()
    t.join()
    assert calls == ["arm"]  # at rate 1 the next region is sampled too: the detector stays in
    gate.stop()
    assert calls == ["arm", "disarm"]


def _stretches(picks: list[bool]) -> list[int]:
    """Lengths of the maximal stretches of consecutive sampled regions."""
    lengths, current = [], 0
    for picked in picks + [False]:
        if picked:
            current += 1
        elif current:
            lengths.append(current)
            current = 0
    return lengths


def test_sampled_regions_come_in_runs_that_cover_the_set_rate(gate_in_regions):
    gate = gate_in_regions(Gate(0.05, run_length=8, seed=5))
    picks = []
    for _ in range(60000):
        with regions.region("step"):
            picks.append(gate.armed_here())
    assert 0.045 < sum(picks) / len(picks) < 0.055
    stretches = _stretches(picks)
    # Runs of 8; two runs may follow each other at once (a gap of no region), and the last one
    # may be cut short by the end of the loop.
    assert all(n % 8 == 0 for n in stretches[:-1]), stretches
    assert len(stretches) > 300  # many runs, not one long one
    # The gap between runs is geometric with mean 8 * 0.95 / 0.05 = 152 regions.
    gaps = []
    unsampled = 0
    for picked in picks:
        if picked and unsampled:
            gaps.append(unsampled)
            unsampled = 0
        elif not picked:
            unsampled += 1
    assert 135 < sum(gaps) / len(gaps) < 170


def test_the_detector_is_armed_once_per_run_and_out_between_runs(gate_in_regions):
    state = {"in": False, "arms": 0}

    def arm():
        assert not state["in"]
        state["in"] = True
        state["arms"] += 1

    def disarm():
        assert state["in"]
        state["in"] = False

    gate = gate_in_regions(Gate(0.1, run_length=4, seed=9, arm_detector=arm, disarm_detector=disarm))
    picks = []
    for _ in range(20000):
        with regions.region("step"):
            sampled = gate.armed_here()
            picks.append(sampled)
            assert state["in"] == sampled  # in for every sampled region, out for every other
    assert state["arms"] == len(_stretches(picks))  # once per stretch, not once per region
    assert state["arms"] < sum(picks) / 3
    gate.stop()
    assert not state["in"]


def test_a_thread_outside_sampled_regions_records_nothing(gate_in_regions):
    gate = gate_in_regions(Gate(1.0))
    recorder = SampledRecorder(root=REPO, device="sim")
    recorder.gate = gate
    seen = []
    with regions.region("step"):
        recorder.record("item", "Tensor.item")
        t = threading.Thread(target=lambda: seen.append(recorder.record("item", "Tensor.item")))
        t.start()
        t.join()
    recorder.record("item", "Tensor.item")
    assert seen == [None] and len(recorder.events) == 1
    assert recorder.events[0].site.path == "tests/test_monitor.py"  # the caller's line, not the recorder's


def test_regions_reach_the_metrics_once_a_period_without_a_sampled_region(gate_in_regions):
    """Region mode's flusher: unsampled regions are handed to the metrics every period, not only
    at the next sampled region (a rate over a window would be off by a run's worth at its ends)."""
    import time

    reported = []
    gate = gate_in_regions(Gate(1e-12, period_s=0.05, on_regions=lambda n, sampled: reported.append((n, sampled))))
    gate.start()
    try:
        for _ in range(100):
            with regions.region("step"):
                pass
        deadline = time.monotonic() + 5
        while sum(n for n, _ in reported) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sum(n for n, _ in reported) == 100 and not any(s for _, s in reported)
    finally:
        gate.stop()
    assert sum(n for n, _ in reported) == 100  # stop's flush adds nothing twice


def test_auto_samples_time_slices_until_the_first_region_then_regions(gate_in_regions):
    import time

    hooks = []
    gate = gate_in_regions(Gate(0.5, mode="auto", period_s=0.02, seed=5,
                                arm_detector=lambda: hooks.append("arm"), disarm_detector=lambda: hooks.append("disarm")))
    gate.start()
    try:
        deadline = time.monotonic() + 5
        while hooks.count("arm") < 3 and time.monotonic() < deadline:  # slices arm while no region runs
            time.sleep(0.005)
        assert hooks.count("arm") >= 3 and gate.mode == "auto"
        for _ in range(1000):
            with regions.region("step"):
                pass
        assert gate.mode == "region"
        arms_after_switch = hooks.count("arm")
        time.sleep(0.1)  # five periods: the slicer is gone
        assert gate.counts.regions == 1000 and 0.4 < gate.counts.sampled / 1000 < 0.6
        assert hooks.count("arm") == arms_after_switch
        assert not gate.armed_here()  # outside a region, in region mode
    finally:
        gate.stop()
    assert hooks[-1] == "disarm"


def test_time_slices_arm_for_their_share_of_each_period():
    armed = []
    slices = []
    gate = Gate(0.5, mode="time", period_s=0.1, seed=1, on_slice=lambda a, p: slices.append((a, p)))
    gate.start()
    import time

    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        armed.append(gate.armed_here())
        time.sleep(0.002)
    gate.stop()
    assert not gate.armed_here()
    assert 0.3 < sum(armed) / len(armed) < 0.7
    assert len(slices) >= 7 and all(abs(a - 0.05) < 0.03 and p >= 0.09 for a, p in slices[:-1])


# -- metrics -----------------------------------------------------------------------------------
def _event(path, line, kind="item", blocked_ns=None, function="f"):
    frame = Frame(path, line, function)
    return HostSyncEvent(kind=kind, api="Tensor.item", site=frame, source="", stack=(frame,), thread="t", pid=1,
                         region="step", in_scope=True, blocked_ns=blocked_ns)


def test_sites_past_the_bound_are_counted_as_other():
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    metrics = SyncMetrics(top_sites=3, registry=registry)
    for line in range(1, 7):
        for _ in range(line):
            metrics.observe(_event("serve.py", line, blocked_ns=2_000_000))
    metrics.observe(_event("serve.py", 2, kind="tolist"))  # a known site keeps its label for any kind
    value = registry.get_sample_value
    for line in (1, 2, 3):
        assert value("syncscope_host_syncs_total", {"site": f"serve.py:{line}", "kind": "item", "function": "f"}) == line
    assert value("syncscope_host_syncs_total", {"site": OTHER, "kind": "item", "function": OTHER}) == 4 + 5 + 6
    assert value("syncscope_host_syncs_total", {"site": "serve.py:2", "kind": "tolist", "function": "f"}) == 1
    assert value("syncscope_host_sync_blocked_seconds_total", {"site": "serve.py:3", "kind": "item", "function": "f"}) == pytest.approx(0.006)
    assert value("syncscope_host_sync_blocked_seconds_per_sync_count") == 21  # measured syncs only
    assert value("syncscope_host_sync_blocked_seconds_per_sync_bucket", {"le": "0.005"}) == 21
    assert value("syncscope_host_sync_blocked_seconds_per_sync_bucket", {"le": "0.001"}) == 0
    assert len({s.labels["site"] for m in registry.collect() for s in m.samples if "site" in s.labels}) == 4


def test_site_fold_is_stable_once_full():
    fold = SiteFold(1)
    assert fold.labels("a.py", 1, "f", "item") == ("a.py:1", "item", "f")
    assert fold.labels("a.py", 2, "g", "item") == (OTHER, "item", OTHER)
    assert fold.labels("a.py", 1, "f", "tolist") == ("a.py:1", "tolist", "f")


# -- the Python API ----------------------------------------------------------------------------
API_PROGRAM = textwrap.dedent(
    """
    import json, sys, urllib.request
    import torch
    import syncscope

    mon = syncscope.monitor(sample=1.0, port=int(sys.argv[1]), device="sim", report="r.json")
    x = torch.ones(4, device="cuda")
    for i in range(5):
        with syncscope.region("step"):
            x.sum().item()
    x.sum().item()  # outside every region: not sampled, not counted
    page = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode()
    mon.stop()
    print(json.dumps([line for line in page.splitlines() if line.startswith("syncscope_host_syncs_total")]))
    """
)


def test_the_python_api_serves_metrics_and_writes_a_sampled_report(tmp_path):
    (tmp_path / "prog.py").write_text(API_PROGRAM)
    port = _free_port()
    run = subprocess.run([sys.executable, "prog.py", str(port)], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = json.loads(run.stdout.splitlines()[-1])
    assert lines == ['syncscope_host_syncs_total{function="<module>",kind="item",site="prog.py:10"} 5.0']
    report = json.load(open(tmp_path / "r.json"))
    assert report["sampled"] is True and report["sampling"]["sampled_regions"] == 5
    assert [(s["line"], s["count"]) for s in report["sites"]] == [(10, 5)]


def test_a_monitored_program_that_enters_no_region_is_told_so_unless_sampled_by_time(tmp_path):
    (tmp_path / "prog.py").write_text("import torch\nx = torch.ones(3, device='cuda')\nprint(int(x.sum().item()))\n")
    notice = "the program entered no region"
    for mode, told in (("region", True), ("time", False), ("auto", False)):
        run = subprocess.run(
            [sys.executable, "-m", "syncscope", "run", "--monitor", "--device", "sim", "--sample-by", mode,
             "--metrics-port", str(_free_port()), "-o", f"{mode}.json", "prog.py"],
            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120,
        )
        assert run.returncode == 0 and run.stdout == "3\n", run.stderr
        assert (notice in run.stderr) is told, run.stderr
        sampling = json.load(open(tmp_path / f"{mode}.json"))["sampling"]
        assert sampling["sample_by"] == mode and sampling["mode"] == ("time" if mode == "auto" else mode)


# -- bad input ---------------------------------------------------------------------------------
PROGRAM = "open('started', 'w').close()\n"


def _run_monitor(tmp_path, *options):
    (tmp_path / "prog.py").write_text(PROGRAM)
    return subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--device", "sim", *options, "prog.py"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("sample", ["0", "-0.5", "1.5", "nan"])
def test_a_sample_rate_outside_0_1_is_refused(tmp_path, sample):
    run = _run_monitor(tmp_path, "--sample", sample)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"syncscope: error: --sample {float(sample):g}: must be in (0, 1]"]
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("run_length", ["0", "-3"])
def test_a_sample_run_below_one_region_is_refused(tmp_path, run_length):
    run = _run_monitor(tmp_path, "--sample-run", run_length)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"syncscope: error: --sample-run {run_length}: must be a whole number of regions, at least 1"
    ]
    assert not (tmp_path / "started").exists()


def test_a_port_in_use_is_refused(tmp_path):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = _run_monitor(tmp_path, "--metrics-port", str(port))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"syncscope: error: --metrics-port {port}: cannot listen"), lines
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_an_unwritable_multiprocess_dir_is_refused(tmp_path, where):
    (tmp_path / "a-file").write_text("not a directory")
    run = _run_monitor(tmp_path, "--metrics-port", str(_free_port()), "--metrics-dir", str(tmp_path / where))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"syncscope: error: --metrics-dir {tmp_path / where}: not a writable directory"), lines
    assert not (tmp_path / "started").exists()


def test_an_unwritable_dir_from_the_environment_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("")
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {**_env(), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "a-file")}
    run = subprocess.run([sys.executable, "-m", "syncscope", "run", "--monitor", "--device", "sim", "--metrics-port",
                          str(_free_port()), "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "PROMETHEUS_MULTIPROC_DIR" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "started").exists()


def test_a_monitored_run_that_nobody_scrapes_exits_at_once_with_its_report(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    run = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--device", "sim", "--metrics-port", str(_free_port()),
         "--no-table", "-o", "r.json", "prog.py"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "started").exists()
    report = json.load(open(tmp_path / "r.json"))
    assert report["sampled"] is True and report["sampling"]["rate"] == 0.01
    assert not os.path.exists(report["sampling"]["metrics_dir"])  # the temporary directory is cleaned up


FORK_PROGRAM = textwrap.dedent(
    """
    import multiprocessing as mp
    import torch
    import syncscope

    x = torch.ones(4, device="cuda")

    def steps(n):
        for _ in range(n):
            with syncscope.region("step"):
                x.sum().item()

    if __name__ == "__main__":
        steps(2)
        child = mp.get_context("fork").Process(target=steps, args=(3,))
        child.start()
        child.join()
        assert child.exitcode == 0
        steps(1)
    """
)


def test_a_forked_child_reports_and_counts_only_its_own_regions(tmp_path):
    (tmp_path / "prog.py").write_text(FORK_PROGRAM)
    run = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--sample", "1", "--device", "sim", "--metrics-port",
         str(_free_port()), "--no-table", "-o", "out/r.json", "prog.py"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    parent = json.load(open(tmp_path / "out" / "r.json"))
    (child_path,) = [p for p in (tmp_path / "out").iterdir() if p.name != "r.json"]
    child = json.load(open(child_path))
    assert (parent["sampling"]["regions"], parent["summary"]["in_scope_events"]) == (3, 3)
    assert (child["sampling"]["regions"], child["summary"]["in_scope_events"]) == (3, 3)
    assert child["sampled"] is True


def test_the_metrics_server_listens_on_loopback_unless_told_otherwise(tmp_path):
    # Its labels carry source paths and lines: every interface only when asked (--metrics-addr).
    pytest.importorskip("prometheus_client")
    from syncscope.monitoring.metrics import start_server
    from syncscope.monitoring.session import DEFAULT_ADDR, MonitorOptions

    assert DEFAULT_ADDR == "127.0.0.1" and MonitorOptions().addr == "127.0.0.1"
    for addr, expected in ((DEFAULT_ADDR, "127.0.0.1"), ("0.0.0.0", "0.0.0.0")):
        server, _watch = start_server(0, str(tmp_path), addr)
        try:
            assert server.server_address[0] == expected
        finally:
            server.shutdown()
            server.server_close()


@pytest.mark.parametrize("addr, message", [("not an address", "give an interface's address"), ("203.0.113.7", "cannot listen on 203.0.113.7")])
def test_a_bad_metrics_address_is_refused(tmp_path, addr, message):
    run = _run_monitor(tmp_path, "--metrics-port", str(_free_port()), "--metrics-addr", addr)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("syncscope: error: --metrics-") and message in lines[0], lines
    assert not (tmp_path / "started").exists()
