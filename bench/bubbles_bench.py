"""GPU idle time per sync site (issue 11), on the GPU machine.

1. A planted case with a known answer: each step syncs (`.item()` of a small sum) and then does
   2 ms of host work (`time.sleep`) before its next launch; the same loop without the sync.
2. The serving loop (examples/serve_loop.py), naive vs fixed, host-bound and GPU-heavy: per-site
   bubbles, GPU idle per step by cause, and tokens/s (plain runs of both impls side by side, in
   this process) beside them.
3. What the profiled window costs: the step time inside the window vs the same number of steps
   right after it (same trap, window closed), and the profiler's start/stop/analysis times.

    python bench/bubbles_bench.py [--window 20] [--plain-steps 60] [--out result.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import syncscope  # noqa: E402

SETTINGS = {
    "host-bound (hidden 1024, 2 layers)": dict(hidden=1024, layers=2),
    "gpu-heavy (hidden 4096, 4 layers)": dict(hidden=4096, layers=4),
}


def ms(ns) -> float:
    return round(ns / 1e6, 4)


def spin(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def planted(sync: bool, steps: int, warmup: int = 3, how: str = "spin") -> dict:
    """`how`: the 2 ms host delay as a spin on the clock (exact) or `time.sleep` (overshoots)."""
    x = torch.randn(512, 512, device="cuda")
    torch.relu(x @ x).sum().item()
    slept = []
    with syncscope.trap(device="cuda", bubbles=True, bubble_steps=steps, bubble_warmup=warmup) as t:
        for _ in range(warmup + steps):
            with syncscope.region("step"):
                y = x @ x
                s = y.sum()
                if sync:
                    s.item()
                t0 = time.perf_counter_ns()  # the sync has returned: syncscope's bookkeeping is done
                spin(2_000_000) if how == "spin" else time.sleep(0.002)
                slept.append(time.perf_counter_ns() - t0)
                torch.relu(y)
    torch.cuda.synchronize()
    w = t.bubbles
    idle = w.attribution.idle_by_cause()
    item = [s for s in t.sites() if s.kind == "item"]
    # Clock check independent of the attribution: each sync's release minus the end of the
    # latest device activity that ended before it (microseconds; small when the clocks agree).
    ends = sorted(start + dur - w.unix_shift_ns for _, start, dur in w.raw_device_events)
    lags = []
    for m in w.marks:
        before = [e for e in ends if e <= m.wait_end_ns + 1_000_000]
        if before:
            lags.append((m.wait_end_ns - before[-1]) / 1e3)
    out = {
        "sync": sync,
        "delay": how,
        "steps": w.steps,
        "host_delay_mean_ms": ms(statistics.mean(slept[warmup:])),
        "idle_ms": {k: ms(v) for k, v in idle.items()},
        "syncscope_own_ms": ms(w.attribution.syncscope_ns),
        "release_lag_us": None if w.release_lag_ns() is None else w.release_lag_ns() / 1e3,
        "release_after_last_end_us": sorted(lags)[len(lags) // 2] if lags else None,
        "overhead_ms": {k: ms(v) for k, v in w.overhead_ns.items()},
        "notes": w.notes,
        "activities": w.activities,
    }
    if item:
        site = item[0]
        out.update(
            site=f"{site.path}:{site.line}",
            bubble_count=site.bubble_count,
            bubble_mean_ms=ms(site.mean_bubble_ns or 0),
            # What the bubble holds beyond the program's own host time after the sync: the
            # launch latency (syncscope's bookkeeping is before t0 and cut out of the gap).
            bubble_minus_host_delay_ms=ms((site.mean_bubble_ns or 0) - statistics.mean(slept[warmup:])),
            syncscope_own_per_sync_ms=ms(w.attribution.syncscope_ns / site.bubble_count) if site.bubble_count else None,
            blocked_mean_ms=ms(site.blocked_ns / site.count),
        )
    return out


def runtime_event_sample() -> dict:
    """Which fields of the profiler's runtime-call events name the launching host thread (the
    window matches a sync's thread to the launch that ends a gap where they do)."""
    import threading

    from syncscope.runtime.bubble_window import _Profiler

    x = torch.randn(64, 64, device="cuda")
    p = _Profiler()
    p.start()
    for _ in range(3):
        x = x @ x
    events = p.stop()
    torch.cuda.synchronize()
    cpu = [e for e in events if e.device_type() != torch.autograd.DeviceType.CUDA][:6]
    return {
        "native_id": threading.get_native_id(),
        "ident": threading.get_ident(),
        "events": [
            {"name": e.name(), "device_index": e.device_index(), "device_resource_id": e.device_resource_id(),
             "start_thread_id": e.start_thread_id(), "end_thread_id": e.end_thread_id(), "correlation_id": e.correlation_id()}
            for e in cpu
        ],
    }


