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


class Trap:
    """What `syncscope.trap()` yields: the recorder's events while and after the trap runs."""

    def __init__(self, recorder: Recorder, device: str, detector: Detector):
        self.recorder = recorder
        self.device = device
        self.detector = detector  # the pytest plugin re-arms it after pytest's catch_warnings
        self.bubble_window = None  # set by trap(bubbles=True)

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
        window = getattr(self, "bubble_window", None)
        return window.result if window is not None else None


_active: Trap | None = None


def active() -> Trap | None:
    return _active


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
    global _active
    if _active is not None:
        if bubbles:
            raise RuntimeError("bubbles=True needs the outermost trap (a trap is already active)")
        with regions.region("trap", policy=policy) if policy != Policy.RECORD else contextlib.nullcontext():
            yield _active
        return
    resolved = resolve_device(device)
    window = None
    if bubbles:
        from syncscope.runtime.bubble_window import BubbleWindow, check_available

        check_available(resolved)
    detector = make_detector(resolved, time_every_sync=bubbles)
    recorder = Recorder(policy=Policy(policy), allow_rules=tuple(allow), root=root or os.getcwd(), device=resolved)
    if bubbles:
        window = BubbleWindow(recorder, steps=bubble_steps, warmup=bubble_warmup, seconds=bubble_seconds)
    undo_scopes = []
    declared_before = regions.scoping.declared
    detector.install(recorder)
    warning_sites.install()  # warnings raised inside the detector's handlers name the program's line
    try:
        if window is not None:
            window.install()
        undo_scopes = regions.apply_scopes(scope, module_forward)
        _active = Trap(recorder, resolved, detector)
        _active.bubble_window = window
        yield _active
    finally:
        _active = None
        if window is not None:
            window.finish()
            window.uninstall()
        recorder.settle_scope()
        for undo in reversed(undo_scopes):
            undo()
        warning_sites.uninstall()
        detector.uninstall()
        regions.scoping.declared = declared_before


@contextlib.contextmanager
def forbid_syncs(device: str = "auto", reason: str = "forbid_syncs") -> Iterator[Trap]:
    """For tests: raise `HostSyncError` at the first sync inside the block."""
    with trap(device=device) as t, regions.region(reason, policy=Policy.ERROR):
        yield t
