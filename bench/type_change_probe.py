"""How long tensor code runs slower after a change to `torch.Tensor` (CPU is enough).

Installing a trap sets attributes on `torch.Tensor`, and any such change gives the class a new
version: CPython's specialised instructions that read tensor attributes and methods fall back to
their generic forms and re-specialise only after some runs. This times one small body of tensor
attribute and method reads run by run after a change (an attribute set and removed), as the
median over many trials of its time over its time long after.

    python bench/type_change_probe.py [--trials 300] [--runs 120]
"""

import argparse
import statistics
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--runs", type=int, default=120)
    args = parser.parse_args()
    x = torch.ones(4)

    def body():
        return x.shape, x.dtype, x.dim(), x.is_cuda, x.t(), x.device, x.size(0), x.view(2, 2)

    def run(n):
        out = []
        for _ in range(n):
            t = time.perf_counter_ns()
            body()
            out.append(time.perf_counter_ns() - t)
        return out

    run(2000)
    trials = []
    for _ in range(args.trials):
        torch.Tensor._syncscope_probe = None  # the change: one attribute set and removed
        del torch.Tensor._syncscope_probe
        trials.append(run(args.runs))
        run(200)  # long after: specialised again
    median = [statistics.median(t[i] for t in trials) for i in range(args.runs)]
    settled = statistics.median(median[(2 * args.runs) // 3:])
    print("run after the change: time / time once settled")
    for i in (0, 1, 2, 4, 8, 16, 24, 32, 48, 64, 96):
        if i < args.runs:
            print(f"{i:4d}  {median[i] / settled:.3f}")


if __name__ == "__main__":
    main()
