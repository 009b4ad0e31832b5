"""Beam search with a Mixtral-style mixture-of-experts model: 3 beams, 2 returned hypotheses per
prompt with their scores, a left-padded batch. Tiny random config, fixed seed, no download."""

import os

import torch
from transformers import MixtralConfig, MixtralForCausalLM

device = os.environ.get("PARITY_DEVICE", "cuda")

config = MixtralConfig(
    vocab_size=80, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64,
    pad_token_id=0, eos_token_id=1, bos_token_id=2,
)
torch.manual_seed(2)
model = MixtralForCausalLM(config).to(device).eval()

input_ids = torch.tensor([[0, 0, 2, 30, 31], [2, 50, 51, 52, 53]], device=device)
attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], device=device)

with torch.no_grad():
    out = model.generate(
        input_ids, attention_mask=attention_mask, num_beams=3, num_return_sequences=2, max_new_tokens=6,
        length_penalty=1.0, early_stopping=True, return_dict_in_generate=True, output_scores=True,
    )

for row, score in zip(out.sequences.tolist(), out.sequences_scores.tolist()):
    print("hypothesis:", row[5:], "score: %.3f" % score)
