"""A custom fused RMSNorm written in Triton, checked against the PyTorch reference once, then used
in a small inference loop. (Triton's interpreter runs it on the CPU: TRITON_INTERPRET=1.)"""
# parity: stdout is the same on every device

import os

import torch
import triton
import triton.language as tl

device = os.environ.get("PARITY_DEVICE", "cuda")


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x / rms * w, mask=mask)


def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    rows, cols = x.shape
    rmsnorm_kernel[(rows,)](x, weight, out, cols, eps, BLOCK=triton.next_power_of_2(cols))
    return out


torch.manual_seed(7)
weight = (torch.rand(48) + 0.5).to(device)  # drawn on the CPU: the same numbers on every device
proj = torch.randn(48, 10).to(device)
x = torch.randn(6, 48).to(device)
noise = torch.randn(3, 6, 48).to(device)

reference = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
assert torch.allclose(rmsnorm(x, weight), reference, atol=1e-4), "kernel disagrees with PyTorch"

picks = []
for i in range(3):
    x = rmsnorm(x, weight) + 0.1 * noise[i]
    picks.append((rmsnorm(x, weight) @ proj).argmax(-1))
print("classes:", torch.stack(picks).cpu().tolist())
