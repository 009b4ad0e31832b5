"""Perplexity evaluation of a GPT-2-style model over a few left-padded batches (labels -100 on
padding), with the running loss logged with `.item()` per batch. Tiny random config, no download."""
# parity: stdout is the same on every device

import math
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel

device = os.environ.get("PARITY_DEVICE", "cuda")

config = GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64, pad_token_id=0)
torch.manual_seed(13)
model = GPT2LMHeadModel(config).to(device).eval()

generator = torch.Generator().manual_seed(14)
total_loss, total_tokens = 0.0, 0
for batch_index in range(3):
    lengths = torch.randint(4, 12, (4,), generator=generator).tolist()
    width = max(lengths)
    rows = [[0] * (width - n) + torch.randint(3, 64, (n,), generator=generator).tolist() for n in lengths]
    input_ids = torch.tensor(rows, device=device)
    attention_mask = (input_ids != 0).long()
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    with torch.no_grad():
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    n = sum(lengths) - len(lengths)  # predicted tokens: each row's first token has no target
    total_loss += loss.item() * n
    total_tokens += n
    print(f"batch {batch_index}: loss {loss.item():.2f}")
print(f"perplexity {math.exp(total_loss / total_tokens):.1f}")
