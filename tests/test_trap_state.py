"""The trap as one object (runtime/trap.py's `Trap`): region entry reads the trap in force
through one reference (`regions.trap_state()`), a trap puts itself in force while it runs and
gives back the state it replaced, and whatever a failed start put in is taken out again.

A fake detector stands in for the real ones: these are about the parts' order, not about syncs."""

from __future__ import annotations

import pickle

import pytest

from syncscope.runtime import regions
from syncscope.runtime.recorder import Recorder
from syncscope.runtime.trap import Trap, active


class FakeDetector:
    name = "fake"

    def __init__(self, log: list):
        self.log = log

    def install(self, recorder) -> None:
        self.log.append("install")

    def uninstall(self) -> None:
        self.log.append("uninstall")


class FakeGate:
    """What a Trap asks of a sampling gate (monitoring/sampling.py's `Gate`)."""

    def __init__(self, log: list, mode: str = "region"):
        self.log, self.mode = log, mode

    def start(self) -> None:
        self.log.append("gate start")

    def stop(self) -> None:
        self.log.append("gate stop")


@pytest.fixture
def idle_state():
    """A fresh idle state, no scope declared, given back after the test."""
    state = regions.TrapState()
    previous = regions.enter_trap_state(state)
    state.declared = False
    yield state
    regions.restore_trap_state(previous)


def test_a_trap_is_in_force_while_it_runs_and_gives_back_the_state_it_replaced(idle_state):
    log = []
    with Trap(Recorder(), "sim", FakeDetector(log)) as t:
        assert regions.trap_state() is t and active() is t
        assert not t.declared and regions.in_scope()  # no scope yet: the whole program counts
        with regions.region("step"):
            assert regions.in_scope()
        assert t.declared  # a region inside the trap declares a scope for the trap...
    assert regions.trap_state() is idle_state and active() is None
    assert not idle_state.declared  # ...and the state the trap replaced keeps its own
    assert log == ["install", "uninstall"]


def test_a_scope_declared_before_the_trap_counts_inside_it(idle_state):
    with regions.region("warmup"):
        pass
    assert idle_state.declared
    with Trap(Recorder(), "sim", FakeDetector([])) as t:
        assert t.declared and not regions.in_scope()


def test_a_monitor_gate_is_region_entrys_sampler_only_while_the_trap_runs(idle_state):
    log = []
    gate = FakeGate(log)
    with Trap(Recorder(), "sim", FakeDetector(log), gate=gate, warning_sites=False) as t:
        assert t.sampler is gate and t.step_observer is None
    assert t.sampler is None and idle_state.sampler is None
    assert log == ["install", "gate start", "gate stop", "uninstall"]


def test_a_time_sliced_gate_is_not_region_entrys_sampler(idle_state):
    with Trap(Recorder(), "sim", FakeDetector([]), gate=FakeGate([], mode="time")) as t:
        assert t.sampler is None


def test_the_bubble_window_is_the_step_observer_and_the_recorders_sync_hook_while_the_trap_runs(idle_state):
    class Window:
        finished = False

        def on_sync(self, *args):
            pass

        def finish(self):
            self.finished = True

    window = Window()
    recorder = Recorder()
    with Trap(recorder, "sim", FakeDetector([]), bubble_window=window) as t:
        assert t.step_observer is window and recorder.on_sync == window.on_sync
    assert window.finished and t.step_observer is None and recorder.on_sync is None


def test_a_trap_does_not_sample_and_profile_a_bubble_window_at_once():
    # Region entry relies on it: an unsampled step does not look for a step observer.
    with pytest.raises(ValueError, match="not both"):
        Trap(Recorder(), "sim", FakeDetector([]), gate=FakeGate([]), bubble_window=object())


def test_a_failed_start_takes_out_what_went_in(idle_state):
    log = []
    trap = Trap(Recorder(), "sim", FakeDetector(log), scope=["syncscope_no_such_module:f"])
    with pytest.raises(ImportError):
        trap.start()
    assert log == ["install", "uninstall"]
    assert regions.trap_state() is idle_state and active() is None and not trap.running


def test_the_monitors_child_trap_travels_to_a_spawned_child(tmp_path):
    """ChildConfig.child_trap is pickled into spawned children with their config."""
    from syncscope.monitoring.session import MonitorOptions

    options = MonitorOptions(port=None, directory=str(tmp_path))
    travelled = pickle.loads(pickle.dumps(options.child_trap))
    assert travelled.__self__ == options and travelled.__func__ is MonitorOptions.child_trap
