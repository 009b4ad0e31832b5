"""The Python API: `with syncscope.trap() as t:` and `syncscope.forbid_syncs()`.

A trap installs one detector (real CUDA, or the simulated device when there is no GPU), feeds it
a `Recorder`, and takes it out again on exit. One trap is active per process at a time: the
detectors patch process-wide torch entry points.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator, Protocol

from syncscope.runtime import regions, warning_sites
from syncscope.events import HostSyncEvent
from syncscope.runtime.policy import Policy
from syncscope.runtime.recorder import AllowRule, Recorder

DEVICES = ("auto", "cuda", "sim")


class Detector(Protocol):
    name: str

    def install(self, recorder: Recorder) -> None: ...

    def uninstall(self) -> None: ...


class DeviceUnavailable(RuntimeError):
    pass


def resolve_device(device: str) -> str:
    """`auto` means the real GPU when torch sees one, else the simulated device."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: choose one of {', '.join(DEVICES)}")
    if device == "sim":
        return _simulated()
    import torch

    has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        raise DeviceUnavailable(
            "--device cuda: torch sees no CUDA device here. Use --device sim (the simulated device) "
            "or --device auto."
        )
    return "cuda" if has_cuda else _simulated()


def _simulated() -> str:
    from syncscope.runtime.sim.device_count import simulated_device_count

    simulated_device_count()  # a bad SYNCSCOPE_SIM_DEVICES: ValueError now, one line from the CLI
    return "sim"


def make_detector(device: str, *, time_every_sync: bool = False) -> Detector:
    """On a GPU: the quiet detector where Python has `sys.monitoring` (3.12+) to time waits with,
    else the detector that wraps every entry point that can sync and so times every sync, the
    first at each line too (docs/runtime.md compares them). `time_every_sync` (the bubble
    window, which gives each idle gap to a timed wait) or SYNCSCOPE_CUDA_SHIMS=1 asks for it."""
    if device == "cuda":
        from syncscope.runtime import site_timer

        shims = time_every_sync or os.environ.get("SYNCSCOPE_CUDA_SHIMS", "") not in ("", "0")
        if site_timer.AVAILABLE and not shims:
            from syncscope.runtime.quiet_cuda import QuietCudaDetector

            return QuietCudaDetector()
        from syncscope.runtime.cuda import CudaDetector

        return CudaDetector()
    from syncscope.runtime.sim import SimulatedCudaDetector

    return SimulatedCudaDetector()


