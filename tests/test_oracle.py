"""The blocking-line oracle on the CPU: tracer line attribution, the queue ahead of each line,
calibration, min-over-repeats, verdicts, the report, --compare, --scope patching, the CLI (with a
fake GPU) and its no-GPU error. GPU tests live in test_oracle_gpu.py."""

from __future__ import annotations

import functools
import inspect
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from syncscope.oracle import verdict as V
from syncscope.oracle.api import measure_function
from syncscope.oracle.compare import compare
from syncscope.oracle.measure import CallSample, FunctionId, OracleSession, PassRecord, measured_code
from syncscope.oracle.report import BLOCKED_LINE, build_oracle_report, oracle_lines, oracle_section
from syncscope.oracle.scopes import Scopes, ScopeSpec, names_main, patch_module_spec
from syncscope.oracle.timing import Calibration, CalibrationError, IdlePrimer, QueuedPrimer, calibrate
from syncscope.oracle.tracer import SettraceLineTimer, available_tracers, make_line_timer
from syncscope.report.aggregate import build_report
from syncscope.report.schema import Report
from syncscope.events import Frame, HostSyncEvent
from tests.test_oracle_support import FakeClock, FakeGpu

ROOT = Path(__file__).resolve().parent.parent
MS = 1_000_000


def marks(func) -> dict[str, int]:
    """Line numbers of `# L:name` markers in func's source."""
    lines, start = inspect.getsourcelines(func)
    found = {}
    for offset, text in enumerate(lines):
        if "# L:" in text:
            found[text.split("# L:")[1].split()[0]] = start + offset
    return found


def fake_session(clock=None, *, repeat=3, warmup=1, tracer="auto", **kw):
    clock = clock or FakeClock()
    gpu = FakeGpu(clock)
    cal = calibrate(gpu, clock, 25 * MS)
    return OracleSession(gpu, clock, cal, make_line_timer(tracer), repeat=repeat, warmup=warmup, **kw), gpu, clock


# ---------------------------------------------------------------------------------------------
# tracer: which lines, in which frame


def helper(i):
    inner = i * 2  # L:helper
    return inner


def traced_target(n):
    x = 0  # L:first
    for i in range(n):  # L:for
        x += helper(i)  # L:body
    return x  # L:ret


def recursive(n):
    if n == 0:  # L:test
        return 0
    return recursive(n - 1) + 1  # L:recurse


def raising(n):
    y = n + 1  # L:before
    raise KeyError(y)  # L:raise


def spawns_same_code(depth):
    if depth == 0:  # L:check
        t = threading.Thread(target=spawns_same_code, args=(1,))  # L:make
        t.start()
        t.join()
        return 0
    other_thread_only = 1  # L:other
    return other_thread_only


def run_timer(tracer, func, *args):
    seen = []
    value = make_line_timer(tracer).run(measured_code(func), seen.append, func, args, {})
    return value, seen


@pytest.mark.parametrize("tracer", available_tracers())
def test_tracer_times_only_the_measured_frame(tracer):
    value, seen = run_timer(tracer, traced_target, 3)
    m, h = marks(traced_target), marks(helper)
    assert value == 6
    assert seen[0] == m["first"] and seen[-1] is None
    assert seen.count(m["body"]) == 3
    assert seen.count(m["for"]) >= 3
    assert m["ret"] in seen
    assert h["helper"] not in seen  # a deeper call belongs to the calling line
    assert set(seen) - {None} <= set(m.values())


@pytest.mark.parametrize("tracer", available_tracers())
def test_tracer_ignores_recursive_frames_and_other_threads(tracer):
    _, seen = run_timer(tracer, recursive, 3)
    m = marks(recursive)
    assert seen.count(m["test"]) == 1 and seen.count(m["recurse"]) == 1
    _, seen = run_timer(tracer, spawns_same_code, 0)
    assert marks(spawns_same_code)["other"] not in seen


