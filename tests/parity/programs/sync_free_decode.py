"""A decode loop written to stay on the device: greedy picks on the device, finished rows
masked with torch.where, tokens written into a preallocated buffer; the host reads the result once,
after the loop. Its step has no host sync."""
# parity: stdout is the same on every device

import os

import torch
import torch.nn as nn

device = os.environ.get("PARITY_DEVICE", "cuda")
VOCAB, DIM, BATCH, STEPS, EOS, PAD = 50, 32, 4, 12, 2, 0

torch.manual_seed(9)
model = nn.Sequential(nn.Embedding(VOCAB, DIM), nn.Linear(DIM, DIM), nn.GELU(), nn.Linear(DIM, VOCAB)).to(device)

out = torch.full((BATCH, STEPS), PAD, dtype=torch.long, device=device)
tokens = torch.arange(3, 3 + BATCH, device=device)
finished = torch.zeros(BATCH, dtype=torch.bool, device=device)
eos = torch.tensor(EOS, device=device)

with torch.inference_mode():
    for step in range(STEPS):
        logits = model(tokens)
        tokens = logits.argmax(-1)  # greedy: no generator, the same ids on every device
        tokens = torch.where(finished, PAD, tokens)
        out[:, step] = tokens
        finished |= tokens == eos

print("tokens:", out.tolist())
print("finished:", finished.tolist())
