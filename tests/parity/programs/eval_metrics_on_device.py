"""An evaluation loop that keeps its metrics on the device: per-batch correct counts and summed
losses are accumulated in device tensors, and read on the host once, after the loop. Its step has
no host sync."""
# parity: stdout is the same on every device

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

device = os.environ.get("PARITY_DEVICE", "cuda")

torch.manual_seed(10)
model = nn.Sequential(nn.Linear(20, 40), nn.ReLU(), nn.Linear(40, 4)).to(device).eval()
inputs = torch.randn(10, 16, 20)
targets = torch.randint(0, 4, (10, 16))
if device == "cuda":  # page-locked, so that non_blocking copies do not wait (needs an accelerator)
    inputs, targets = inputs.pin_memory(), targets.pin_memory()

correct = torch.zeros((), dtype=torch.long, device=device)
loss_sum = torch.zeros((), device=device)
with torch.inference_mode():
    for x, y in zip(inputs, targets):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        logits = model(x)
        correct += (logits.argmax(-1) == y).sum()
        loss_sum += F.cross_entropy(logits, y, reduction="sum")

total = inputs.shape[0] * inputs.shape[1]
print(f"accuracy {correct.item() / total:.3f} loss {loss_sum.item() / total:.3f}")