@pytest.mark.parametrize("tracer", available_tracers())
def test_tracer_closes_the_last_line_on_exception_and_restores_tracing(tracer):
    before = sys.gettrace()
    with pytest.raises(KeyError):
        run_timer(tracer, raising, 1)
    seen = []
    with pytest.raises(KeyError):
        make_line_timer(tracer).run(measured_code(raising), seen.append, raising, (1,), {})
    m = marks(raising)
    assert seen[:2] == [m["before"], m["raise"]] and seen[-1] is None
    assert sys.gettrace() is before


def test_tracer_choice():
    assert make_line_timer("settrace").name == "settrace"
    expected = "monitoring" if hasattr(sys, "monitoring") else "settrace"
    assert make_line_timer("auto").name == expected or os.environ.get("SYNCSCOPE_ORACLE_TRACER")
    with pytest.raises(ValueError):
        make_line_timer("perf")
    if not hasattr(sys, "monitoring"):
        with pytest.raises(ValueError, match="3.12"):
            make_line_timer("monitoring")


def test_measured_code_unwraps_decorators_and_rejects_generators():
    def deco(f):
        @functools.wraps(f)
        def inner(*a, **k):
            return f(*a, **k)

        return inner

    assert measured_code(deco(traced_target)) is traced_target.__code__

    def gen():
        yield 1

    with pytest.raises(ValueError, match="generator"):
        measured_code(gen)
    with pytest.raises(ValueError):
        measured_code(len)


# ---------------------------------------------------------------------------------------------
# calibration and the queue ahead of each line


def test_calibration_converges_to_the_target():
    clock = FakeClock()
    gpu = FakeGpu(clock, ns_per_cycle=0.5)
    cal = calibrate(gpu, clock, 25 * MS)
    assert abs(cal.sleep_ns - 25 * MS) <= 0.15 * 25 * MS
    assert cal.cycles == pytest.approx(50_000_000, rel=0.16)
    assert cal.to_json()["device"] == "fake:0"


def test_calibration_gives_up_on_a_device_that_does_not_sleep():
    clock = FakeClock()
    gpu = FakeGpu(clock, ns_per_cycle=0.0)  # sleeping takes no time at all
    with pytest.raises(CalibrationError):
        calibrate(gpu, clock, 25 * MS, rounds=4)
    with pytest.raises(ValueError):
        calibrate(gpu, clock, 0)


def test_recheck_sees_a_clock_change():
    from syncscope.oracle.timing import recheck

    clock = FakeClock()
    gpu = FakeGpu(clock, ns_per_cycle=0.5)
    cal = calibrate(gpu, clock, 25 * MS)
    assert recheck(gpu, clock, cal) == pytest.approx(cal.sleep_ns, rel=0.01)
    gpu.ns_per_cycle = 0.25  # the clock doubled
    assert recheck(gpu, clock, cal) == pytest.approx(cal.sleep_ns / 2, rel=0.02)


def test_queue_is_chained_after_a_free_line_and_refilled_after_a_blocked_one():
    clock = FakeClock()
    gpu = FakeGpu(clock)
    primer = QueuedPrimer(gpu, clock, Calibration("fake", 50_000_000, 25 * MS))
    primer.start()
    ahead = primer.before_line()
    assert gpu.sleeps == 1 and 24 * MS < ahead <= 25 * MS
    clock.advance(1 * MS)  # a free line
    ahead2 = primer.before_line()
    assert gpu.sleeps == 1, "a free line leaves its sleep running: reuse it"
    assert ahead2 == pytest.approx(ahead - 1 * MS, abs=20_000)
    gpu.sync()  # a blocked line: the sleep is done
    primer.before_line()
    assert gpu.sleeps == 2
    clock.advance(13 * MS)  # below low water (12.5 ms): drain and refill
    primer.before_line()
    assert gpu.sleeps == 3
    gpu.stream = ("fake", 7)  # the program switched streams
    primer.before_line()
    assert gpu.sleeps == 4


