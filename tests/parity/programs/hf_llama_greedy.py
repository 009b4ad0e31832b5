"""Batch completion with a Llama-style model: a left-padded batch of prompts, greedy decoding.

The model is a tiny random-config one built from its config with a fixed seed (no download).
"""
# parity: stdout is the same on every device

import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM

device = os.environ.get("PARITY_DEVICE", "cuda")

PAD, EOS, BOS = 0, 1, 2
config = LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=128, pad_token_id=PAD, eos_token_id=EOS, bos_token_id=BOS,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval().to(device)

prompts = [[BOS, 17, 33, 9], [BOS, 5, 71, 44, 90, 12, 61], [BOS, 100]]
width = max(len(p) for p in prompts)
input_ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts], device=device)
attention_mask = (input_ids != PAD).long()

with torch.no_grad():
    out = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, do_sample=False)

for row, prompt in zip(out.tolist(), prompts):
    print("completion:", row[width:])
