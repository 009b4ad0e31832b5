"""A step with three host syncs: two inside the C++ extension (no hook sees them) and one
`.item()` (every hook sees it). Run as `python -m tests.gpu_ext.ext_demo` from the repository
root, under `syncscope run` and `syncscope oracle --scope tests.gpu_ext.ext_demo:step`."""

import torch

from tests.gpu_ext.sync_ext import load

EXT = load()


def step(x):
    y = x * 2  # L:free
    EXT.stream_sync(torch.cuda.current_stream().cuda_stream)  # L:ext_stream_sync
    z = y + 1  # L:free2
    first = EXT.read_first(z)  # L:ext_memcpy
    total = z.sum().item()  # L:item
    return first, total  # L:ret


def main():
    x = torch.ones(1 << 16, device="cuda")
    for _ in range(3):
        out = step(x)
    torch.cuda.synchronize()
    print("ext_demo", EXT.kind, out)


if __name__ == "__main__":
    main()
