"""Overhead of the runtime trap on a sync-free step loop, next to its peers (run on the GPU machine).

A small transformer-like forward (196 kernel launches a step, small enough to be launch-bound,
which is where per-call overhead shows) is timed under each arm, the arms interleaved in a fresh
random order each round in one process: `plain`, `debug_mode_only` (torch's
`set_sync_debug_mode("warn")` alone), `trap` (`syncscope.trap()`: the quiet detector on Python
3.12+), `trap_all_shims` (the detector that wraps every entry point that can sync: the one before,
and Python 3.11's), `trap+keeper` (what `syncscope run` adds: the report kept on disk),
`profiler` and `profiler_stacks` (`torch.profiler`, CPU + CUDA, without and with stacks; only in
the first --profiler-rounds rounds: they cost tens of percent). Each figure is the median of the
per-round paired ratios with a bootstrap 95% interval (`paired_stats.py`), against plain and
against debug mode alone (the issue's figure: the trap at most 0.5 points above it). Rounds are
added until the trap-to-debug-mode interval is at most `--target-width` wide, or for at most
`--max-seconds`.

An install changes `torch.Tensor` and torch's modules, and CPython re-specialises the code that
touches them only after some runs: the steps right after an install are slower whatever the
detector does per call (`type_touched_cold`: one attribute set on `torch.Tensor` and taken off;
`trap_cold`: the trap with no warm-up). Every other arm runs `--warmup-steps` untimed steps
first; `--equalize` also makes the plain and debug-mode arms change the classes as an install
does, so the arms differ only by what a trap costs once in (as in a `syncscope run`, which
installs once).

Before the rounds, `shim_breakdown` counts the step's calls of every entry point the detectors
can wrap (calls per step) and says which the quiet detector wraps; `--per-call` also times each
call in a loop, isolated (on a GPU such a loop measures the launch queue as much as the host).

    python bench/runtime_overhead.py [--steps 5] [--rounds 201] [--max-seconds 420] [--equalize] [--out result.json]

Without a GPU, `--cpu` times the same loop on CPU tensors with the CUDA detectors' Python shims
installed (torch's sync-debug mode needs CUDA and is left out), plain vs shims vs the quiet
detector's vs shims+keeper; `--compare-with OTHER/syncscope/runtime/cuda.py` adds the shims of
another checkout, side by side:

    python bench/runtime_overhead.py --cpu --rounds 21 --compare-with /path/to/base/syncscope/runtime/cuda.py
"""

import argparse
import contextlib
import json
import random
import statistics
import sys
import time

import torch
import torch.nn as nn
from paired_stats import median_ratio_interval, quantile  # bench/ is sys.path[0] when run as a script

