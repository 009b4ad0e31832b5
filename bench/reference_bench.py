"""What the reference builders cost the host, and what the sync-free versions buy (GPU machine).

1. Each builder's host time with the GPU idle and behind ~25 ms of queued work
   (`torch.cuda._sleep`, calibrated): a sync-free builder takes about its idle time (goal:
   <= 1.2x), a naive one waits for the queue. Builders are made once (their pinned staging is
   allocated then), warmed up idle and queued (Triton compilation, the staging ring's one-off
   growth), and timed alone: inputs are made before the clock starts and results are dropped
   after it stops; idle and queued samples alternate, the garbage collector is off while timing,
   medians of 50 each. A control row times 8 plain kernel launches the same way: what a queue
   does to launches alone.
2. The serving loop (examples/serve_loop.py), naive vs fixed, tokens/s in one run (two model
   sizes, alternating runs, best of each).
3. Slot mapping at 8k tokens from the token positions: the Triton kernel vs numpy + copy (goal:
   >= 10x less host time). The numpy side is vLLM's: one flat gather into a persistent pinned
   buffer, one non_blocking copy into a persistent device buffer.

    python bench/reference_bench.py --out bench-reference.json        # on a GPU, ~1 minute
    python bench/reference_bench.py --smoke --out /tmp/smoke.json     # CPU, tiny sizes, no claims

Prints a compact table; writes every figure to --out (JSON).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

SMOKE = "--smoke" in sys.argv
if SMOKE:  # CPU smoke run: Triton must use its interpreter, chosen when the kernels are defined
    os.environ.setdefault("TRITON_INTERPRET", "1")

import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gpu_sleep import queue_sleep, sleep_cycles_per_ms  # noqa: E402  (bench/ is sys.path[0] when run as a script)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_impl import kernels  # noqa: E402
from reference_impl.async_spec_decode import InputPreparer, positions_numpy, slots_numpy  # noqa: E402
from reference_impl.common import PinnedStaging, ScheduledBatch, to_device  # noqa: E402
from reference_impl.gdn_chunk_indices import GDNPrefillMetadataBuilder, gdn_chunk_prefill  # noqa: E402
from reference_impl.gdn_spec_decode import GDNSpecDecodeMetadataBuilder  # noqa: E402
from reference_impl.seq_lens_upper_bound import ChunkedContextBuilder, make_common_metadata  # noqa: E402
from reference_impl.trtllm_indptr import TrtllmMetadataBuilder  # noqa: E402

NUM_SPEC = 3
QUEUE_MS = 25.0


# ------------------------------------------------------------------------------- device helpers
class Device:
    def __init__(self, name: str):
        self.name = name
        self.is_cuda = torch.device(name).type == "cuda"
        self.cycles_per_ms = None

    def synchronize(self) -> None:
        if self.is_cuda:
            torch.cuda.synchronize()

    def calibrate(self) -> float:
        """Clock cycles of torch.cuda._sleep per millisecond, measured with CUDA events."""
        if not self.is_cuda:
            return 0.0
        self.cycles_per_ms = sleep_cycles_per_ms()
        return self.cycles_per_ms

    def queue(self, ms: float) -> None:
        """Put `ms` of work on the stream without waiting for it."""
        if self.is_cuda:
            queue_sleep(ms, self.cycles_per_ms)


# ------------------------------------------------------------------------------------ scenarios
def make_batch(rng: np.random.Generator, smoke: bool):
    """64 decodes (half of them spec decodes with 3 drafts) and 4 prefills, as a busy step."""
    n_dec, n_pre = (6, 2) if smoke else (64, 4)
    drafts = np.where(rng.random(n_dec) < 0.5, NUM_SPEC, 0).astype(np.int32)
    prefill = rng.integers(60, 200 if smoke else 2000, n_pre).astype(np.int32)
    batch = ScheduledBatch(
        req_indices=rng.permutation(n_dec + n_pre).astype(np.int32),
        query_lens=np.concatenate([drafts + 1, prefill]).astype(np.int32),
        num_draft=np.concatenate([drafts, np.zeros(n_pre, np.int32)]),
    )
    num_computed = np.concatenate([rng.integers(100, 4000, n_dec), np.zeros(n_pre)]).astype(np.int32)
    return batch, num_computed


class Scenarios:
    """Each scenario: `setup()` makes fresh inputs (untimed), `run(inputs)` is the timed part."""

    def __init__(self, dev: str, smoke: bool):
        self.dev = dev
        self.rng = np.random.default_rng(0)
        self.batch, self.num_computed = make_batch(self.rng, smoke)
        rows = self.batch.num_reqs
        self.state_table = torch.arange(rows * (NUM_SPEC + 1), dtype=torch.int32).reshape(rows, -1)
        self.staging = PinnedStaging(dev)  # the runner's: inputs are made untimed, but not wastefully

    def common(self):
        b = self.batch
        seq_lens = (self.num_computed + b.query_lens).astype(np.int32)
        seq_lens_dev, table = self.staging.upload(seq_lens, self.state_table.numpy()[b.req_indices])
        return make_common_metadata(b, seq_lens_dev, seq_lens, table, self.dev, staging=self.staging)

    def builders(self, impl: str):
        dev, b = self.dev, self.batch
        accepted = to_device(np.minimum(b.num_draft, 1), dev)
        spec = GDNSpecDecodeMetadataBuilder(NUM_SPEC, dev, impl)
        prefill = GDNPrefillMetadataBuilder(dev, impl)
        context = ChunkedContextBuilder(2048, dev, impl)
        trtllm = TrtllmMetadataBuilder(16, b.num_reqs, dev, impl)
        n_prefill_tokens = int(b.query_lens[b.is_prefill].sum())
        g = torch.zeros(n_prefill_tokens, 8, device=dev)

        def run_prefill(common):
            meta = prefill.build(common)
            return gdn_chunk_prefill(g, meta.cu_seqlens, chunk_indices=meta.chunk_indices, chunk_offsets=meta.chunk_offsets)

        prep = InputPreparer(b.num_reqs, 512, 16, dev, impl)  # made once, reset for each sample

        def async_setup():
            for row, computed in zip(b.req_indices, self.num_computed):
                prep.add_request(int(row), np.arange(512, dtype=np.int32), int(computed))
            prep.commit_block_table()
            return prep

        def run_async(prep):
            inputs = prep.prepare(b, b.num_tokens + 8)
            prep.finish(b, accepted)
            return inputs

        return {
            "gdn_spec_decode (PR 38047)": (self.common, lambda c: spec.build(c, accepted), [spec.staging]),
            "gdn_chunk_indices (PR 38361)": (self.common, run_prefill, [prefill.staging]),
            "seq_lens_upper_bound (PR 40654)": (self.common, context.build, [context.staging]),
            "trtllm_indptr (PR 39546)": (self.common, trtllm.build, []),
            "async_spec_decode (PR 32951)": (async_setup, run_async, [prep.staging]),
        }

    def control(self):
        """8 plain kernel launches on small device tensors: what a queue does to launches alone."""
        x = torch.zeros(64, dtype=torch.int32, device=self.dev)

        def run(_):
            y = x
            for _ in range(8):
                y = y + 1
            return y

        return lambda: None, run, []


def sample(dev: Device, setup, run, queued: bool) -> float:
    """Host time of one `run` in microseconds, the GPU idle or behind QUEUE_MS of work. Inputs are
    made before the clock starts; the result is dropped after it stops."""
    inputs = setup()
    dev.synchronize()
    if queued:
        dev.queue(QUEUE_MS)
    t0 = time.perf_counter()
    out = run(inputs)
    elapsed = (time.perf_counter() - t0) * 1e6
    del out
    dev.synchronize()
    return elapsed


def time_builder(dev: Device, setup, run, reps: int) -> tuple[float, float]:
    """Medians of `reps` idle and `reps` queued samples, alternating (drifts hit both alike)."""
    idle, queued = [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            idle.append(sample(dev, setup, run, queued=False))
            queued.append(sample(dev, setup, run, queued=True))
    finally:
        gc.enable()
    return statistics.median(idle), statistics.median(queued)


def bench_builders(dev: Device, smoke: bool) -> list[dict]:
    scen = Scenarios(dev.name, smoke)
    reps = 5 if smoke else 50
    cases = [("control: 8 kernel launches", "-", *scen.control())]
    for impl in ("naive", "fixed"):
        cases += [(name, impl, *case) for name, case in scen.builders(impl).items()]
    rows = []
    for name, impl, setup, run, stagings in cases:
        time_builder(dev, setup, run, 2 if smoke else 3)  # warm-up, idle and queued: compilation, staging growth
        growths = sum(s.growths for s in stagings)
        idle, queued = time_builder(dev, setup, run, reps)
        ratio = queued / idle if idle else float("nan")
        if impl == "naive":
            ok = queued >= 0.5 * QUEUE_MS * 1000  # the host waits for most of the queue
        elif impl == "fixed":
            ok = ratio <= 1.2  # the queue must not show
        else:
            ok = None
        rows.append(
            {
                "builder": name,
                "impl": impl,
                "idle_us": round(idle, 1),
                "queued_us": round(queued, 1),
                "ratio": round(ratio, 2),
                "reps": reps,
                # one-off pinned allocations of the builder's staging while timed (expected: 0)
                "staging_growths_timed": sum(s.growths for s in stagings) - growths,
                "ok": ok,
            }
        )
    return rows


# ----------------------------------------------------------------------------------- serve loop
def load_serve_loop():
    spec = importlib.util.spec_from_file_location("serve_loop_bench", ROOT / "examples" / "serve_loop.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def bench_serve_loop(dev: Device, smoke: bool) -> list[dict]:
    loop = load_serve_loop()
    if smoke:
        sizes = {"tiny": dict(hidden=64, layers=1, steps=4, warmup=1, max_batch=8, max_tokens=512)}
    else:
        sizes = {
            "host-bound (hidden 1024, 2 layers)": dict(hidden=1024, layers=2, steps=200, warmup=20),
            "gpu-heavy (hidden 4096, 4 layers)": dict(hidden=4096, layers=4, steps=200, warmup=20),
        }
    rows = []
    for label, size in sizes.items():
        best = {}
        for _round in range(1 if smoke else 2):
            for impl in ("naive", "fixed"):
                cfg = loop.Config(impl=impl, device=dev.name, seed=0, **size)
                result = loop.ServeLoop(cfg).run()
                if impl not in best or result["tokens_per_s"] > best[impl]["tokens_per_s"]:
                    best[impl] = result
        naive, fixed = best["naive"], best["fixed"]
        rows.append(
            {
                "model": label,
                "steps": size["steps"],
                "tokens": fixed["tokens"],
                "same_tokens": naive["tokens"] == fixed["tokens"],  # both impls must do the same work
                "naive_tokens_per_s": round(naive["tokens_per_s"], 1),
                "fixed_tokens_per_s": round(fixed["tokens_per_s"], 1),
                "speedup": round(fixed["tokens_per_s"] / naive["tokens_per_s"], 3),
            }
        )
    return rows


# --------------------------------------------------------------------------------- slot mapping
def bench_slot_mapping(dev: Device, smoke: bool) -> dict:
    """Slot ids from token positions, both ways, each as a serving engine would run it every step."""
    rng = np.random.default_rng(1)
    num_reqs, per_req = (8, 16) if smoke else (64, 128)  # 8192 tokens on the GPU
    block_size, max_blocks = 16, 1024
    batch = ScheduledBatch(
        np.arange(num_reqs, dtype=np.int32), np.full(num_reqs, per_req, np.int32), np.zeros(num_reqs, np.int32)
    )
    num_computed = rng.integers(0, (max_blocks - 16) * block_size, num_reqs).astype(np.int32)
    table_np = rng.integers(0, 1 << 20, (num_reqs, max_blocks)).astype(np.int32)
    n = batch.num_tokens
    positions_np = positions_numpy(num_computed, batch)
    table, positions = to_device(table_np, dev.name), to_device(positions_np, dev.name)
    qsl, req = to_device(batch.query_start_loc, dev.name), to_device(batch.req_indices, dev.name)

    # numpy: vLLM's persistent buffers (a pinned host one, a device one), one flat gather into the
    # pinned one, one non_blocking copy. Reusing one pinned buffer is safe here only because every
    # sample below waits for the device before the next.
    pin = dev.is_cuda
    slots_cpu = torch.empty(n, dtype=torch.int64, pin_memory=pin)
    slots_np = slots_cpu.numpy()
    slots_dev = torch.empty(n, dtype=torch.int64, device=dev.name)

    def host_path():
        slots_numpy(positions_np, batch, table_np, block_size, n, out=slots_np)
        return slots_dev.copy_(slots_cpu, non_blocking=pin)

    def triton_path():
        return kernels.compute_slot_mapping(positions, qsl, req, table, block_size, n)

    assert torch.equal(host_path().cpu(), triton_path().cpu())
    reps = 5 if smoke else 500
    out = {"num_tokens": n, "reps": reps}
    cases = [("numpy_copy", host_path), ("triton", triton_path)]
    gc.collect()
    gc.disable()
    try:
        for name, fn in cases:
            for _ in range(10):
                fn()
            dev.synchronize()
            host, total = [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
                dev.synchronize()
                t2 = time.perf_counter()
                host.append((t1 - t0) * 1e6)
                total.append((t2 - t0) * 1e6)
            out[f"{name}_host_us"] = round(statistics.median(host), 1)
            out[f"{name}_until_done_us"] = round(statistics.median(total), 1)
    finally:
        gc.enable()
    out["host_speedup"] = round(out["numpy_copy_host_us"] / out["triton_host_us"], 2)
    out["until_done_speedup"] = round(out["numpy_copy_until_done_us"] / out["triton_until_done_us"], 2)
    out["ok"] = out["host_speedup"] >= 10
    return out


# ---------------------------------------------------------------------------------------- main
def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="write the figures here as JSON")
    p.add_argument("--smoke", action="store_true", help="CPU, tiny sizes: checks the bench runs, claims nothing")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --smoke)")
    args = p.parse_args(argv)
    dev = Device(args.device or ("cpu" if args.smoke else "cuda"))
    started = time.perf_counter()
    result = {
        "smoke": args.smoke,
        "device": torch.cuda.get_device_name() if dev.is_cuda else platform.processor() or "cpu",
        "torch": torch.__version__,
        "triton": __import__("triton").__version__,
        "queue_ms": QUEUE_MS,
        "sleep_cycles_per_ms": dev.calibrate(),
    }
    result["builders"] = bench_builders(dev, args.smoke)
    result["serve_loop"] = bench_serve_loop(dev, args.smoke)
    result["slot_mapping"] = bench_slot_mapping(dev, args.smoke)
    result["elapsed_s"] = round(time.perf_counter() - started, 1)

    print(f"device: {result['device']}  torch {result['torch']}  queue {QUEUE_MS} ms" + ("  [SMOKE: no claims]" if args.smoke else ""))
    print(f"{'builder (medians of ' + str(result['builders'][0]['reps']) + ')':34} {'impl':6} {'idle us':>9} {'queued us':>10} {'ratio':>7}  ok")
    for r in result["builders"]:
        ok = "-" if r["ok"] is None else "yes" if r["ok"] else "NO"
        grew = f"  (staging grew {r['staging_growths_timed']}x while timed)" if r["staging_growths_timed"] else ""
        print(f"{r['builder']:34} {r['impl']:6} {r['idle_us']:9.1f} {r['queued_us']:10.1f} {r['ratio']:7.2f}  {ok}{grew}")
    print(f"{'serve loop':34} {'naive tok/s':>12} {'fixed tok/s':>12} {'speedup':>8}  same tokens")
    for r in result["serve_loop"]:
        print(
            f"{r['model']:34} {r['naive_tokens_per_s']:12.1f} {r['fixed_tokens_per_s']:12.1f} "
            f"{r['speedup']:8.3f}  {'yes' if r['same_tokens'] else 'NO'}"
        )
    s = result["slot_mapping"]
    print(
        f"slot mapping, {s['num_tokens']} tokens: numpy+copy {s['numpy_copy_host_us']} us host "
        f"({s['numpy_copy_until_done_us']} until done), triton {s['triton_host_us']} us host "
        f"({s['triton_until_done_us']} until done): "
        f"{s['host_speedup']}x host, {s['until_done_speedup']}x until done"
    )
    print(f"elapsed {result['elapsed_s']} s")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
