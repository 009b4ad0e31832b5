"""Where an unsampled monitor region's cost lies next to a launch-bound step: the region as it is,
and context managers that each do one of its parts, as arms of one run.

The monitor's figure (bench/monitor_overhead.py) is dominated by the unsampled region: ~1 us in a
loop of regions alone, several us next to the step (bench/next_to_step.py: the step evicts the
interpreter's data). This bench asks which part pays: the context-variable write (set + reset,
which allocate), the gate's counter, or the `with` itself, and what a region that marks its
nesting with a per-thread counter instead of a context variable would cost. Arms interleaved in
a fresh random order each round, one step per round, median paired wall ratio against `plain`
with a bootstrap 95% interval.

    python bench/region_variants.py [--max-seconds 240] [--rounds 6000] [--layers 12] [--out r.json]
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import random
import statistics
import sys
import threading
import time
from asyncio import _get_running_loop as _running_loop
from threading import get_ident as _thread_id

HERE = os.path.dirname(os.path.abspath(__file__))

_stack: contextvars.ContextVar[tuple] = contextvars.ContextVar("bench_stack", default=())
_STEP = ("step",)


class NullWith:
    """The floor: a `with` that does nothing."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, traceback):
        return False


class ContextVarOnly:
    """Only the region's context-variable write and its reset."""

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = _stack.set(_STEP)

    def __exit__(self, exc_type, exc, traceback):
        _stack.reset(self._token)
        return False


class GateOnly:
    """Only the gate's counter step and comparison."""

    __slots__ = ("gate",)

    def __init__(self, gate):
        self.gate = gate

    def __enter__(self):
        gate = self.gate
        if next(gate.entries) >= gate.next_sampled:
            raise AssertionError("the bench's gate never samples")

    def __exit__(self, exc_type, exc, traceback):
        return False


class _Depth(threading.local):
    depth = 0


class LocalDepth:
    """The gate's step plus a per-thread nesting counter instead of the context variable."""

    __slots__ = ("gate", "_depth")

    def __init__(self, gate):
        self.gate = gate
        self._depth = _Depth()

    def __enter__(self):
        depth = self._depth
        if depth.depth:
            depth.depth += 1
            return
        gate = self.gate
        if next(gate.entries) >= gate.next_sampled:
            raise AssertionError("the bench's gate never samples")
        depth.depth = 1

    def __exit__(self, exc_type, exc, traceback):
        self._depth.depth -= 1
        return False


class Holder:
    """A region's unsampled path that marks its nesting on the gate instead of a context variable:
    `_regions.get()` (is a region of the context-variable path open?), the gate's step, the
    thread's id (and, with `probe`, whether an event loop runs in it: tasks share a thread) kept on
    the gate while the region is open, and nothing allocated."""

    __slots__ = ("gate", "probe", "holder")

    def __init__(self, gate, probe):
        self.gate = gate
        self.probe = probe
        gate.holder = None

    def __enter__(self):
        if _stack.get():
            raise AssertionError("no context-variable region is open in this bench")
        gate = self.gate
        if gate.holder is not None:
            raise AssertionError("the bench never nests")
        if next(gate.entries) >= gate.next_sampled:
            raise AssertionError("the bench's gate never samples")
        if self.probe and _running_loop() is not None:
            raise AssertionError("no event loop runs in the bench")
        gate.holder = _thread_id()

    def __exit__(self, exc_type, exc, traceback):
        self.gate.holder = None
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6000)
    parser.add_argument("--max-seconds", type=float, default=240.0)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--out")
    args = parser.parse_args()

    import torch

    sys.path.insert(0, HERE)
    import runtime_overhead as ro
    from paired_stats import median_ratio_interval

    from syncscope.monitoring.sampling import Gate
    from syncscope.runtime import regions

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    if not cuda:
        torch.set_num_threads(1)
    sync = ro._HARNESS_SYNC if cuda else (lambda: None)
    gate = Gate(1e-12, seed=0)  # never samples: every region is the monitor's unsampled one
    regions.trap_state().sampler = gate
    reused = regions.region("step")
    scoped_step = regions.run_in_region(ro.step, "step")
    managers = {"null_with": NullWith(), "context_variable": ContextVarOnly(), "gate_only": GateOnly(gate),
                "local_depth": LocalDepth(gate), "region_reused": reused,
                "holder": Holder(Gate(1e-12, seed=0), probe=True), "holder_no_probe": Holder(Gate(1e-12, seed=0), probe=False)}
    arms = ["plain", "region", "scoped", *managers]

    def run(name):
        sync()
        t0 = time.perf_counter()
        if name == "plain":
            ro.step(model, x, positions, ids, device)
        elif name == "region":
            with regions.region("step"):
                ro.step(model, x, positions, ids, device)
        elif name == "scoped":
            scoped_step(model, x, positions, ids, device)
        else:
            with managers[name]:
                ro.step(model, x, positions, ids, device)
        sync()
        return time.perf_counter() - t0

    wall = {name: [] for name in arms}
    with torch.inference_mode():
        model = ro.build(device, layers=args.layers)
        x = torch.randn(4, 32, 256, device=device)
        positions = torch.arange(32, device=device)
        ids = torch.arange(4).pin_memory() if cuda else torch.arange(4)
        for _ in range(5):
            for name in arms:
                run(name)
        order, started = random.Random(1), time.monotonic()
        for _ in range(args.rounds):
            names = list(arms)
            order.shuffle(names)
            for name in names:
                wall[name].append(run(name))
            if time.monotonic() - started > args.max_seconds:
                break
    regions.trap_state().sampler = None
    result = {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "rounds": len(wall["plain"]),
        "plain_step_ms": statistics.median(wall["plain"]) * 1e3,
        "wall_ratio_by_arm": {name: median_ratio_interval(wall["plain"], wall[name], resamples=1000).to_json()
                              for name in arms if name != "plain"},
    }
    print(f"{result['device']}, {result['rounds']} rounds, plain step {result['plain_step_ms']:.3f} ms")
    for name, r in result["wall_ratio_by_arm"].items():
        low, high = r["ci95"]
        print(f"  {name:17s} {100 * (r['median'] - 1):+.3f}% ({100 * (low - 1):+.3f}..{100 * (high - 1):+.3f})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