import syncscope


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x, positions):
        h = self.norm1(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q[:, positions]  # device long index: gather, no sync
        att = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
        x = x + self.proj(att @ v)
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


def build(device, layers=12, d=256):
    model = nn.Sequential(*[Block(d) for _ in range(layers)]).to(device)
    return model


def step(model, x, positions, pinned_ids, device):
    ids = pinned_ids.to(device, non_blocking=True)  # pinned H2D: no sync
    h = x + ids[:, None, None].float() * 0
    for block in model:
        h = block(h, positions)
    return h[:, -1]


# The harness's own wait for the GPU, taken before any arm installs a detector: a trap wraps
# `torch.cuda.synchronize` (explicit syncs are what it reports), and the timed window below ends
# with this call, so looking it up at call time charged the step with the trap's recording of the
# harness's sync (an event with its stack, every round): about 2 points of the trap's figure on
# the H200 of 2026-11-27 (docs/runtime.md). The step itself never synchronizes.
_HARNESS_SYNC = torch.cuda.synchronize


def time_steps(model, x, positions, pinned_ids, device, steps, sync=None):
    """Wall time per step (launch + GPU completion) and the launching thread's CPU time per step.
    The CPU time is what syncscope can add to, and it does not count the time this (shared,
    virtualised) host spends running other tenants, which dominates the wall-clock noise.
    `sync`: the harness's wait (default: torch's, unwrapped)."""
    if sync is None:
        sync = _HARNESS_SYNC if device == "cuda" else (lambda: None)
    sync()
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        out = step(model, x, positions, pinned_ids, device)
    c1 = time.thread_time()
    sync()
    return (time.perf_counter() - t0) / steps, (c1 - c0) / steps


@contextlib.contextmanager
def trap_arm():
    with syncscope.trap(device="cuda") as t:
        yield t


def _quiet_trap_wrapping(keep):
    """The quiet trap with only the shims `keep(api)` accepts: the bisection arms of a warm trap's
    cost (docs/runtime.md, "Installed and warm"). Everything else of the trap (debug mode, the
    warning route, the site timer, the c10d and capture watches) is installed as usual."""
    from syncscope.runtime.quiet_cuda import QuietCudaDetector
    from syncscope.runtime.recorder import Recorder
    from syncscope.runtime.trap import Trap

    class Partial(QuietCudaDetector):
        def _wrapped(self, specs):
            return [spec for spec in super()._wrapped(specs) if keep(spec.api)]

    @contextlib.contextmanager
    def arm():
        with Trap(Recorder(device="cuda"), "cuda", Partial()) as t:
            yield t

    return arm


def _slim_copy(api: str) -> bool:
    return api in ("Tensor.to", "Tensor.cuda", "Tensor.copy_")


@contextlib.contextmanager
def keeper_running(t):
    """What `syncscope run` starts around the program (commands/run.py): a ReportKeeper."""
    import os
    import tempfile

    from syncscope.atomic import write_json_atomic
    from syncscope.report.aggregate import build_report
    from syncscope.runtime.keeper import ReportKeeper

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        keeper = ReportKeeper(lambda final: write_json_atomic(path, build_report(list(t.events), {}).to_json()), lambda: len(t.events))
        t.recorder.on_event = keeper.on_event
        keeper.start()
        try:
            yield t
        finally:
            keeper.stop()
            keeper.finish({"status": "ok"})


@contextlib.contextmanager
def keeper_arm():
    with syncscope.trap(device="cuda") as t, keeper_running(t):
        yield t


@contextlib.contextmanager
def cpu_shims_arm(cuda_module, keeper=False, quiet=False):
    """The CUDA detector's Python shims on a CPU-only build (no debug mode: it needs CUDA);
    `quiet`: the quiet detector's (runtime/quiet_cuda.py)."""
    from syncscope.runtime.recorder import Recorder
    from syncscope.runtime.trap import Trap

    if quiet:
        from syncscope.runtime.quiet_cuda import QuietCudaDetector

        detector = QuietCudaDetector()
    else:
        detector = cuda_module.CudaDetector()
    recorder = detector._recorder = Recorder(device="cuda")
    saved = []
    for spec in detector._wrapped(cuda_module._shim_specs()):
        saved.append((spec.owner, spec.name, vars(spec.owner).get(spec.name), spec.name in vars(spec.owner)))
        setattr(spec.owner, spec.name, detector._make_shim(spec, getattr(spec.owner, spec.name)))
    try:
        if keeper:
            with keeper_running(Trap(recorder, "cuda", detector)) as t:
                yield t
        else:
            yield None
    finally:
        for owner, name, original, had in reversed(saved):
            if had:
                setattr(owner, name, original)
            else:
                delattr(owner, name)


def cpu_main(args):
    """CPU-time ratios of the shims (and the keeper) on a CPU step loop, arms interleaved."""
    import importlib.util

    from syncscope.runtime import cuda as current

    arms = {
        "plain": contextlib.nullcontext,
        "shims": lambda: cpu_shims_arm(current),
        "quiet": lambda: cpu_shims_arm(current, quiet=True),
        "shims+keeper": lambda: cpu_shims_arm(current, keeper=True),
    }
    if args.compare_with:
        spec = importlib.util.spec_from_file_location("syncscope_cuda_compared", args.compare_with)
        other = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = other  # dataclasses look their module up there
        spec.loader.exec_module(other)
        arms["shims (compared checkout)"] = lambda: cpu_shims_arm(other)
    torch.manual_seed(0)
    cpu = {name: [] for name in arms}
    with torch.inference_mode():
        model = build("cpu", layers=4, d=64)
        x = torch.randn(2, 16, 64)
        positions = torch.arange(16)
        ids = torch.arange(2)
        for _ in range(3):
            time_steps(model, x, positions, ids, "cpu", 20)
        breakdown = shim_breakdown(lambda: step(model, x, positions, ids, "cpu"),
                                   {"all_shims": arms["shims"], "quiet": arms["quiet"]})
        for _ in range(args.rounds):
            for name, arm in arms.items():
                with arm():
                    _, c = time_steps(model, x, positions, ids, "cpu", args.steps)
                cpu[name].append(c)
    estimates = {name: median_ratio_interval(cpu["plain"], cpu[name]) for name in arms if name != "plain"}
    result = {"device": "cpu", "torch": torch.__version__, "plain_cpu_ms": statistics.median(cpu["plain"]) * 1e3,
              "cpu_ratio_by_arm": {name: e.median for name, e in estimates.items()},
              "cpu_ratio_ci95_by_arm": {name: [e.low, e.high] for name, e in estimates.items()},
              "rounds": args.rounds, "steps": args.steps, "shim_breakdown": breakdown}
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


@contextlib.contextmanager
def debug_mode_arm():
    """torch's sync-debug mode alone (what the trap arms for C++-level syncs)."""
    torch.cuda.set_sync_debug_mode("warn")
    try:
        yield None
    finally:
        torch.cuda.set_sync_debug_mode(0)


@contextlib.contextmanager
def all_shims_arm():
    """The trap with the detector that wraps every entry point that can sync (the detector of
    Python 3.11, and of every trap before the quiet one): the "before" of docs/runtime.md."""
    import os

    os.environ["SYNCSCOPE_CUDA_SHIMS"] = "1"
    try:
        with syncscope.trap(device="cuda") as t:
            yield t
    finally:
        del os.environ["SYNCSCOPE_CUDA_SHIMS"]


@contextlib.contextmanager
def type_touched_arm():
    """torch's debug mode, and one attribute set on `torch.Tensor` and taken off again just before
    the steps, as installing any shim does: what changing the class alone costs the steps after
    it (CPython's specialised instructions on tensors are keyed by the class's version, and
    re-specialise only after some runs)."""
    torch.cuda.set_sync_debug_mode("warn")
    torch.Tensor._syncscope_bench_touch = None
    del torch.Tensor._syncscope_bench_touch
    try:
        yield None
    finally:
        torch.cuda.set_sync_debug_mode(0)


def touch_like_an_install() -> None:
    """Set every attribute a trap's install sets (on torch.Tensor, torch, torch.cuda, ...) to
    what it is, and put each back as it was: the class and module changes of an install and an
    uninstall, with nothing of syncscope left in place. With --equalize every non-trap arm does
    this before its steps, so that all arms start from the same disturbed state and the
    differences are what a trap costs once it is in (a `syncscope run` installs once)."""
    from syncscope.runtime import cuda

    specs = cuda._shim_specs()
    # As an install does (cuda.CudaDetector.install): every attribute read first, then set in a row.
    planned = [(spec, spec.name in vars(spec.owner), vars(spec.owner).get(spec.name), getattr(spec.owner, spec.name))
               for spec in specs]
    for spec, _had_own, _own, current in planned:
        setattr(spec.owner, spec.name, current)
    for spec, had_own, own, _current in reversed(planned):
        if had_own:
            setattr(spec.owner, spec.name, own)
        else:
            delattr(spec.owner, spec.name)


def profiler_arm(stacks: bool):
    @contextlib.contextmanager
    def arm():
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities, with_stack=stacks):
            yield None

    return arm


