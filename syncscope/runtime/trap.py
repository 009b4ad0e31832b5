"""The Python API: `with syncscope.trap() as t:` and `syncscope.forbid_syncs()`.

A trap installs one detector (real CUDA, or the simulated device when there is no GPU), feeds it
a `Recorder`, and takes it out again on exit. One trap is active per process at a time: the
detectors patch process-wide torch entry points.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator, Protocol

from syncscope.runtime import regions
from syncscope.runtime.events import HostSyncEvent
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
        return "sim"
    import torch

    has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        raise DeviceUnavailable(
            "--device cuda: torch sees no CUDA device here. Use --device sim (the simulated device) "
            "or --device auto."
        )
    return "cuda" if has_cuda else "sim"


def make_detector(device: str) -> Detector:
    if device == "cuda":
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

    @property
    def events(self) -> list[HostSyncEvent]:
        return self.recorder.events

    @property
    def in_scope(self) -> list[HostSyncEvent]:
        return self.recorder.in_scope_events()

    def sites(self) -> list:
        from syncscope.report.model import sites_from_events

        return sites_from_events(self.recorder.events)


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
) -> Iterator[Trap]:
    """Record every host sync in the block. Nested traps reuse the outer one (with the inner
    policy applied to the block)."""
    global _active
    if _active is not None:
        with regions.region("trap", policy=policy) if policy != Policy.RECORD else contextlib.nullcontext():
            yield _active
        return
    resolved = resolve_device(device)
    detector = make_detector(resolved)
    recorder = Recorder(policy=Policy(policy), allow_rules=tuple(allow), root=root or os.getcwd(), device=resolved)
    undo_scopes = []
    declared_before = regions.scoping.declared
    detector.install(recorder)
    try:
        undo_scopes = regions.apply_scopes(scope, module_forward)
        _active = Trap(recorder, resolved, detector)
        yield _active
    finally:
        _active = None
        recorder.settle_scope()
        for undo in reversed(undo_scopes):
            undo()
        detector.uninstall()
        regions.scoping.declared = declared_before


@contextlib.contextmanager
def forbid_syncs(device: str = "auto", reason: str = "forbid_syncs") -> Iterator[Trap]:
    """For tests: raise `HostSyncError` at the first sync inside the block."""
    with trap(device=device) as t, regions.region(reason, policy=Policy.ERROR):
        yield t