def test_idle_primer_drains_before_every_line():
    clock = FakeClock()
    gpu = FakeGpu(clock)
    gpu.launch(5 * MS)
    assert IdlePrimer(gpu).before_line() == 0
    assert clock.now >= gpu.busy_until


# ---------------------------------------------------------------------------------------------
# whole measurements with a fake GPU and clock


def program(g):
    a = 1  # L:free
    g.launch(1 * MS)  # L:launch
    g.sync()  # L:sync
    ev = g.record()  # L:record
    g.wait_event(ev)  # L:event_sync
    g.host(30 * MS)  # L:host_heavy
    for i in range(4):  # L:for
        if i == 2: g.sync()  # L:sometimes
    return a  # L:ret


@pytest.mark.parametrize("tracer", available_tracers())
def test_session_verdicts_on_a_fake_gpu(tracer):
    session, gpu, _ = fake_session(tracer=tracer)
    measured = measure_function(program, gpu, session=session)
    m = marks(program)
    verdicts = measured.verdicts()
    assert measured.value == 1
    assert verdicts[m["sync"]] == V.BLOCKED
    assert verdicts[m["event_sync"]] == V.BLOCKED, "a wait on an event recorded on the previous line"
    assert verdicts[m["sometimes"]] == V.BLOCKED
    for name in ("free", "launch", "record", "host_heavy", "for", "ret"):
        assert verdicts[m[name]] == V.FREE, name
    by_line = {r.line: r for r in measured.lines}
    sometimes = by_line[m["sometimes"]]
    assert [h.verdict for h in sometimes.hits] == [V.FREE, V.FREE, V.BLOCKED, V.FREE]
    assert by_line[m["sync"]].ratio == pytest.approx(1.0, abs=0.1)
    assert by_line[m["host_heavy"]].hits[0].host_ns >= 30 * MS  # slow on the host, yet free
    sample = session.samples[-1]
    assert len(sample.queued) == 3 and len(sample.idle) == 3 and all(p.completed for p in sample.queued)


STALLS: list[int] = []


def stalls_once(g):
    g.host(STALLS.pop(0) if STALLS else 0)  # L:stall
    g.sync()  # L:sync
    return 0


def test_minimum_over_repeats_drops_a_one_off_stall():
    session, gpu, _ = fake_session(repeat=3)
    # calls: warm-up, then queued/idle x3; only the first queued pass stalls 20 ms
    STALLS[:] = [0, 20 * MS, 0, 0, 0, 0, 0]
    m = marks(stalls_once)
    v = measure_function(stalls_once, gpu, session=session).verdicts()
    assert v[m["stall"]] == V.FREE and v[m["sync"]] == V.BLOCKED
    # the same stall in every queued pass is not a one-off: it counts
    STALLS[:] = [0, 20 * MS, 0, 20 * MS, 0, 20 * MS, 0]
    v = measure_function(stalls_once, gpu, session=session).verdicts()
    assert v[m["stall"]] == V.BLOCKED


def test_with_one_repeat_a_stall_is_not_filtered():
    session, gpu, _ = fake_session(repeat=1)
    STALLS[:] = [0, 4 * MS, 0]
    v = measure_function(stalls_once, gpu, session=session).verdicts()
    assert v[marks(stalls_once)["stall"]] == V.UNCERTAIN


def outer_scoped(g, inner):
    inner(g)  # L:call_inner
    return 1