def per_call_ns(fn, calls=20000):
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter_ns() - t0
    sync()
    return elapsed / calls


def shim_breakdown(run_step, traps: dict, per_call: bool = True) -> dict:
    """Where a trap's cost goes: each wrappable entry point the step calls, how often a step calls
    it, and what one such call costs plain and under each trap (the step's own first call,
    repeated in a loop; isolated, so a lower bound of its cost next to the step's launches).
    `traps` maps a name to a context manager factory; `run_step()` runs one step."""
    from syncscope.runtime import cuda

    counts, first_call, saved = {}, {}, []
    for spec in cuda._shim_specs():
        original = getattr(spec.owner, spec.name)

        def counting(*args, _original=original, _api=spec.api, **kwargs):
            counts[_api] = counts.get(_api, 0) + 1
            first_call.setdefault(_api, (_original, args, kwargs))
            return _original(*args, **kwargs)

        saved.append((spec.owner, spec.name, vars(spec.owner).get(spec.name), spec.name in vars(spec.owner)))
        setattr(spec.owner, spec.name, counting)
    try:
        run_step()
    finally:
        for owner, name, original, had in reversed(saved):
            setattr(owner, name, original) if had else delattr(owner, name)
    rows = {}
    for api, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        original, args, kwargs = first_call[api]
        owner_name = api.rsplit(".", 1)[-1]
        spec = next(sp for sp in cuda._shim_specs() if sp.api == api)

        def call(spec=spec, owner_name=owner_name, args=args, kwargs=kwargs):
            return getattr(spec.owner, spec.name)(*args, **kwargs)  # through whatever is installed now

        if api == "Tensor.__getitem__":
            call = (lambda a=args: a[0][a[1]])  # noqa: E731  the subscript syntax, as the step writes it
        row = {"calls_per_step": n}
        # Which arm wraps it: the quiet detector leaves the subscripts unwrapped, slims the copies.
        from syncscope.runtime import quiet_cuda

        row["quiet_wraps"] = "no" if api in quiet_cuda.UNWRAPPED else ("slim" if api in quiet_cuda.SLIM else "shim")
        rows[api] = row
        if not per_call:
            continue
        row["plain_ns"] = statistics.median(per_call_ns(call) for _ in range(3))
        for name, trap in traps.items():
            with trap():
                row[f"{name}_ns"] = statistics.median(per_call_ns(call) for _ in range(3))
            row[f"{name}_extra_us_per_step"] = n * (row[f"{name}_ns"] - row["plain_ns"]) / 1e3
    return rows


