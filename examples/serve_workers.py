"""A serving loop with two worker processes: the program `syncscope run --monitor` is shown on.

The front end (this process) admits batches of requests and hands them to two workers started
with multiprocessing's spawn method (as vLLM and SGLang start theirs); each worker runs decode
steps on the device, one `syncscope.region("decode_step")` per step, and syncs as naive serving
code does: the sampled tokens read back with `.tolist()` every step, a stop check `if
finished.any():`, and a `torch.cuda.synchronize()` every tenth step. The front end copies each
batch's prompt lengths to the device with `torch.tensor(list, device="cuda")` (a blocking copy) in
a region of its own, and copies the token total the same way as the very last thing it does.
Worker 1 gets fewer batches and exits while worker 0 is still serving.

    python examples/serve_workers.py                                      # on a GPU
    syncscope run --monitor --sample 0.1 examples/serve_workers.py        # metrics on :9400
    syncscope run --monitor --device sim examples/serve_workers.py --batches 20

Written for CUDA; under `syncscope run` without a GPU the simulated device runs it (the workers
too). Without syncscope installed, the regions are no-ops.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import time

import torch

try:
    from syncscope import region
except ImportError:  # the program runs without syncscope too
    def region(name):
        return contextlib.nullcontext()


VOCAB, HIDDEN = 64, 32


def decode(batch: int, steps: int, weight: torch.Tensor, step_sleep: float) -> int:
    state = torch.randn(batch, HIDDEN, device="cuda")
    generated = 0
    for step in range(steps):
        with region("decode_step"):
            logits = state @ weight
            tokens = logits.argmax(dim=-1)
            generated += len(tokens.tolist())  # the sampled tokens read on the host: a sync
            finished = tokens == (step % VOCAB)
            if finished.any():  # a stop check on the host: a sync
                state = state * 0.5
            if step % 10 == 9:
                torch.cuda.synchronize()  # an explicit wait, once in ten steps
            state = torch.tanh(state + logits[:, :HIDDEN])
        time.sleep(step_sleep)
    return generated


def worker(rank: int, requests, results, step_sleep: float) -> None:
    torch.manual_seed(rank)
    weight = torch.randn(HIDDEN, VOCAB, device="cuda")
    while True:
        job = requests.get()
        if job is None:
            break
        batch, steps = job
        results.put((rank, decode(batch, steps, weight, step_sleep)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=12, help="batches for worker 0 (worker 1 gets half)")
    parser.add_argument("--steps", type=int, default=20, help="decode steps per batch")
    parser.add_argument("--step-sleep", type=float, default=0.005, help="seconds between steps (the rest of a server)")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    queues = [ctx.Queue(), ctx.Queue()]
    results = ctx.Queue()
    workers = [ctx.Process(target=worker, args=(r, queues[r], results, args.step_sleep), name=f"worker{r}") for r in (0, 1)]
    for w in workers:
        w.start()
    plan = [args.batches, args.batches // 2]
    sent = 0
    for i in range(args.batches):
        for rank in (0, 1):
            if i < plan[rank]:
                with region("admit"):
                    lengths = torch.tensor([8 + i, 4 + rank], device="cuda")  # a blocking host->device copy
                queues[rank].put((int(2 + i % 3), args.steps))
                sent += 1
        if i == plan[1]:
            queues[1].put(None)  # worker 1 is done: it exits while worker 0 serves on
    if plan[1] >= args.batches:
        queues[1].put(None)
    tokens = sum(results.get()[1] for _ in range(sent))
    queues[0].put(None)
    for w in workers:
        w.join()
    with region("drain"):
        # The last thing the program does is a sync: its count reaches Prometheus only because
        # `syncscope run --monitor` waits at exit for one more scrape.
        served = torch.tensor([tokens], device="cuda")
    print(f"served {sent} batches, {tokens} tokens; worker exit codes {[w.exitcode for w in workers]}")


if __name__ == "__main__":
    main()
