"""What a little Python work costs when it runs next to a tight step loop, against its cost alone.

A monitor's unsampled region costs ~0.5 us in a loop of regions alone (bench/monitor_overhead.py's
`region_entry_ns`), yet the paired step loop measures it at ~10-16 us per step. This bench puts
one small piece of work before each step of the CPU model of bench/runtime_overhead.py and
reports its paired thread-CPU cost: the region, and its parts alone (the gate's counter step, one
context-variable write, making the region object, one attribute store), and plain against a second
plain arm (what the pairing reads for no work at all). Arms interleaved per
step in a fresh random order; GC off with --no-gc (the effect is not the collector).

    python bench/next_to_step.py [--seconds 150] [--layers 2] [--no-gc]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--no-gc", action="store_true")
    args = parser.parse_args()

    import torch

    import runtime_overhead as ro
    from syncscope.monitoring.sampling import Gate
    from syncscope.runtime import regions

    torch.set_num_threads(1)
    model = ro.build("cpu", layers=args.layers, d=256)
    x, positions, ids = torch.randn(4, 32, 256), torch.arange(32), torch.arange(4)
    gate = Gate(1e-12, seed=0)  # never samples: the monitor's unsampled region
    stack = regions._regions

    def step():
        ro.step(model, x, positions, ids, "cpu")

    def plain():  # the same call structure as the other arms: one function, then the step
        step()

    def region_then_step():
        with regions.region("step"):
            pass
        step()

    def gate_then_step():
        gate.enter()
        step()

    def context_variable_then_step():
        stack.reset(stack.set(("step",)))
        step()

    def region_object_then_step():
        regions.region("step")
        step()

    state = regions.trap_state()  # the idle trap state: the one region entry reads

    def attribute_then_step():
        state.declared = True
        step()

    arms = {"plain": plain, "plain again": plain, "region": region_then_step, "gate": gate_then_step,
            "context variable": context_variable_then_step, "region object": region_object_then_step,
            "attribute store": attribute_then_step}
    isolated = {"plain again": "pass", "region": "with region('step'): pass", "gate": "gate.enter()",
                "context variable": "stack.reset(stack.set(('step',)))", "region object": "region('step')",
                "attribute store": "state.declared = True"}

    def timed(name):
        started = time.thread_time_ns()
        arms[name]()
        return time.thread_time_ns() - started

    state.sampler = gate
    if args.no_gc:
        gc.disable()
    names, times = list(arms), {name: [] for name in arms}
    with torch.inference_mode():
        for name in names:
            timed(name)
        order, started = random.Random(0), time.monotonic()
        while time.monotonic() - started < args.seconds:
            order.shuffle(names)
            for name in names:
                times[name].append(timed(name))
    import timeit

    scope = {"gate": gate, "stack": stack, "region": regions.region, "state": state}
    plain = statistics.median(times["plain"])
    print(f"{len(times['plain'])} rounds, plain step {plain / 1e3:.0f} us (thread CPU), gc {'off' if args.no_gc else 'on'}")
    for name in arms:
        if name == "plain":
            continue
        ratio = statistics.median(t / p for t, p in zip(times[name], times["plain"]))
        alone = min(timeit.repeat(isolated[name], globals=scope, number=100_000, repeat=5)) / 100_000 * 1e9
        print(f"  {name:17s} next to the step {100 * (ratio - 1):+.3f}% = {(ratio - 1) * plain:7.0f} ns; alone {alone:5.0f} ns")
    state.sampler = None


if __name__ == "__main__":
    main()