def _interval(estimate) -> dict:
    return {"median": estimate.median, "ci95": [estimate.low, estimate.high], "width": estimate.width}


def main():
    parser = argparse.ArgumentParser()
    # Short rounds, many of them: the GPU hosts' slow spells last a few hundred ms (a 50-step
    # round's paired ratio ranged 0.43..2.1 on the H100 of 2026-11-23, a 201-round interval 3.8
    # points wide); with 5 steps a round both arms of a pair mostly fall in the same spell.
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=201, help="rounds always run (each: every arm once)")
    parser.add_argument("--max-rounds", type=int, default=4001, help="stop adding rounds here")
    parser.add_argument("--max-seconds", type=float, default=420.0, help="stop adding rounds after this long")
    parser.add_argument("--batch", type=int, default=100, help="rounds added at a time while the interval is too wide")
    parser.add_argument("--target-width", type=float, default=0.01,
                        help="widest acceptable 95%% interval of the trap's wall ratio to debug mode alone")
    parser.add_argument("--profiler-rounds", type=int, default=60,
                        help="rounds that also run the torch.profiler arms (their cost is tens of percent: few rounds suffice)")
    parser.add_argument("--warmup-steps", type=int, default=2,
                        help="untimed steps after entering each arm, before its timed steps (arms named *_cold: none)")
    parser.add_argument("--arms", default="plain,debug_mode_only,trap,trap_all_shims,trap_cold,type_touched_cold,trap+keeper,profiler,profiler_stacks",
                        help="comma-separated arms to run (plain, debug_mode_only and trap always run)")
    parser.add_argument("--per-call", action="store_true", help="also time each entry point's call in a loop (isolated)")
    parser.add_argument("--equalize", action="store_true",
                        help="every arm that installs no trap first makes the class and module changes an install makes "
                             "(touch_like_an_install): the arms then differ only by what a trap costs once installed")
    parser.add_argument("--out")
    parser.add_argument("--cpu", action="store_true", help="no GPU: CPU-time ratios of the shims and the keeper")
    parser.add_argument("--compare-with", help="with --cpu: another checkout's syncscope/runtime/cuda.py, as one more arm")
    args = parser.parse_args()
    if args.cpu:
        return cpu_main(args)
    device = "cuda"
    torch.manual_seed(0)
    with torch.inference_mode():
        model = build(device)
        x = torch.randn(4, 32, 256, device=device)
        positions = torch.arange(32, device=device)
        pinned_ids = torch.arange(4).pin_memory()
        for _ in range(3):
            time_steps(model, x, positions, pinned_ids, device, 20)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            step(model, x, positions, pinned_ids, device)
            torch.cuda.synchronize()
        launches = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        breakdown = shim_breakdown(lambda: step(model, x, positions, pinned_ids, device),
                                   {"all_shims": all_shims_arm, "quiet": trap_arm}, per_call=args.per_call)
        every = {"plain": contextlib.nullcontext, "debug_mode_only": debug_mode_arm, "trap": trap_arm,
                 "trap_all_shims": all_shims_arm, "trap_cold": trap_arm, "type_touched_cold": type_touched_arm,
                 "trap+keeper": keeper_arm, "profiler": profiler_arm(False), "profiler_stacks": profiler_arm(True),
                 # Bisection of a warm trap's cost: no shim at all (the machinery alone), the slim
                 # copy wrappers alone (the one the step calls), every shim but those.
                 "trap_no_shims": _quiet_trap_wrapping(lambda api: False),
                 "trap_only_copies": _quiet_trap_wrapping(_slim_copy),
                 "trap_no_copies": _quiet_trap_wrapping(lambda api: not _slim_copy(api))}
        wanted = set(args.arms.split(",")) | {"plain", "debug_mode_only", "trap"}
        arms = {name: arm for name, arm in every.items() if name in wanted}
        occasional = {"profiler", "profiler_stacks", "trap+keeper"} & set(arms)
        wall = {name: [] for name in arms}
        cpu = {name: [] for name in arms}
        paired_plain = {name: [] for name in occasional}  # the plain rounds those arms ran in
        syncs = 0
        rounds = 0
        order = random.Random(1)
        started = time.monotonic()
        while True:
            todo = args.rounds - rounds if rounds < args.rounds else min(args.batch, args.max_rounds - rounds)
            if todo <= 0 or (rounds >= args.rounds and time.monotonic() - started > args.max_seconds):
                break
            for _ in range(todo):
                # Interleaved, so every arm sees the same drift, in a fresh random order each round:
                # with a fixed order an arm's neighbours are always the same, and that position
                # alone moved an arm by ~1% on the H100 host (debug_mode_only 1.1% below plain).
                names = [n for n in arms if n not in occasional or rounds < args.profiler_rounds]
                order.shuffle(names)
                for name in names:
                    with arms[name]() as t:
                        if args.equalize and name in ("plain", "debug_mode_only", "profiler", "profiler_stacks", "trap_no_shims",
                                                            "trap_only_copies", "trap_no_copies"):
                            touch_like_an_install()
                        if args.warmup_steps and not name.endswith("_cold"):
                            time_steps(model, x, positions, pinned_ids, device, args.warmup_steps)
                        w, c = time_steps(model, x, positions, pinned_ids, device, args.steps)
                        if t is not None:
                            syncs += sum(1 for e in t.events if e.api != "torch.cuda.synchronize")
                    wall[name].append(w)
                    cpu[name].append(c)
                for name in occasional & set(names):
                    paired_plain[name].append(wall["plain"][-1])
                rounds += 1
            # A quick interval decides whether to go on (a 5000-resample bootstrap of thousands of
            # rounds takes seconds on these hosts); the reported one below is the full one.
            if median_ratio_interval(wall["debug_mode_only"], wall["trap"], resamples=400).width <= args.target_width:
                break
    versus_plain = {}
    for name in arms:
        if name == "plain":
            continue
        base = paired_plain[name] if name in occasional else wall["plain"]
        versus_plain[name] = _interval(median_ratio_interval(base, wall[name]))
    above_debug = median_ratio_interval(wall["debug_mode_only"], wall["trap"])
    # Every detector arm against debug mode alone, paired round by round.
    versus_debug = {name: _interval(median_ratio_interval(wall["debug_mode_only"], wall[name]))
                    for name in arms if name not in occasional and name not in ("plain", "debug_mode_only")}
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "kernels_per_step": launches,
        "steps_per_round": args.steps,
        "warmup_steps": args.warmup_steps,
        "equalized": args.equalize,
        "rounds": rounds,
        "profiler_rounds": min(rounds, args.profiler_rounds),
        "plain_step_ms": statistics.median(wall["plain"]) * 1e3,
        # Median paired wall ratio of each arm to plain, with its bootstrap 95% interval.
        "wall_ratio_vs_plain": versus_plain,
        # The figure: the trap against torch's own detector alone, paired round by round.
        "trap_vs_debug_mode": _interval(above_debug),
        "wall_ratio_vs_debug_mode": versus_debug,
        "target_width_met": above_debug.width <= args.target_width,
        "cpu_ratio_by_arm": {name: statistics.median(a / p for p, a in zip(cpu["plain"], cpu[name])) for name in arms
                             if name not in occasional},
        "syncs_in_loop": syncs,
        "shim_breakdown": breakdown,
    }
    print(json.dumps(result, indent=1))
    print(f"{launches} kernels/step, plain step {result['plain_step_ms']:.3f} ms, {rounds} rounds of {args.steps} steps")
    for name, e in versus_plain.items():
        print(f"  {name:16s} {100 * (e['median'] - 1):+7.2f}% (95% CI {100 * (e['ci95'][0] - 1):+.2f} .. {100 * (e['ci95'][1] - 1):+.2f})")
    print(f"trap above debug mode alone: {above_debug.describe()}")
    for name, e in versus_debug.items():
        print(f"  {name:18s} vs debug mode alone {100 * (e['median'] - 1):+7.2f}% (95% CI {100 * (e['ci95'][0] - 1):+.2f} .. {100 * (e['ci95'][1] - 1):+.2f})")
    print("per entry point: calls per step, what the quiet detector wraps:")
    for api, row in breakdown.items():
        print(f"  {api:24s} {row['calls_per_step']:4d}  {row['quiet_wraps']}")
    if not result["target_width_met"]:
        print(f"the interval is {100 * above_debug.width:.2f} points wide after {rounds} rounds "
              f"(target {100 * args.target_width:.2f}): raise --max-rounds or --max-seconds")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)

if __name__ == "__main__":
    main()
