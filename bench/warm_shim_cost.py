"""What the quiet detector's shims cost a step once installed and warm, by group (CPU is enough).

docs/runtime.md ("Installed and warm") found the installed trap about 2 points above torch's
debug mode alone on the H100 with 100 warm-up steps, although the step calls only one wrapped
entry point (a pinned `Tensor.to`). This asks which of the attributes the detector leaves on
`torch.Tensor` and torch's modules cost a warm step, on the CPU step loop of
runtime_overhead.py (no debug mode: it needs CUDA).

Each arm is a block: install the arm's shims once, run `--warmup-steps` untimed steps (so
CPython's specialised instructions settle after the class change), time `--steps` steps (the
thread's CPU time), take the shims out. The arms run in a fresh random order each round and every
arm is paired with `plain` of the same round (paired_stats.py: median ratio, bootstrap 95% CI).
Every arm, `plain` included, first makes the class and module changes an install makes
(runtime_overhead.touch_like_an_install), so all start from the same disturbed state.

Arms (the shims are the quiet detector's, made by its own `_make_shim`):
  quiet           every attribute the quiet detector sets
  tensor_called   `Tensor.to` alone (slim): the one wrapped entry point the step calls
  quiet_uncalled  every attribute the quiet detector sets but `Tensor.to` (none called by the step)
  tensor_other    the other Tensor methods it wraps (never called by the step)
  tensor_dunders  `Tensor.__bool__/__int__/__float__/__index__` alone (type slots change)
  torch_funcs     the torch and torch.nn.functional functions (never called by the step)
  cuda_funcs      torch.cuda / Stream / Event / accelerator synchronize (never called)
  inert_attr      one unrelated Python function set on torch.Tensor
  trap            the whole trap as `syncscope.trap()` puts it in (Trap + QuietCudaDetector: shims,
                  warning route, c10d and capture watches, the site timer where Python has one);
                  torch's debug mode, which a CPU build lacks, stubbed out
  trap_no_shims   the same with no shim at all: the trap's machinery alone

    python bench/warm_shim_cost.py [--rounds 40] [--warmup-steps 300] [--steps 100] [--workload probe]
"""

import argparse
import json
import random
import statistics
import sys
import time

import torch
from paired_stats import median_ratio_interval  # bench/ is sys.path[0] when run as a script
from runtime_overhead import build, step, touch_like_an_install

from syncscope.runtime import cuda
from syncscope.runtime.quiet_cuda import QuietCudaDetector
from syncscope.runtime.recorder import Recorder

DUNDERS = {"__bool__", "__int__", "__float__", "__index__"}


def groups() -> dict:
    detector = QuietCudaDetector()
    specs = detector._wrapped(cuda._shim_specs())
    T = torch.Tensor
    cuda_owners = {id(torch.cuda), id(torch.cuda.Stream), id(torch.cuda.Event), id(getattr(torch, "accelerator", None))}
    return {
        "quiet": specs,
        "tensor_called": [s for s in specs if s.api == "Tensor.to"],
        "quiet_uncalled": [s for s in specs if s.api != "Tensor.to"],
        "tensor_other": [s for s in specs if s.owner is T and s.api != "Tensor.to"],
        "tensor_dunders": [s for s in specs if s.owner is T and s.name in DUNDERS],
        "torch_funcs": [s for s in specs if s.owner is torch or s.owner is torch.nn.functional],
        "cuda_funcs": [s for s in specs if id(s.owner) in cuda_owners],
    }


def install(specs, detector) -> list:
    saved, shims = [], []
    for spec in specs:  # every original read before any shim is set, as the detector's install does
        saved.append((spec.owner, spec.name, vars(spec.owner).get(spec.name), spec.name in vars(spec.owner)))
        shims.append(detector._shim_for(spec, getattr(spec.owner, spec.name)))
    for spec, shim in zip(specs, shims):
        setattr(spec.owner, spec.name, shim)
    return saved


def uninstall(saved) -> None:
    for owner, name, original, had in reversed(saved):
        setattr(owner, name, original) if had else delattr(owner, name)


