"""What the reference builders cost the host, and what the sync-free versions buy (GPU machine).

1. Each builder's host time with the GPU idle and behind ~25 ms of queued work
   (`torch.cuda._sleep`, calibrated): a sync-free builder takes about its idle time (goal:
   <= 1.2x), a naive one waits for the queue.
2. The serving loop (examples/serve_loop.py), naive vs fixed, tokens/s in one run (two model
   sizes, alternating runs, best of each).
3. Slot mapping at 8k tokens: the Triton kernel vs numpy + copy (goal: >= 10x less host time).

    python bench/reference_bench.py --out bench-reference.json        # on a GPU, ~1 minute
    python bench/reference_bench.py --smoke --out /tmp/smoke.json     # CPU, tiny sizes, no claims

Prints a compact table; writes every figure to --out (JSON).
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_impl.async_spec_decode import InputPreparer, slot_mapping_numpy  # noqa: E402
from reference_impl.common import ScheduledBatch, to_device  # noqa: E402
from reference_impl.gdn_chunk_indices import GDNPrefillMetadataBuilder, gdn_chunk_prefill  # noqa: E402
from reference_impl.gdn_spec_decode import GDNSpecDecodeMetadataBuilder  # noqa: E402
from reference_impl.kernels import compute_slot_mapping  # noqa: E402
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
        torch.cuda._sleep(1_000_000)  # warm-up
        rates = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(10_000_000)
            end.record()
            end.synchronize()
            rates.append(10_000_000 / start.elapsed_time(end))
        self.cycles_per_ms = statistics.median(rates)
        return self.cycles_per_ms

    def queue(self, ms: float) -> None:
        """Put `ms` of work on the stream without waiting for it."""
        if self.is_cuda:
            torch.cuda._sleep(int(self.cycles_per_ms * ms))


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

    def common(self):
        b = self.batch
        seq_lens = self.num_computed + b.query_lens
        table = to_device(self.state_table.numpy()[b.req_indices], self.dev)
        return make_common_metadata(b, to_device(seq_lens, self.dev), seq_lens, table, self.dev)

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
            gdn_chunk_prefill(g, meta.cu_seqlens, chunk_indices=meta.chunk_indices, chunk_offsets=meta.chunk_offsets)

        def async_setup():
            prep = InputPreparer(b.num_reqs, 512, 16, dev, impl)
            for row, computed in zip(b.req_indices, self.num_computed):
                prep.add_request(int(row), np.arange(512, dtype=np.int32), int(computed))
            prep.commit_block_table()
            return prep

        def run_async(prep):
            prep.prepare(b, b.num_tokens + 8)
            prep.finish(b, accepted)

        return {
            "gdn_spec_decode (PR 38047)": (self.common, lambda c: spec.build(c, accepted)),
            "gdn_chunk_indices (PR 38361)": (self.common, run_prefill),
            "seq_lens_upper_bound (PR 40654)": (self.common, context.build),
            "trtllm_indptr (PR 39546)": (self.common, trtllm.build),
            "async_spec_decode (PR 32951)": (async_setup, run_async),
        }


def time_builder(dev: Device, setup, run, reps: int, queued: bool) -> float:
    """Median host time of `run` in microseconds, the GPU idle or behind QUEUE_MS of work."""
    samples = []
    for _ in range(reps):
        inputs = setup()
        dev.synchronize()
        if queued:
            dev.queue(QUEUE_MS)
        t0 = time.perf_counter()
        run(inputs)
        samples.append((time.perf_counter() - t0) * 1e6)
        dev.synchronize()
    return statistics.median(samples)


def bench_builders(dev: Device, smoke: bool) -> list[dict]:
    scen = Scenarios(dev.name, smoke)
    rows = []
    for impl in ("naive", "fixed"):
        for name, (setup, run) in scen.builders(impl).items():
            time_builder(dev, setup, run, 3, queued=False)  # warm-up: Triton compilation, caches
            idle = time_builder(dev, setup, run, 5 if smoke else 30, queued=False)
            queued = time_builder(dev, setup, run, 3 if smoke else 10, queued=True)
            ratio = queued / idle if idle else float("nan")
            rows.append(
                {
                    "builder": name,
                    "impl": impl,
                    "idle_us": round(idle, 1),
                    "queued_us": round(queued, 1),
                    "ratio": round(ratio, 2),
                    # fixed: the queue must not show; naive: the host waits for most of it
                    "ok": ratio <= 1.2 if impl == "fixed" else queued >= 0.5 * QUEUE_MS * 1000,
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
    rng = np.random.default_rng(1)
    num_reqs, per_req = (8, 16) if smoke else (64, 128)  # 8192 tokens on the GPU
    block_size, max_blocks = 16, 1024
    batch = ScheduledBatch(
        np.arange(num_reqs, dtype=np.int32), np.full(num_reqs, per_req, np.int32), np.zeros(num_reqs, np.int32)
    )
    num_computed = rng.integers(0, (max_blocks - 16) * block_size, num_reqs).astype(np.int32)
    table_np = rng.integers(0, 1 << 20, (num_reqs, max_blocks)).astype(np.int32)
    n = batch.num_tokens
    positions_np, slots_np = slot_mapping_numpy(num_computed, batch, table_np, block_size, n)
    table, positions = to_device(table_np, dev.name), to_device(positions_np, dev.name)
    qsl, req = to_device(batch.query_start_loc, dev.name), to_device(batch.req_indices, dev.name)

    def host_path():
        _, slots = slot_mapping_numpy(num_computed, batch, table_np, block_size, n)
        return to_device(slots, dev.name)

    def triton_path():
        return compute_slot_mapping(positions, qsl, req, table, block_size, n)

    assert torch.equal(host_path().cpu(), triton_path().cpu())
    reps = 5 if smoke else 200
    out = {"num_tokens": n}
    for name, fn in (("numpy_copy", host_path), ("triton", triton_path)):
        for _ in range(3):
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
    print(f"{'builder':34} {'impl':6} {'idle us':>9} {'queued us':>10} {'ratio':>7}  ok")
    for r in result["builders"]:
        print(f"{r['builder']:34} {r['impl']:6} {r['idle_us']:9.1f} {r['queued_us']:10.1f} {r['ratio']:7.2f}  {'yes' if r['ok'] else 'NO'}")
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
        f"({s['triton_until_done_us']} until done): {s['host_speedup']}x host, {s['until_done_speedup']}x until done"
    )
    print(f"elapsed {result['elapsed_s']} s")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
