"""Sampling with a Qwen2-MoE-style model (routed experts plus a shared expert): a repetition
penalty, top-k, a left-padded batch. Tiny random config, fixed seeds, no download."""

import os

import torch
from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

device = os.environ.get("PARITY_DEVICE", "cuda")

config = Qwen2MoeConfig(
    vocab_size=96, hidden_size=48, intermediate_size=64, moe_intermediate_size=32,
    shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    pad_token_id=0, eos_token_id=1, bos_token_id=2, decoder_sparse_step=1,
)
torch.manual_seed(4)
model = Qwen2MoeForCausalLM(config).eval()
model.to(device)

input_ids = torch.tensor([[0, 0, 0, 2, 60], [2, 61, 62, 63, 64]]).to(device)
attention_mask = (input_ids > 0).int()

torch.manual_seed(99)
with torch.no_grad():
    out = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=True, top_k=8,
                         repetition_penalty=1.3, max_new_tokens=6)
print("tokens:", out[:, input_ids.shape[1]:].tolist())
