"""What one monitored-but-unsampled region costs next to the launch-bound step of
bench/runtime_overhead.py, against the cheapest `with` Python has (issue 12).

Each arm is one step, paired with a plain step in a fresh random order every round, the time taken
from a synchronize before the step to one after it; the figure per arm is the median paired ratio
with its bootstrap 95% interval. The regions run under a monitor's gate that never samples, so they
take the unsampled path (regions.region.__enter__, regions.run_in_region). Arms:

  plain twin        the same step through a second function: what the pairing reads for nothing
  empty with        `with` a do-nothing class: the floor for any `with` block
  init only         `with` a class that stores a region's three fields: the object
  init + context    the same, with one context-variable write and reset: the region's one mark
  region            `with syncscope.region("step"):`
  scoped            the step wrapped as `--scope` wraps a function (no region object)
  compared          `--compare-with OTHER/syncscope/runtime/regions.py`: another checkout's region

    python bench/region_entry.py [--seconds 100] [--compare-with PATH] [--out r.json]

Runs on a GPU (the step's launches are what the region sits next to); without one, on CPU tensors.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import runtime_overhead as ro  # bench/ is sys.path[0] when run as a script
from paired_stats import median_ratio_interval


class _EmptyWith:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, traceback):
        return False


class _InitOnly:
    __slots__ = ("name", "policy", "_saved")

    def __init__(self, name, *, policy=None):
        self.name = name
        self.policy = policy
        self._saved = None

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, traceback):
        return False


def _init_and_context(regions):
    class InitAndContext(_InitOnly):
        __slots__ = ()

        def __enter__(self):
            self._saved = regions._regions.set((self.name,))

        def __exit__(self, exc_type, exc, traceback):
            regions._regions.reset(self._saved)
            self._saved = None
            return False

    return InitAndContext


def _compared_region(path: str, regions):
    """The `region` class of another checkout's regions.py, defined in this checkout's module so
    that its methods read the live module state (context variables, the trap state's `sampler`)."""
    source = open(path).read()
    start, end = source.index("class region:"), source.index("    def __call__(self, func")
    exec(source[start:end].replace("class region:", "class _compared_region:"), vars(regions))
    return vars(regions).pop("_compared_region")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--compare-with", help="another checkout's syncscope/runtime/regions.py, as one more arm")
    parser.add_argument("--out")
    args = parser.parse_args()

    import torch

    from syncscope.monitoring.sampling import Gate
    from syncscope.runtime import regions

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if not cuda:
        torch.set_num_threads(1)
    torch.manual_seed(0)
    init_and_context = _init_and_context(regions)
    compared = _compared_region(args.compare_with, regions) if args.compare_with else None
    with torch.inference_mode():
        model = ro.build(device, layers=args.layers)
        x = torch.randn(4, 32, 256, device=device)
        positions = torch.arange(32, device=device)
        ids = torch.arange(4).pin_memory() if cuda else torch.arange(4)

        def step():
            ro.step(model, x, positions, ids, device)

        def plain():
            step()

        def plain_twin():
            step()

        def empty_with():
            with _EmptyWith():
                step()

        def init_only():
            with _InitOnly("step"):
                step()

        def init_context():
            with init_and_context("step"):
                step()

        def region():
            with regions.region("step"):
                step()

        scoped = regions.run_in_region(step, "step")

        def compared_region():
            with compared("step"):
                step()

        arms = {"plain": plain, "plain twin": plain_twin, "empty with": empty_with, "init only": init_only,
                "init + context": init_context, "region": region, "scoped": scoped}
        if compared is not None:
            arms["compared"] = compared_region

        def timed(arm):
            sync()
            started = time.perf_counter()
            arm()
            sync()
            return time.perf_counter() - started

        regions.trap_state().sampler = Gate(1e-12, seed=0)  # a monitor that (almost) never samples
        try:
            for _ in range(20):
                for arm in arms.values():
                    timed(arm)
            times = {name: [] for name in arms}
            names, order, started = list(arms), random.Random(1), time.monotonic()
            while time.monotonic() - started < args.seconds:
                order.shuffle(names)
                for name in names:
                    times[name].append(timed(arms[name]))
        finally:
            regions.trap_state().sampler = None

    plain_s = statistics.median(times["plain"])
    result = {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
              "rounds": len(times["plain"]), "plain_step_ms": plain_s * 1e3, "arms": {}}
    print(f"{result['device']}: {result['rounds']} rounds, plain step {plain_s * 1e3:.3f} ms")
    for name in arms:
        if name == "plain":
            continue
        estimate = median_ratio_interval(times["plain"], times[name], resamples=1000)
        extra_us = (estimate.median - 1) * plain_s * 1e6
        result["arms"][name] = {"ratio": estimate.median, "ci95": [estimate.low, estimate.high], "us": extra_us}
        print(f"  {name:15s} {100 * (estimate.median - 1):+.3f}% = {extra_us:6.1f} us "
              f"(95% CI {100 * (estimate.low - 1):+.3f}%..{100 * (estimate.high - 1):+.3f}%)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
