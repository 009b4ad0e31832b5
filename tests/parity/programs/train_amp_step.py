"""A fine-tuning loop in the common recipe: bf16 autocast, a GradScaler, gradient clipping,
AdamW, a learning-rate schedule, and the loss logged with `.item()` every few steps."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

device = os.environ.get("PARITY_DEVICE", "cuda")

torch.manual_seed(6)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
scaler = torch.amp.GradScaler(device, init_scale=1024.0)

data = torch.randn(64, 16)
labels = (data[:, :5].argmax(1)).long()

for step in range(8):
    rows = slice(8 * step, 8 * step + 8)
    x, y = data[rows].to(device), labels[rows].to(device)
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        logits = model(x)
    loss = F.cross_entropy(logits.float(), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)  # skipped when the unscaled gradients hold an inf or a NaN
    scaler.update()
    scheduler.step()
    if step % 2 == 1:
        print(f"step {step} loss {loss.item():.2f} scale {scaler.get_scale():.0f}")