def test_wrapper_skip_calls_nesting_and_exceptions():
    session, gpu, _ = fake_session(repeat=1, warmup=0, calls=2, skip=1)
    calls = []

    def body(g):
        calls.append(1)
        g.sync()

    wrapped = session.wrap(body, "body")
    wrapped(gpu)  # skipped
    assert session.samples == [] and len(calls) == 1
    wrapped(gpu)  # measured: queued + idle pass
    assert len(session.samples) == 1 and len(calls) == 3
    wrapped(gpu)
    wrapped(gpu)  # after `calls` measured calls: passes through
    assert len(session.samples) == 2 and len(calls) == 6

    session, gpu, _ = fake_session(repeat=1, warmup=0)
    inner = session.wrap(body, "body")
    outer = session.wrap(outer_scoped, "outer")
    # body is called inside outer's measurement: it passes through, timed as outer's line
    outer(gpu, inner)
    assert [s.function.label for s in session.samples] == ["outer"]
    assert len(session.samples[0].queued[0].hits) == 2  # outer's own two lines only
    verdicts = V.analyse(session.samples)
    assert [r.verdict for r in verdicts] == [V.BLOCKED, V.FREE]
    inner(gpu)  # calls made inside outer's measurement did not count: this is body's first
    assert [s.function.label for s in session.samples] == ["outer", "body"]

    def fails(g):
        g.sync()
        raise RuntimeError("boom")

    failing = session.wrap(fails, "fails")
    with pytest.raises(RuntimeError, match="boom"):
        failing(gpu)
    assert session.samples[-1].queued and not session.samples[-1].queued[0].completed
    assert session.samples[-1].queued[0].hits  # partial pass kept


# ---------------------------------------------------------------------------------------------
# verdicts from hand-made passes


def sample_of(queued, idle, filename="/proj/m.py"):
    s = CallSample(FunctionId(filename, "step", 10, "m:step"))
    for hits in queued:
        p = PassRecord("queued")
        for line, hs in hits.items():
            for h in hs:
                p.add(line, *h)
        s.queued.append(p)
    for hits in idle:
        p = PassRecord("idle")
        for line, hs in hits.items():
            for h in hs:
                p.add(line, h, 0)
        s.idle.append(p)
    return s


def test_thresholds():
    t = V.Thresholds()
    assert t.classify(0.5) == V.BLOCKED and t.classify(0.49) == V.UNCERTAIN
    assert t.classify(0.1) == V.UNCERTAIN and t.classify(0.0999) == V.FREE
    assert V.Thresholds(0.8, 0.2).classify(0.7) == V.UNCERTAIN
    with pytest.raises(ValueError):
        V.Thresholds(0.1, 0.5)
    with pytest.raises(ValueError):
        V.Thresholds(0.5, 0)


def test_analyse_takes_min_ratio_per_hit_and_subtracts_idle_time():
    s = sample_of(
        queued=[
            {11: [(20 * MS, 20 * MS)], 12: [(9 * MS, 20 * MS), (100, 20 * MS)]},
            {11: [(19 * MS, 20 * MS)], 12: [(1 * MS, 20 * MS), (15 * MS, 20 * MS)]},
        ],
        idle=[{11: [5 * MS], 12: [50, 60]}, {11: [4 * MS], 12: [40]}],
    )
    hits = V.analyse_sample(s)
    line11 = hits[11][0]
    assert line11.idle_ns == 4 * MS and line11.host_ns == 19 * MS
    assert line11.ratio == pytest.approx(15 / 20) and line11.verdict == V.BLOCKED
    assert [h.verdict for h in hits[12]] == [V.FREE, V.FREE]  # each hit keeps its own best pass
    assert hits[12][1].idle_ns == 60  # only the first idle pass had a second hit
    (result,) = [r for r in V.analyse([s]) if r.line == 11]
    assert result.verdict == V.BLOCKED and result.function == "step" and result.label == "m:step"


def test_analyse_aggregates_calls_and_handles_missing_idle_hits():
    a = sample_of([{5: [(10 * MS, 10 * MS)]}], [{}])
    b = sample_of([{5: [(100, 10 * MS)]}], [{5: [50]}])
    (r,) = V.analyse([a, b])
    assert len(r.hits) == 2 and r.verdict == V.BLOCKED
    assert r.hits[0].idle_ns == 0
    j = r.to_json("m.py")
    assert j["blocked_hits"] == 1 and j["hits"] == 2 and j["verdict"] == "blocked"
    assert j["blocked_wait_ns"] == 10 * MS


