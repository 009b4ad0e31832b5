"""What one recorded sync costs the host in the recorder (CPU is enough): the walk to the user's
frames, the site, the event.

A program under the trap syncs from the same few stacks step after step (the naive serving loop of
examples/ has 13 sites for 156 syncs). The recorder keeps what each call site needs once it is
worked out (runtime/user_frames.py, `sites`); this measures that against working every frame out
again, side by side in one run: each arm records `--syncs` syncs from a stack `--depth` frames
deep, the arms alternate in a fresh random order each round, and the figure is each arm's median
thread-CPU time per sync over the rounds, and their ratio.

  record        `Recorder.record` as detectors call it (what a sync costs the host)
  record_fresh  the same with the recorder's site memory emptied before every sync (as before it
                kept one)
  walk          `Recorder.user_stack` alone
  walk_fresh    the same, memory emptied before every walk

    python bench/record_cost.py [--rounds 30] [--syncs 200] [--depth 16]

Not measured here: the wait itself (the CUDA detector times it separately) and the NVTX mark
(a no-op without a profiler attached).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from syncscope.runtime.recorder import Recorder  # noqa: E402


def _at_depth(depth: int, fn):
    """Call `fn` from `depth` frames of this file (the user's stack a sync is attributed to)."""
    if depth == 0:
        return fn()
    return _at_depth(depth - 1, fn)


def _arm(recorder: Recorder, name: str, syncs: int) -> float:
    """Thread-CPU seconds per sync for one arm."""
    fresh = name.endswith("_fresh")
    walk = name.startswith("walk")
    sites = recorder._sites
    frame_of_caller = sys._getframe

    def run() -> float:
        started = time.thread_time()
        for _ in range(syncs):
            if fresh:
                sites.clear()
            if walk:
                recorder.user_stack(frame_of_caller(0))
            else:
                recorder.record("item", "Tensor.item", blocked_ns=1)
        return (time.thread_time() - started) / syncs

    return run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--syncs", type=int, default=200)
    parser.add_argument("--depth", type=int, default=16)
    args = parser.parse_args()
    recorder = Recorder(root=os.getcwd())
    arms = ["record", "record_fresh", "walk", "walk_fresh"]
    times: dict[str, list[float]] = {name: [] for name in arms}
    order = random.Random(1)
    for _ in range(args.rounds):
        order.shuffle(arms)
        for name in arms:
            times[name].append(_at_depth(args.depth, lambda name=name: _arm(recorder, name, args.syncs)))
            recorder.events.clear()
    frames = len(_at_depth(args.depth, lambda: recorder.user_stack(sys._getframe(0))))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{frames} user frames per stack, {args.rounds} rounds of {args.syncs} syncs, thread CPU per sync (median):")
    for name in ("record", "record_fresh", "walk", "walk_fresh"):
        print(f"  {name:13s} {median[name] * 1e6:8.1f} us")
    print(f"  record: the kept sites cost {median['record'] / median['record_fresh']:.2f}x of working every frame out; "
          f"walk alone {median['walk'] / median['walk_fresh']:.2f}x")


if __name__ == "__main__":
    main()