def _inert(self, *args):
    return None


def probe_step(model, x, positions, ids, device):
    """`--workload probe`: tensor attribute and method reads only (type_change_probe.py's body,
    50 times), the code a class change slows most, without the step's arithmetic around it."""
    for _ in range(50):
        x.shape, x.dtype, x.dim(), x.is_cuda, ids.t(), x.device, x.size(0), x.view(-1), ids.to("cpu")


class _NoShims(QuietCudaDetector):
    def _wrapped(self, specs):
        return []


def _stub_debug_mode() -> None:
    """A CPU build has no sync-debug mode (setting it raises): the whole-trap arms stand it in
    with a no-op, so that they measure everything else a trap puts in."""
    mode = [0]
    torch.cuda.get_sync_debug_mode = lambda: mode[0]
    torch.cuda.set_sync_debug_mode = lambda value: mode.__setitem__(0, value)


def run_arm(name, specs, detector, model, x, positions, ids, warmup, steps) -> float:
    touch_like_an_install()
    trap = None
    if name in ("trap", "trap_no_shims"):  # the real Trap: shims, warning route, c10d and capture watches
        from syncscope.runtime.trap import Trap

        trap = Trap(Recorder(device="cuda"), "cuda", QuietCudaDetector() if name == "trap" else _NoShims())
        trap.__enter__()
        saved = []
    elif name == "inert_attr":
        torch.Tensor._syncscope_inert = _inert
        saved = None
    else:
        saved = install(specs, detector)
    try:
        for _ in range(warmup):
            step(model, x, positions, ids, "cpu")
        c0 = time.thread_time()
        for _ in range(steps):
            step(model, x, positions, ids, "cpu")
        return (time.thread_time() - c0) / steps
    finally:
        if trap is not None:
            trap.__exit__(None, None, None)
        elif saved is None:
            del torch.Tensor._syncscope_inert
        else:
            uninstall(saved)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup-steps", type=int, default=300)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--arms", default="quiet,tensor_called,tensor_other,tensor_dunders,torch_funcs,cuda_funcs,inert_attr")
    parser.add_argument("--workload", choices=("step", "probe"), default="step",
                        help="probe: tensor attribute and method reads only (a blocking `to` that no shim predicts)")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    detector = QuietCudaDetector()
    detector._recorder = Recorder(device="cuda")
    by_group = groups()
    by_group["trap"], by_group["trap_no_shims"] = by_group["quiet"], []  # what each puts in (for the printout)
    global step
    if {"trap", "trap_no_shims"} & set(args.arms.split(",")):
        _stub_debug_mode()
    if args.workload == "probe":
        step = probe_step
    arms = ["plain"] + args.arms.split(",")
    times = {name: [] for name in arms}
    with torch.inference_mode():
        model = build("cpu", layers=args.layers, d=32)
        x = torch.randn(2, 8, 32)
        positions = torch.arange(8)
        ids = torch.arange(2)
        order = random.Random(1)
        for _ in range(args.rounds):
            names = list(arms)
            order.shuffle(names)
            for name in names:
                times[name].append(run_arm(name, by_group.get(name, []), detector, model, x, positions, ids,
                                           args.warmup_steps, args.steps))
    result = {"python": sys.version.split()[0], "workload": args.workload, "torch": torch.__version__, "rounds": args.rounds,
              "warmup_steps": args.warmup_steps, "steps": args.steps,
              "plain_step_us": statistics.median(times["plain"]) * 1e6, "vs_plain": {}}
    print(f"python {result['python']}, torch {result['torch']}, plain step {result['plain_step_us']:.1f} us CPU, "
          f"{args.workload}, {args.rounds} rounds, {args.warmup_steps} warm-up + {args.steps} timed steps a block")
    for name in arms[1:]:
        e = median_ratio_interval(times["plain"], times[name])
        result["vs_plain"][name] = e.to_json()
        print(f"  {name:15s} ({len(by_group.get(name, [])):2d} attrs) vs plain {e.describe()}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