# ---------------------------------------------------------------------------------------------
# report, compare, rendering


def _results_for_program(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text("def step(x):\n    a = x + 1\n    b = a.item()\n    c = ext_sync(a)\n    return b, c\n")
    s = sample_of(
        queued=[{2: [(100, 20 * MS)], 3: [(20 * MS, 20 * MS)], 4: [(21 * MS, 20 * MS)], 5: [(100, 20 * MS)]}],
        idle=[{2: [90], 3: [50], 4: [70], 5: [60]}],
        filename=str(src),
    )
    return V.analyse([s])


def _oracle_report(tmp_path):
    results = _results_for_program(tmp_path)
    section = oracle_section(results, str(tmp_path), calibration=None, thresholds=V.Thresholds(), settings={"repeat": 1}, cost={})
    return build_oracle_report(results, {"project_root": str(tmp_path), "device": "cuda", "status": "completed"}, str(tmp_path), section), section


def test_oracle_report_has_blocked_sites_and_every_line(tmp_path):
    report, section = _oracle_report(tmp_path)
    data = json.loads(json.dumps(report.to_json()))
    again = Report.from_json(data)
    assert [(s.line, s.kind) for s in sorted(again.sites, key=lambda s: s.line)] == [(3, BLOCKED_LINE), (4, BLOCKED_LINE)]
    site = min(again.sites, key=lambda s: s.line)
    assert site.path == "prog.py" and site.function == "step" and site.source == "b = a.item()"
    assert site.count == 1 and site.blocked_ns == 20 * MS - 50 and site.in_scope and site.fingerprint
    assert [(l["line"], l["verdict"]) for l in oracle_lines(again)] == [(2, "free"), (3, "blocked"), (4, "blocked"), (5, "free")]
    assert oracle_lines(Report([], [], {})) == []


def _hook_report(root, sites):
    events = [
        HostSyncEvent(kind=k, api="x", site=Frame(p, l, "step"), source="", stack=tuple(Frame(*f, "f") for f in stack), thread="t", pid=1, region=None, in_scope=True)
        for p, l, k, stack in sites
    ]
    return build_report(events, {"project_root": root})


def test_compare_names_blind_spots_and_the_reverse(tmp_path):
    _, section = _oracle_report(tmp_path)
    other_root = str(tmp_path / "elsewhere")
    hook = _hook_report(
        str(tmp_path),
        [
            ("prog.py", 3, "item", []),  # agreed
            ("prog.py", 2, "h2d_copy", []),  # the hook reports a line that did not block
            (str(tmp_path / "lib.py"), 40, "stream_sync", []),  # outside the traced functions
        ],
    )
    result = compare(section["lines"], str(tmp_path), hook)
    assert [l["line"] for l in result.blind_spots] == [4]
    assert [l["line"] for l, _ in result.agreed] == [3]
    assert [(l["line"], [s.kind for s in sites]) for l, sites in result.hook_only] == [(2, ["h2d_copy"])]
    assert len(result.outside) == 1
    assert result.to_json()["blind_spots"][0]["source"] == "c = ext_sync(a)"
    # a sync inside a helper matches the traced calling line through the stack; roots may differ
    hook2 = _hook_report(other_root, [("../helper.py", 9, "stream_sync", [("../prog.py", 4)])])
    result2 = compare(section["lines"], str(tmp_path), hook2)
    assert [l["line"] for l in result2.blind_spots] == [3] and [l["line"] for l, _ in result2.agreed] == [4]


def test_source_view_and_comparison_render(tmp_path):
    import io

    from syncscope.oracle import render

    _, section = _oracle_report(tmp_path)
    out = io.StringIO()
    render.render_source(section["lines"], str(tmp_path), file=out)
    text = out.getvalue()
    row = next(l for l in text.splitlines() if "a.item()" in l)
    assert "BLOCKED" in row and "20.00" in row
    assert "BLOCKED" not in next(l for l in text.splitlines() if "a = x + 1" in l)
    assert "2 blocked" in text
    hook = _hook_report(str(tmp_path), [("prog.py", 2, "h2d_copy", [])])
    out = io.StringIO()
    render.render_comparison(compare(section["lines"], str(tmp_path), hook), "hook.json", file=out)
    text = out.getvalue()
    assert "hook blind spots" in text and "prog.py:3" in text and "prog.py:4" in text
    assert "did not block" in text and "h2d_copy" in text
    out = io.StringIO()
    render.render_summary(section, "r.json", file=out)
    assert "2 blocked" in out.getvalue()


# ---------------------------------------------------------------------------------------------
# --scope


class Holder:
    def method(self, x):
        return x + 1

    @staticmethod
    def static(x):
        return x + 2

    @classmethod
    def klass(cls, x):
        return x + 3


def plain(x):
    return x * 10


def _recording_wrap(log):
    def wrap(func, label):
        @functools.wraps(func)
        def w(*a, **k):
            log.append(label)
            return func(*a, **k)

        return w

    return wrap


def test_scope_spec_parsing():
    assert ScopeSpec.parse("a.b:C.d") == ScopeSpec("a.b", ("C", "d"), "a.b:C.d")
    for bad in ("a.b", ":f", "a:", "a:b-c", "a:b..c"):
        with pytest.raises(ValueError):
            ScopeSpec.parse(bad)


def test_module_specs_patch_functions_and_methods_and_undo():
    log = []
    wrap = _recording_wrap(log)
    me = __name__
    undo = [patch_module_spec(ScopeSpec.parse(f"{me}:{name}"), wrap) for name in ("plain", "Holder.method", "Holder.static", "Holder.klass")]
    try:
        assert sys.modules[me].plain(1) == 10
        assert Holder().method(1) == 2 and Holder.static(1) == 3 and Holder.klass(1) == 4
        assert log == [f"{me}:plain", f"{me}:Holder.method", f"{me}:Holder.static", f"{me}:Holder.klass"]
    finally:
        for fn in reversed(undo):
            fn()
    assert isinstance(vars(Holder)["static"], staticmethod) and not hasattr(vars(Holder)["method"], "__wrapped__")
    with pytest.raises(AttributeError):
        patch_module_spec(ScopeSpec.parse(f"{me}:Holder.nope"), wrap)


def test_main_specs_are_patched_when_the_script_defines_them(tmp_path):
    from syncscope.runtime import runner

    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\n"
        "class K:\n"
        "    def m(self):\n"
        "        return 5\n"
        "def step(n):\n"
        "    return n + 1\n"
        "if __name__ == '__main__':\n"
        "    print(step(1), K().m())\n"
        "    sys.exit(0 if step(2) == 3 else 1)\n"
    )
    log = []
    assert names_main(ScopeSpec.parse("__main__:f"), None, "x.py", False)
    # `prog` resolves, from the script's own directory as the program sees it, to the script itself
    scopes = Scopes(["__main__:step", "prog:K.m"], _recording_wrap(log), target=str(script), module=False)
    assert len(scopes.main_specs) == 2 and "prog" not in sys.modules
    before = sys.gettrace()
    scopes.apply()
    try:
        outcome = runner.run_target(str(script), [])
    finally:
        scopes.restore()
    assert outcome.exit_code == 0
    assert log == ["__main__:step", "prog:K.m", "__main__:step"]
    assert scopes.never_defined() == [] and sys.gettrace() is before


