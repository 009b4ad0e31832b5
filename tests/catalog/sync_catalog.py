"""Every case of anchors.md section 1, one per line, for CUDA (real or simulated).

Each case line ends with `# expect: <kind>` (the host blocks; syncscope must report that kind on
that line) or `# expect: none` (the host does not block; nothing may be reported). Tests read the
expectations from this file's text, so the line numbers are never written down twice.
Written only for CUDA: under `syncscope run` on a machine with no GPU it runs on the simulated
device. `run_catalog()` is also called in-process by the tests.
"""

import torch


def run_catalog(device: str = "cuda") -> None:
    x = torch.arange(16, device=device, dtype=torch.float32)
    gpu_mask = x > 7
    cpu_mask = torch.arange(16) > 7
    gpu_long = torch.tensor([1, 3, 5], device=device)  # expect: h2d_copy
    cpu_long = torch.tensor([1, 3, 5])
    pinned = torch.ones(16).pin_memory()
    pageable = torch.ones(16)
    # Large enough that the driver cannot stage it in one go. Behind 25 ms of queued work on an
    # H200 (bench/copy_probe.py) a pageable non_blocking copy waited 0% of the queue at 256 KiB,
    # 35% at 4 MiB, 48% at 32 MiB and all of it at 256 MiB: it is never asynchronous.
    big_pageable = torch.ones(32 << 20)  # 128 MiB
    reps = torch.full((16,), 2, device=device, dtype=torch.long)
    scalar = x.sum()

    # -- blocks the host ----------------------------------------------------------------------
    x.sum().item()  # expect: item
    x.tolist()  # expect: tolist
    x.cpu()  # expect: cpu_copy
    x.to("cpu")  # expect: cpu_copy
    x.cpu().numpy()  # expect: cpu_copy
    int(scalar)  # expect: item
    float(scalar)  # expect: item
    bool(scalar)  # expect: item
    if scalar:  # expect: item
        pass
    x.max().item()  # expect: item
    x[gpu_mask]  # expect: bool_mask_index
    y = x.clone()
    y[gpu_mask] = x[:8] * 2  # expect: bool_mask_index
    y[cpu_mask] = 1.0  # expect: host_index
    x[cpu_long]  # expect: host_index
    torch.nonzero(x)  # expect: nonzero
    torch.argwhere(x)  # expect: nonzero
    torch.where(gpu_mask)  # expect: nonzero
    torch.masked_select(x, gpu_mask)  # expect: dynamic_shape
    torch.unique(x)  # expect: dynamic_shape
    torch.bincount(gpu_long)  # expect: dynamic_shape
    torch.histc(x, bins=4)  # expect: dynamic_shape
    torch.repeat_interleave(x, reps)  # expect: repeat_interleave
    torch.tensor([1.0, 2.0], device=device)  # expect: h2d_copy
    x.new_tensor([1.0, 2.0])  # expect: h2d_copy
    pageable.to(device)  # expect: h2d_copy
    y[0:16] = pageable  # expect: h2d_copy
    y[3] = 5.0  # expect: scalar_store
    big_pageable.to(device, non_blocking=True)  # expect: h2d_pageable
    torch.cuda.current_stream().synchronize()  # expect: stream_sync
    torch.cuda.synchronize()  # expect: device_sync
    event = torch.cuda.Event()
    event.record()
    event.synchronize()  # expect: event_sync

    # -- does not block -----------------------------------------------------------------------
    x[cpu_mask]  # expect: none
    y[gpu_mask] = 0.0  # expect: none
    x[gpu_long]  # expect: none
    y[0] = scalar  # expect: none
    torch.repeat_interleave(x, reps, output_size=32)  # expect: none
    torch.repeat_interleave(x, 2)  # expect: none
    pinned.to(device, non_blocking=True)  # expect: none
    y.copy_(pinned, non_blocking=True)  # expect: none
    x.to("cpu", non_blocking=True)  # expect: none
    y[2:5] = 3.0  # expect: none
    y[...] = 0  # expect: none
    y.fill_(1.0)  # expect: none
    torch.full((4,), 7.0, device=device)  # expect: none
    torch.cumsum(x, 0)  # expect: none
    torch.argsort(x)  # expect: none
    torch.sort(x)  # expect: none
    torch.topk(x, 3)  # expect: none
    torch.searchsorted(x, x[:4])  # expect: none
    torch.bucketize(x, x[:4])  # expect: none
    y.scatter_add_(0, gpu_long, x[:3])  # expect: none
    torch.diff(x)  # expect: none
    x.max()  # expect: none
    gpu_mask.any()  # expect: none
    torch.multinomial(x + 1, 2)  # expect: none
    torch.nonzero_static(x, size=16)  # expect: none


if __name__ == "__main__":
    run_catalog()
    print("catalog done")
