"""Which host->device copies make the host wait for the GPU queue? (run on the GPU machine)

Each case runs behind ~25 ms of queued GPU work; the host time of the call over the queued time
is the ratio (about 1: waited for the queue; about 0: did not). Also lists what syncscope's
runtime trap records for each case, so the detector's rules can be checked against the truth.

    python bench/copy_probe.py
"""

import time

import torch
from gpu_sleep import queue_sleep, sleep_cycles_per_ms  # bench/ is sys.path[0] when run as a script

import syncscope


def main():
    cycles_per_ms = sleep_cycles_per_ms()
    # float32 elements; 512 KiB-2 MiB place the size at which a pageable copy starts to wait
    sizes = {"64 B": 16, "256 KiB": 64 << 10, "512 KiB": 128 << 10, "1 MiB": 256 << 10, "2 MiB": 512 << 10,
             "4 MiB": 1 << 20, "32 MiB": 8 << 20, "256 MiB": 64 << 20}
    cases = {}
    for label, n in sizes.items():
        src = torch.ones(n)
        cases[f"pageable {label} .to(cuda, non_blocking=True)"] = lambda src=src: src.to("cuda", non_blocking=True)
    for label, n in (("64 B", 16), ("4 MiB", 1 << 20)):
        src = torch.ones(n)
        cases[f"fresh pin_memory() {label}"] = lambda src=src: src.pin_memory()
        cases[f"pin_memory().to(cuda, non_blocking=True) {label}"] = lambda src=src: src.pin_memory().to("cuda", non_blocking=True)
    print(f"{'case':58s} {'ratio':>6s}  syncscope events")
    for name, fn in cases.items():
        fn()
        torch.cuda.synchronize()
        queue_sleep(25, cycles_per_ms)
        t0 = time.perf_counter_ns()
        fn()
        waited = time.perf_counter_ns() - t0
        torch.cuda.synchronize()
        queue_sleep(25, cycles_per_ms)
        with syncscope.trap(device="cuda") as t:
            fn()
        torch.cuda.synchronize()
        # waited: what syncscope decided from the measured time (runtime/pageable.py)
        seen = [(e.kind, e.api, round((e.blocked_ns or 0) / 1e6, 2), f"waited={e.waited}") for e in t.events]
        print(f"{name:58s} {waited / 25e6:6.2f}  {seen}")


if __name__ == "__main__":
    main()
