"""A hand-written decoder whose per-token step is compiled with torch.compile, driven by a host
loop with a static KV cache: greedy decoding, and an early-exit check on the host every few steps."""
# parity: stdout is the same on every device

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

device = os.environ.get("PARITY_DEVICE", "cuda")
VOCAB, DIM, HEADS, MAX_LEN, EOS = 64, 32, 4, 24, 3


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.out = nn.Linear(DIM, DIM, bias=False)

    def forward(self, x, k_cache, v_cache, pos):
        b = x.shape[0]
        q, k, v = self.qkv(x).view(b, 1, 3, HEADS, DIM // HEADS).unbind(2)
        k_cache.index_copy_(1, pos, k)  # write this position of the static cache
        v_cache.index_copy_(1, pos, v)
        visible = torch.arange(MAX_LEN, device=x.device) <= pos  # positions written so far
        att = torch.einsum("bqhd,bkhd->bhqk", q, k_cache) / (DIM // HEADS) ** 0.5
        att = att.masked_fill(~visible, float("-inf")).softmax(-1)
        return self.out(torch.einsum("bhqk,bkhd->bqhd", att, v_cache).reshape(b, 1, DIM))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens, k_cache, v_cache, pos):
        h = self.embed(tokens)
        h = h + self.attn(F.rms_norm(h, (DIM,)), k_cache, v_cache, pos)
        h = h + self.mlp(F.rms_norm(h, (DIM,)))
        return self.head(h)[:, -1]


torch.manual_seed(5)
model = Decoder().to(device).eval()


@torch.compile(fullgraph=True, dynamic=False)
def decode_step(tokens, k_cache, v_cache, pos):
    logits = model(tokens, k_cache, v_cache, pos)
    return logits.argmax(-1, keepdim=True)


batch = 3
tokens = torch.tensor([[5], [9], [60]], device=device)
k_cache = torch.zeros(batch, MAX_LEN, HEADS, DIM // HEADS, device=device)
v_cache = torch.zeros_like(k_cache)
generated = [tokens]
with torch.no_grad():
    for step in range(16):
        pos = torch.tensor([step], device=device)
        tokens = decode_step(tokens, k_cache, v_cache, pos)
        generated.append(tokens)
        if step % 4 == 3 and bool((tokens == EOS).all()):  # every 4 steps: has every row stopped?
            break

print("tokens:", torch.cat(generated, dim=1).tolist())