def load_serve_loop():
    spec = importlib.util.spec_from_file_location("serve_loop_bubbles", ROOT / "examples" / "serve_loop.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def plain_tokens_per_s(loop, size: dict, steps: int) -> dict:
    """Both impls side by side, best of two rounds each (the shared host drifts)."""
    best = {}
    for _ in range(2):
        for impl in ("naive", "fixed"):
            result = loop.ServeLoop(loop.Config(impl=impl, steps=steps, warmup=10, **size)).run()
            best[impl] = max(best.get(impl, 0.0), result["tokens_per_s"])
    return {"naive_tokens_per_s": round(best["naive"], 1), "fixed_tokens_per_s": round(best["fixed"], 1),
            "ratio": round(best["fixed"] / best["naive"], 3)}


def windowed(loop, impl: str, size: dict, window: int, warmup: int = 10) -> dict:
    """warm-up steps, `window` profiled steps, then as many unprofiled ones; each phase ends with
    the program's own token read (the window closes at the first one after it)."""
    runner = loop.ServeLoop(loop.Config(impl=impl, steps=0, warmup=0, **size))
    phases = {}
    with syncscope.trap(device="cuda", bubbles=True, bubble_steps=window, bubble_warmup=warmup) as t:
        for name, count in (("warmup", warmup), ("window", window), ("after", window)):
            before = int(runner.tokens_generated) if name != "warmup" else 0
            start = time.perf_counter_ns()
            for _ in range(count):
                with syncscope.region("step"):
                    runner.step()
            tokens = int(runner.tokens_generated) - before  # a sync: waits for the phase's work
            # The phase ends when that read was released (its event's time), not after the
            # window's analysis that runs right after it.
            end = t.recorder.started_ns + t.events[-1].ts_ns
            phases[name] = {"ms_per_step": (end - start) / count / 1e6, "tokens": tokens}
    w = t.bubbles
    idle = w.attribution.idle_by_cause()
    steps = w.steps
    sites = [
        {"site": f"{s.path}:{s.line}", "kind": s.kind, "function": s.function, "bubble_count": s.bubble_count,
         "bubble_ms": ms(s.bubble_ns), "mean_bubble_ms": ms(s.mean_bubble_ns or 0), "bubble_share": s.bubble_share,
         "syncs_in_run": s.count, "blocked_ms": ms(s.blocked_ns)}
        for s in t.sites() if s.bubble_count
    ]
    return {
        "impl": impl,
        "steps_profiled": steps,
        "window_ms_per_step": round(phases["window"]["ms_per_step"], 4),
        "after_ms_per_step": round(phases["after"]["ms_per_step"], 4),
        "window_step_ratio": round(phases["window"]["ms_per_step"] / phases["after"]["ms_per_step"], 3),
        "idle_per_step_ms": {k: ms(v / steps) for k, v in idle.items()},
        "counted_idle_per_step_ms": ms((idle["sync"] + idle["launch_bound"]) / steps),
        "gpu_busy_share": round(1 - w.attribution.total_idle_ns / w.attribution.gpu_time_ns, 4),
        "syncscope_own_per_step_ms": ms(w.attribution.syncscope_ns / steps),
        "release_lag_us": None if w.release_lag_ns() is None else w.release_lag_ns() / 1e3,
        "overhead_ms": {k: ms(v) for k, v in w.overhead_ns.items()},
        "activities": w.activities,
        "notes": w.notes,
        "sites": sorted(sites, key=lambda s: -s["bubble_ms"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--plain-steps", type=int, default=60)
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "planted": [planted(True, 20), planted(False, 20), planted(True, 20, how="sleep")],
        "serve_loop": [],
    }
    result["runtime_event_sample"] = runtime_event_sample()
    print("runtime events", json.dumps(result["runtime_event_sample"]), flush=True)
    for p in result["planted"]:
        print("planted", json.dumps(p), flush=True)
    loop = load_serve_loop()
    for label, size in SETTINGS.items():
        row = {"model": label, **plain_tokens_per_s(loop, size, args.plain_steps)}
        row["naive"] = windowed(loop, "naive", size, args.window)
        row["fixed"] = windowed(loop, "fixed", size, args.window)
        result["serve_loop"].append(row)
        print("serve_loop", json.dumps(row), flush=True)
    print()
    for row in result["serve_loop"]:
        print(f"{row['model']}: tokens/s naive {row['naive_tokens_per_s']} fixed {row['fixed_tokens_per_s']} (x{row['ratio']})")
        for impl in ("naive", "fixed"):
            r = row[impl]
            print(f"  {impl}: idle/step {r['idle_per_step_ms']} ms; counted {r['counted_idle_per_step_ms']} ms; "
                  f"window step x{r['window_step_ratio']}; own {r['syncscope_own_per_step_ms']} ms/step")
            for s in r["sites"][:8]:
                print(f"    {s['site']:48} {s['kind']:18} {s['bubble_count']:4} bubbles {s['bubble_ms']:9.3f} ms (mean {s['mean_bubble_ms']:.3f})")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
