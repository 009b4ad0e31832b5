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
from syncscope.runtime.policy import Policy
from syncscope.runtime.trap import Trap, active, make_detector


class _SwitchedDetector:
    """Installs a fresh detector when the first sampled region starts and takes it out when the
    last one ends (real GPU only: its shims and torch's debug mode then cost nothing). To the
    trap it is the detector: installing it puts nothing in (the gate arms it), taking it out
    disarms it."""

    def __init__(self, device: str, recorder):
        self.device = device
        self.recorder = recorder
        self.current = None
        self.arms = 0  # how often it was installed, for tests and the bench
        # One detector, installed again for each sampled step: it keeps the ~40 shims it made, so
        # arming does not build them again (only a few small wrappers, c10d's and the capture
        # watch's, are made anew).
        self._detector = None

    def install(self, recorder) -> None:
        """The trap starts: nothing goes in until the gate arms a sampled region."""

    def uninstall(self) -> None:
        self.disarm()

    def arm(self) -> None:
        if self.current is None:
            if self._detector is None:
                self._detector = make_detector(self.device)
            self._detector.install(self.recorder)
            self.current = self._detector
            self.arms += 1

    def disarm(self) -> None:
        if self.current is not None:
            detector, self.current = self.current, None
            detector.uninstall()


@contextlib.contextmanager
def sampled_trap(session, device: str, policy, *, allow=(), scope=(), module_forward=False, root=None) -> Iterator[Trap]:
    """The trap in monitor mode: a `Trap` with a sampling gate, a sampled recorder and, on a real
    GPU, a detector the gate switches in and out. The simulated device runs the program, so its
    detector stays in for the whole run."""
    if active() is not None:
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
    detector = switched or make_detector(device)
    # No warning-site hook: the sampled trap has never installed one, and this keeps it as it was.
    with Trap(recorder, device, detector, gate=gate, scope=scope, module_forward=module_forward, warning_sites=False) as t:
        yield t