class Trap(regions.TrapState):
    """One active trap, and what `syncscope.trap()` yields: it owns the recorder, the detector,
    the scopes it applied and, as the trap state that region entry reads (`regions.TrapState`,
    one reference), the monitor's sampling gate or the bubble window's step observer.

    `trap()` (below), the monitor's sampled trap (monitoring/trap.py: a gate, a detector the gate
    switches, no warning-site hook) and the bubble window (`trap(bubbles=True)`) are
    configurations of it. `start()` puts the parts in, `stop()` takes them out in the reverse
    order; one trap is active per process (the detectors patch process-wide torch entry points)."""

    def __init__(self, recorder: Recorder, device: str, detector: Detector, *, gate=None, bubble_window=None,
                 scope: Iterable[str] = (), module_forward: bool = False, warning_sites: bool = True):
        super().__init__()
        if gate is not None and bubble_window is not None:
            # Region entry relies on it: an unsampled step does not look for a step observer.
            raise ValueError("a trap samples (monitor) or profiles a bubble window, not both")
        self.recorder = recorder
        self.device = device
        self.detector = detector  # the pytest plugin re-arms it after pytest's catch_warnings
        self.gate = gate  # monitor mode: monitoring/sampling.py's Gate
        self.bubble_window = bubble_window  # trap(bubbles=True): runtime/bubble_window.py
        self._scope = (tuple(scope), module_forward)
        self._warning_sites = warning_sites
        self.running = False
        self._teardown: contextlib.ExitStack | None = None

    def start(self) -> "Trap":
        """Put every part in, in order; what is in is taken out again if a later part fails."""
        parts = contextlib.ExitStack()
        try:
            parts.callback(regions.restore_trap_state, regions.enter_trap_state(self))
            self.detector.install(self.recorder)
            parts.callback(self.detector.uninstall)
            if self._warning_sites:  # warnings raised inside the detector's handlers name the program's line
                warning_sites.install()
                parts.callback(warning_sites.uninstall)
            scope, module_forward = self._scope
            for undo in regions.apply_scopes(scope, module_forward):
                parts.callback(undo)
            # Once the run is over, its events take the trap's final scoping (before the scopes
            # and the declared flag go).
            parts.callback(self.recorder.settle_scope)
            if self.bubble_window is not None:
                parts.callback(self._end_window)
                self.recorder.on_sync = self.bubble_window.on_sync
                self.step_observer = self.bubble_window
            if self.gate is not None:
                parts.callback(self._end_sampling)
                if self.gate.mode != "time":  # auto too: its first region turns it to region sampling
                    self.sampler = self.gate
                self.gate.start()
        except BaseException:
            parts.close()
            raise
        self._teardown = parts
        self.running = True
        return self

    def _end_window(self) -> None:
        self.bubble_window.finish()
        self.step_observer = None
        self.recorder.on_sync = None

    def _end_sampling(self) -> None:
        self.sampler = None  # first: no region may arm the detector once the gate stops
        self.gate.stop()

    def stop(self) -> None:
        """Take the parts out (once); the events stay."""
        self.running = False  # no longer `active()`: a trap opened from here on is its own
        parts, self._teardown = self._teardown, None
        if parts is not None:
            parts.close()

    def __enter__(self) -> "Trap":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def events(self) -> list[HostSyncEvent]:
        return self.recorder.events

    @property
    def in_scope(self) -> list[HostSyncEvent]:
        return self.recorder.in_scope_events()

    def sites(self) -> list:
        from syncscope.report.aggregate import sites_from_events

        return sites_from_events(self.recorder.events, self.bubbles)

    @property
    def bubbles(self):
        """With `trap(bubbles=True)`: the profiled window's `WindowResult` once the trap has
        ended (gaps, causes, totals), else None."""
        return self.bubble_window.result if self.bubble_window is not None else None


def active() -> Trap | None:
    """The trap running in this process (a forked child's copy of its parent's too), if any."""
    state = regions.trap_state()
    return state if isinstance(state, Trap) and state.running else None


@contextlib.contextmanager
def trap(
    device: str = "auto",
    policy: Policy | str = Policy.RECORD,
    *,
    allow: Iterable[AllowRule] = (),
    scope: Iterable[str] = (),
    module_forward: bool = False,
    root: str | None = None,
    bubbles: bool = False,
    bubble_steps: int = 20,
    bubble_warmup: int = 3,
    bubble_seconds: float = 10.0,
) -> Iterator[Trap]:
    """Record every host sync in the block. Nested traps reuse the outer one (with the inner
    policy applied to the block).

    `bubbles=True` (CUDA only) also profiles a window of the run and attributes the GPU's idle
    gaps to the syncs that caused them (docs/bubbles.md): `bubble_steps` top-level regions after
    `bubble_warmup` ones, or, in a program without regions, from its first sync for at most
    `bubble_seconds`. The result is `Trap.bubbles` once the block has ended."""
    outer = active()
    if outer is not None:
        if bubbles:
            raise RuntimeError("bubbles=True needs the outermost trap (a trap is already active)")
        with regions.region("trap", policy=policy) if policy != Policy.RECORD else contextlib.nullcontext():
            yield outer
        return
    resolved = resolve_device(device)
    if bubbles:
        from syncscope.runtime.bubble_window import check_available

        check_available(resolved)
    detector = make_detector(resolved, time_every_sync=bubbles)
    recorder = Recorder(policy=Policy(policy), allow_rules=tuple(allow), root=root or os.getcwd(), device=resolved)
    window = None
    if bubbles:
        from syncscope.runtime.bubble_window import BubbleWindow

        window = BubbleWindow(recorder, steps=bubble_steps, warmup=bubble_warmup, seconds=bubble_seconds)
    with Trap(recorder, resolved, detector, bubble_window=window, scope=scope, module_forward=module_forward) as t:
        yield t


@contextlib.contextmanager
def forbid_syncs(device: str = "auto", reason: str = "forbid_syncs") -> Iterator[Trap]:
    """For tests: raise `HostSyncError` at the first sync inside the block."""
    with trap(device=device) as t, regions.region(reason, policy=Policy.ERROR):
        yield t
