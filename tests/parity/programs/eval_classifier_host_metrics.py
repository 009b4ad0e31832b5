"""A detection-style evaluation loop written the easy way: confident predictions picked with a
boolean mask, per-class hits counted with torch.unique, scores pulled to numpy for a histogram,
and a Python `if` on a device value. Each of those is a host sync."""
# parity: stdout is the same on every device

import os

import numpy as np
import torch
import torch.nn as nn

device = os.environ.get("PARITY_DEVICE", "cuda")

torch.manual_seed(11)
model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 5)).to(device).eval()
batches = [(torch.randn(20, 12), torch.randint(0, 5, (20,))) for _ in range(4)]

hits = np.zeros(5, dtype=np.int64)
histogram = np.zeros(5, dtype=np.int64)
with torch.no_grad():
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        probs = (4 * model(x)).softmax(-1)  # a sharper distribution
        score, pred = probs.max(-1)
        confident = score > 0.3
        kept_pred, kept_y = pred[confident], y[confident]  # boolean-mask indexing: the size is on the device
        classes, counts = torch.unique(kept_pred[kept_pred == kept_y], return_counts=True)
        hits[classes.cpu().numpy()] += counts.cpu().numpy()
        histogram += np.histogram(score.cpu().numpy(), bins=5, range=(0.0, 1.0))[0]
        if (score < 0.25).any():  # a Python `if` on a device bool
            print("low-confidence rows:", torch.nonzero(score < 0.25).flatten().tolist())

print("hits per class:", hits.tolist())
print("score histogram:", histogram.tolist())
