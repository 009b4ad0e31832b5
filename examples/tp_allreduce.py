"""A small tensor-parallel decode loop with an all-reduce per layer, and one rank with a planted sync.

Each rank holds a slice of every MLP (Megatron style: the first weight split by columns, the
second by rows), so each rank's output is a partial sum that `all_reduce` completes. One rank
(`--planted-rank`) also logs an activation norm with `.item()` every step: a host sync on that
rank only, which `bench/torchrun_check.sh` must find in the per-rank reports, on that rank.

On GPUs (NCCL):
    torchrun --standalone --nproc-per-node 2 -m syncscope run --device cuda examples/tp_allreduce.py
On CPU (gloo; the simulated device stands in for the GPUs):
    torchrun --standalone --nproc-per-node 2 -m syncscope run --device sim examples/tp_allreduce.py
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

import syncscope


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--planted-rank", type=int, default=1, help="the rank that syncs every step (-1: none)")
    parser.add_argument("--device", default="cuda", help="cuda (real or simulated) or cpu")
    return parser.parse_args()


class TensorParallelMLP:
    """One rank's shard of `x + W2(gelu(W1 x))`; the caller all-reduces the partial output."""

    def __init__(self, hidden: int, rank: int, world: int, device: torch.device, generator: torch.Generator):
        ffn = 4 * hidden
        assert ffn % world == 0, "the FFN width must split evenly across ranks"
        # Every rank draws the full weights from the same seed and keeps its slice, so the
        # result does not depend on the number of ranks.
        w1 = torch.randn(hidden, ffn, generator=generator) / hidden**0.5
        w2 = torch.randn(ffn, hidden, generator=generator) / ffn**0.5
        shard = ffn // world
        self.w1 = w1[:, rank * shard : (rank + 1) * shard].contiguous().to(device)
        self.w2 = w2[rank * shard : (rank + 1) * shard, :].contiguous().to(device)

    def partial(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ self.w1) @ self.w2


class AllReduce:
    def __init__(self, backend: str):
        self.backend = backend

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        if self.backend == "nccl" or t.device.type == "cpu":
            dist.all_reduce(t)  # on the GPU's stream: no host wait
            return t
        # gloo reduces host memory only. This CPU stand-in for NCCL goes through the host: a
        # sync of the harness, not of the model, so it is allowed (still reported as allowed).
        with syncscope.allow_sync("gloo all-reduce through host memory (CPU stand-in for NCCL)"):
            host = t.cpu()
            dist.all_reduce(host)
            return host.to(t.device)


def log_activation_norm(out: torch.Tensor) -> float:
    return out.norm().item()  # planted sync: the host waits for the GPU every step


def main() -> None:
    args = parse_args()
    use_nccl = args.device == "cuda" and torch.version.cuda is not None and torch.cuda.is_available()
    backend = "nccl" if use_nccl else "gloo"
    if use_nccl:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)  # before the process group, so NCCL binds this GPU
    else:
        device = torch.device(args.device)
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    generator = torch.Generator().manual_seed(0)
    layers = [TensorParallelMLP(args.hidden, rank, world, device, generator) for _ in range(args.layers)]
    x = (torch.randn(args.batch, args.hidden, generator=generator) * 0.1).to(device)
    all_reduce = AllReduce(backend)
    # Warm-up, outside the step: the first collective sets up the communicator, which may wait.
    all_reduce(torch.zeros(1, device=device))
    norms = []

    for _ in range(args.steps):
        with syncscope.region("tp_step"):
            for layer in layers:
                x = x + all_reduce(layer.partial(x))
            x = F.layer_norm(x, (args.hidden,))
            if rank == args.planted_rank:
                norms.append(log_activation_norm(x))

    checksum = x.double().abs().sum().item()  # once, after the loop (outside the region)
    print(f"rank {rank}/{world} ({backend}, {device}): checksum {checksum:.6f}, {len(norms)} norms logged", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
