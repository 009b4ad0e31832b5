"""Where an installed trap's cost goes on the sync-free step of bench/runtime_overhead.py (GPU).

Each arm, every round and in a fresh random order: the class and module changes an install makes
(`touch_like_an_install`, so every arm starts from the same disturbed interpreter state), the arm's
own entry, `--warmup` untimed steps, then `--steps` timed steps. Paired ratios against torch's
sync-debug mode alone, wall and the launching thread's CPU time, with bootstrap 95% intervals.

* `trap`: `syncscope.trap()` as a user enters it.
* `trap_old_harness`: the same, with the harness's closing `torch.cuda.synchronize()` looked up at
  call time, as bench/runtime_overhead.py did before 2026-11-27: through the trap's shim, so each
  round also pays for recording one explicit sync (the event, its stack and source line).
* `trap_no_shims`: the trap with a detector that wraps nothing (everything else of the install).
* `pt_*`: debug mode plus pass-through Python functions in place of the entry points the quiet
  detector wraps (all, the number dunders of `torch.Tensor`, its other methods, torch's module
  functions): what Python attributes on those classes cost, with no work of ours in them.

    python bench/trap_warm_parts.py [--warmup 20] [--steps 5] [--seconds 300]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from paired_stats import median_ratio_interval  # noqa: E402

import runtime_overhead as ro  # noqa: E402
import syncscope  # noqa: E402
from syncscope.runtime import cuda, quiet_cuda  # noqa: E402

NUMBER_DUNDERS = {"__bool__", "__int__", "__float__", "__index__"}


def _pass_through(owner, name):
    original = getattr(owner, name)

    def pass_through(*args, **kwargs):
        return original(*args, **kwargs)

    return pass_through


@contextlib.contextmanager
def pass_through_arm(select):
    torch.cuda.set_sync_debug_mode("warn")
    saved = []
    for spec in cuda._shim_specs():
        if spec.api in quiet_cuda.UNWRAPPED or not select(spec):
            continue
        saved.append((spec.owner, spec.name, vars(spec.owner).get(spec.name), spec.name in vars(spec.owner)))
        setattr(spec.owner, spec.name, _pass_through(spec.owner, spec.name))
    try:
        yield
    finally:
        for owner, name, original, had in reversed(saved):
            setattr(owner, name, original) if had else delattr(owner, name)
        torch.cuda.set_sync_debug_mode(0)


@contextlib.contextmanager
def trap_without_shims():
    wrapped = quiet_cuda.QuietCudaDetector._wrapped
    quiet_cuda.QuietCudaDetector._wrapped = lambda self, specs: []
    try:
        with syncscope.trap(device="cuda"):
            yield
    finally:
        quiet_cuda.QuietCudaDetector._wrapped = wrapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=300.0)
    args = parser.parse_args()
    tensor = torch.Tensor
    arms = {
        "debug_mode_only": ro.debug_mode_arm,
        "trap": ro.trap_arm,
        "trap_old_harness": ro.trap_arm,
        "trap_no_shims": trap_without_shims,
        "pt_all": lambda: pass_through_arm(lambda s: True),
        "pt_number_dunders": lambda: pass_through_arm(lambda s: s.owner is tensor and s.name in NUMBER_DUNDERS),
        "pt_tensor_methods": lambda: pass_through_arm(lambda s: s.owner is tensor and s.name not in NUMBER_DUNDERS),
        "pt_module_functions": lambda: pass_through_arm(lambda s: s.owner is not tensor),
    }
    looked_up = lambda: torch.cuda.synchronize()  # noqa: E731  the old harness: through the trap's shim
    wall = {name: [] for name in arms}
    cpu = {name: [] for name in arms}
    torch.manual_seed(0)
    with torch.inference_mode():
        model = ro.build("cuda")
        x = torch.randn(4, 32, 256, device="cuda")
        positions = torch.arange(32, device="cuda")
        pinned = torch.arange(4).pin_memory()
        for _ in range(3):
            ro.time_steps(model, x, positions, pinned, "cuda", 20)
        order = random.Random(1)
        started = time.monotonic()
        rounds = 0
        while time.monotonic() - started < args.seconds:
            names = list(arms)
            order.shuffle(names)
            for name in names:
                ro.touch_like_an_install()
                sync = looked_up if name == "trap_old_harness" else None
                with arms[name]():
                    ro.time_steps(model, x, positions, pinned, "cuda", args.warmup, sync)
                    w, c = ro.time_steps(model, x, positions, pinned, "cuda", args.steps, sync)
                wall[name].append(w)
                cpu[name].append(c)
            rounds += 1
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Python {sys.version.split()[0]}: {rounds} rounds "
          f"of {args.steps} steps after {args.warmup}; step under debug mode {statistics.median(wall['debug_mode_only']) * 1e3:.3f} ms")
    for name in arms:
        if name == "debug_mode_only":
            continue
        w = median_ratio_interval(wall["debug_mode_only"], wall[name])
        c = median_ratio_interval(cpu["debug_mode_only"], cpu[name])
        print(f"  {name:20s} vs debug mode: wall {100 * (w.median - 1):+.2f}% ({100 * (w.low - 1):+.2f} .. {100 * (w.high - 1):+.2f}), "
              f"thread CPU {100 * (c.median - 1):+.2f}% ({100 * (c.low - 1):+.2f} .. {100 * (c.high - 1):+.2f})")


if __name__ == "__main__":
    main()
