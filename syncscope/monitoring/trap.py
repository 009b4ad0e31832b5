"""The sampled trap: `syncscope.trap()`'s counterpart for monitor mode.

It differs from the trap in two ways: the recorder keeps only the syncs of sampled regions (and
counts each in the metrics), and on a real GPU the detector is installed only while a sampled
region (or time slice) is running anywhere in the process.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from syncscope.monitoring.sampling import Gate, SampledRecorder
from syncscope.runtime import regions
from syncscope.runtime import trap as trap_module
from syncscope.runtime.policy import Policy


class _SwitchedDetector:
    """Installs a fresh detector when the first sampled region starts and takes it out when the
    last one ends (real GPU only: its shims and torch's debug mode then cost nothing)."""

    def __init__(self, device: str, recorder):
        self.device = device
        self.recorder = recorder
        self.current = None
        self.arms = 0  # how often it was installed, for tests and the bench
        # One detector, installed again for each sampled step: it keeps the ~40 shims it made, so
        # arming does not build them again (only a few small wrappers, c10d's and the capture
        # watch's, are made anew).
        self._detector = None

    def arm(self) -> None:
        if self.current is None:
            if self._detector is None:
                self._detector = trap_module.make_detector(self.device)
            self._detector.install(self.recorder)
            self.current = self._detector
            self.arms += 1

    def disarm(self) -> None:
        if self.current is not None:
            detector, self.current = self.current, None
            detector.uninstall()


@contextlib.contextmanager
def sampled_trap(session, device: str, policy, *, allow=(), scope=(), module_forward=False, root=None) -> Iterator:
    if trap_module.active() is not None or regions.sampler is not None:
        raise RuntimeError("a syncscope trap or monitor is already active in this process")
    options = session.options
    recorder = SampledRecorder(policy=Policy(policy), allow_rules=tuple(allow), root=root or os.getcwd(), device=device)
    metrics = session.make_metrics()
    switched = _SwitchedDetector(device, recorder) if device == "cuda" else None
    gate = Gate(
        options.sample,
        mode=options.mode,
        run_length=options.run_length,
        period_s=options.period_s,
        seed=options.seed,
        arm_detector=switched.arm if switched else None,
        disarm_detector=switched.disarm if switched else None,
        on_regions=metrics.on_regions,
        on_slice=metrics.on_slice,
    )
    recorder.gate, recorder.metrics = gate, metrics
    recorder.report_meta = session.report_meta  # a child's report is marked sampled too
    session.gate = gate
    resident = None
    if switched is None:  # the simulated device runs the program: it stays in for the whole run
        resident = trap_module.make_detector(device)
        resident.install(recorder)
    declared_before = regions.scoping.declared
    undo_scopes = []
    try:
        undo_scopes = regions.apply_scopes(scope, module_forward)
        if options.mode != "time":  # auto too: its first region turns it to region sampling
            regions.sampler = gate
        gate.start()
        active = trap_module.Trap(recorder, device, resident or switched)
        trap_module._active = active
        yield active
    finally:
        trap_module._active = None
        regions.sampler = None
        gate.stop()
        if switched is not None:
            switched.disarm()
        recorder.settle_scope()
        for undo in reversed(undo_scopes):
            undo()
        if resident is not None:
            resident.uninstall()
        regions.scoping.declared = declared_before

