"""A hand-written mixture-of-experts layer in the style of many research repos: top-2 routing, then
a Python loop over experts that gathers each expert's tokens with nonzero() and skips empty ones."""
# parity: stdout is the same on every device

import os

import torch
import torch.nn as nn

device = os.environ.get("PARITY_DEVICE", "cuda")
DIM, EXPERTS, TOP_K = 24, 4, 2


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(DIM, EXPERTS, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(DIM, 48), nn.SiLU(), nn.Linear(48, DIM)) for _ in range(EXPERTS))

    def forward(self, x):
        weights, chosen = self.router(x).softmax(-1).topk(TOP_K, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = torch.nonzero(chosen == e, as_tuple=True)  # a sync: the count is data-dependent
            if token.numel() == 0:
                continue
            out.index_add_(0, token, expert(x[token]) * weights[token, slot, None])
        return out


torch.manual_seed(12)
layer = MoE().to(device)
x = torch.randn(32, DIM).to(device)
with torch.no_grad():
    for _ in range(3):
        x = x + layer(torch.nn.functional.layer_norm(x, (DIM,)))
    load = torch.bincount(layer.router(x).argmax(-1), minlength=EXPERTS)
print("expert load:", load.tolist())
print("strongest feature:", x.abs().argmax(-1)[:8].tolist(), "peak:", round(x.abs().max().item()))  # an .item() for a log line