def test_scopes_need_at_least_one_spec():
    with pytest.raises(ValueError, match="--scope"):
        Scopes([], lambda f, l: f, target="x.py", module=False)


# ---------------------------------------------------------------------------------------------
# the command


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(_has_cuda(), reason="tests the no-GPU message")
def test_cli_without_a_gpu_says_so_and_exits_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "oracle", "--scope", "tests.catalog.sync_catalog:run_catalog",
         "-o", str(tmp_path / "r.json"), "tests/catalog/sync_catalog.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "needs a real CUDA GPU" in proc.stderr and "is_available() is False" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r.json").exists()


def test_cli_usage_errors_exit_2(tmp_path):
    from typer.testing import CliRunner

    from syncscope.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["oracle", "x.py"])
    assert result.exit_code == 2 and "--scope" in result.output
    result = runner.invoke(app, ["oracle", "--scope", "m:f", "--compare", str(tmp_path / "missing.json"), "x.py"])
    assert result.exit_code == 2 and "no such report" in result.output
    result = runner.invoke(app, ["oracle", "--scope", "m:f", "--blocked-at", "0.05", "x.py"])
    assert result.exit_code == 2 and "thresholds" in result.output


FAKE_PROGRAM = """\
import sys
from tests import test_oracle_support as support


def step(n):
    g = support.CURRENT
    g.launch(100_000)
    g.sync()  # an extension's cudaStreamSynchronize: no hook sees it
    total = n + 1
    return total


if __name__ == "__main__":
    print("result", step(1), step(2))
    sys.exit(3)
"""


