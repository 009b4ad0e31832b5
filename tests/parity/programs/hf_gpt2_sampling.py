"""Story sampling with a GPT-2-style model: top-k / top-p sampling at a temperature, two samples
per prompt, a left-padded batch. Tiny random config, fixed seeds, no download."""

import os

import torch
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

device = os.environ.get("PARITY_DEVICE", "cuda")

PAD, EOS = 0, 1
config = GPT2Config(vocab_size=96, n_embd=64, n_layer=2, n_head=4, n_positions=96,
                    pad_token_id=PAD, eos_token_id=EOS, bos_token_id=EOS)
torch.manual_seed(1)
model = GPT2LMHeadModel(config).to(device).eval()

prompts = [[11, 12, 13, 14, 15], [40, 41]]
width = max(map(len, prompts))
batch = {
    "input_ids": torch.tensor([[PAD] * (width - len(p)) + p for p in prompts]).to(device),
    "attention_mask": torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts]).to(device),
}
generation = GenerationConfig(do_sample=True, top_k=20, top_p=0.9, temperature=0.8, max_new_tokens=6,
                              num_return_sequences=2, pad_token_id=PAD, eos_token_id=EOS)

torch.manual_seed(1234)
with torch.inference_mode():
    sequences = model.generate(**batch, generation_config=generation)

for i, row in enumerate(sequences.cpu().tolist()):
    print(f"sample {i // 2}.{i % 2}:", row[width:])