def test_cli_end_to_end_with_a_fake_gpu(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import tests.test_oracle_support as support
    from syncscope.cli import app
    from syncscope.oracle import cuda as oracle_cuda
    from syncscope.atomic import write_json_atomic
    from syncscope.report.schema import load_report

    script = tmp_path / "fake_prog.py"
    script.write_text(FAKE_PROGRAM)
    monkeypatch.setattr(oracle_cuda, "require_cuda", lambda: None)
    monkeypatch.setattr(oracle_cuda, "CudaGpu", lambda: support.realtime_gpu())
    monkeypatch.chdir(tmp_path)
    hook = _hook_report(str(tmp_path), [("fake_prog.py", 9, "h2d_copy", [])])  # `total = n + 1`
    write_json_atomic(str(tmp_path / "hook.json"), hook.to_json())
    result = CliRunner().invoke(
        app,
        ["oracle", "--scope", "__main__:step", "--repeat", "2", "--sleep-ms", "8", "--tracer", "settrace",
         "--compare", "hook.json", "-o", "oracle.json", str(script)],
    )
    assert result.exit_code == 3, result.output
    assert "result 2 3" in result.output
    report = load_report(str(tmp_path / "oracle.json"))
    assert [(s.line, s.kind, s.function) for s in report.sites] == [(8, BLOCKED_LINE, "step")]
    verdicts = {l["line"]: l["verdict"] for l in oracle_lines(report)}
    assert verdicts == {6: "free", 7: "free", 8: "blocked", 9: "free", 10: "free"}
    section = report.meta["oracle"]
    assert section["repeat"] == 2 and section["tracer"] == "settrace" and section["cost"]["measured_calls"] == 1
    assert abs(section["calibration"]["after_ns"] - section["calibration"]["sleep_ns"]) < 0.5 * section["calibration"]["sleep_ns"]
    assert [l["line"] for l in section["compare"]["blind_spots"]] == [8]
    assert [l["line"] for l in section["compare"]["hook_only"]] == [9]
    assert report.meta["exit_code"] == 3 and report.meta["tool"]["mode"] == "oracle"
    assert "hook blind spots" in result.output and "BLOCKED" in result.output


def test_cuda_gpu_uses_the_current_stream_and_a_non_blocking_marker():
    """The tiny GPU layer, wired to a stand-in for torch (the real one is exercised on the device)."""
    from types import SimpleNamespace

    from syncscope.oracle.cuda import CudaGpu

    log = []

    class Event:
        def record(self):
            log.append("record")

        def query(self):
            log.append("query")
            return False

    cuda = SimpleNamespace(
        current_device=lambda: 0,
        get_device_name=lambda i: "Fake H100",
        synchronize=lambda: log.append("synchronize"),
        _sleep=lambda cycles: log.append(("sleep", cycles)),
        Event=Event,
        current_stream=lambda: SimpleNamespace(device_index=0, cuda_stream=42),
    )
    gpu = CudaGpu(SimpleNamespace(cuda=cuda))
    assert gpu.device == "cuda:0 (Fake H100)"
    assert gpu.sleep_done()  # nothing queued yet
    gpu.sleep(12.0)
    assert gpu.sleep_done() is False
    gpu.drain()
    assert log == [("sleep", 12), "record", "query", "synchronize"]
    assert gpu.stream_key() == (0, 42)


def test_torch_has_what_the_gpu_layer_calls():
    torch = pytest.importorskip("torch")
    for name in ("_sleep", "synchronize", "Event", "current_stream", "current_device", "get_device_name", "is_available"):
        assert hasattr(torch.cuda, name), name
    assert hasattr(torch.cuda.Event, "query") and hasattr(torch.cuda.Event, "record")
    if torch.cuda.is_available():  # a CPU build's Stream is a stub
        assert isinstance(torch.cuda.current_stream().cuda_stream, int)


def test_baseline_and_gate_read_an_oracle_report(tmp_path):
    from typer.testing import CliRunner

    from syncscope.cli import app
    from syncscope.atomic import write_json_atomic

    report, _ = _oracle_report(tmp_path)
    path, base = str(tmp_path / "oracle.json"), str(tmp_path / "base.json")
    write_json_atomic(path, report.to_json())
    runner = CliRunner()
    created = runner.invoke(app, ["baseline", "create", path, "-o", base])
    assert created.exit_code == 0, created.output
    gated = runner.invoke(app, ["gate", path, "-b", base])
    assert gated.exit_code == 0 and "2 site(s)" in gated.output, gated.output
    shown = runner.invoke(app, ["report", path])
    assert shown.exit_code == 0 and "blocked_line" in shown.output


@pytest.mark.parametrize("tracer", available_tracers())
def test_every_tracer_passes_its_self_check(tracer):
    from syncscope.oracle.tracer import MonitoringLineTimer, works

    timer = SettraceLineTimer() if tracer == "settrace" else MonitoringLineTimer()
    assert works(timer)

    class Broken:
        name = "broken"

        def run(self, code, boundary, func, args, kwargs):
            return func(*args, **kwargs)  # reports no line at all

    assert not works(Broken())


def test_cli_from_a_saved_report_compares_without_a_gpu(tmp_path):
    from typer.testing import CliRunner

    from syncscope.cli import app
    from syncscope.atomic import write_json_atomic

    report, _ = _oracle_report(tmp_path)
    write_json_atomic(str(tmp_path / "oracle.json"), report.to_json())
    write_json_atomic(str(tmp_path / "hook.json"), _hook_report(str(tmp_path), [("prog.py", 3, "item", [])]).to_json())
    runner = CliRunner()
    result = runner.invoke(app, ["oracle", "--from", str(tmp_path / "oracle.json"), "--compare", str(tmp_path / "hook.json")])
    assert result.exit_code == 0, result.output
    assert "hook blind spots" in result.output and "prog.py:4" in result.output and "BLOCKED" in result.output
    result = runner.invoke(app, ["oracle", "--from", str(tmp_path / "hook.json")])
    assert result.exit_code == 2 and "not an oracle report" in result.output
    result = runner.invoke(app, ["oracle", "--from", str(tmp_path / "oracle.json"), "prog.py"])
    assert result.exit_code == 2


def test_a_call_behind_the_queue_waits_for_it_only_if_it_syncs():
    from syncscope.oracle.timing import wait_behind_queue

    clock = FakeClock()
    gpu = FakeGpu(clock, ns_per_cycle=0.5)
    cal = calibrate(gpu, clock, 25 * MS)
    assert wait_behind_queue(gpu, clock, cal, gpu.drain) > 0.9  # waits for the sleep queued ahead
    assert wait_behind_queue(gpu, clock, cal, lambda: clock.advance(MS)) == pytest.approx(0.04, abs=0.01)
    assert gpu.busy_until <= clock.now  # every repeat drained what it queued
