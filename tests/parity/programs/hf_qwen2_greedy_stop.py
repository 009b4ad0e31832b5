"""Chat-style completion with a Qwen2-style model: greedy decoding of a left-padded batch with a
custom stopping criterion (a row is done at its first stop token), and the number of
decoding steps taken read back. Tiny random config, fixed seed, no download."""
# parity: stdout is the same on every device

import os

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM, StoppingCriteria, StoppingCriteriaList

device = os.environ.get("PARITY_DEVICE", "cuda")


class StopOnTokens(StoppingCriteria):
    """Done for a row once its last token is one of the stop tokens (what chat servers do)."""

    def __init__(self, stop_ids):
        self.stop_ids = torch.tensor(stop_ids, device=device)

    def __call__(self, input_ids, scores, **kwargs):
        return torch.isin(input_ids[:, -1], self.stop_ids)


config = Qwen2Config(
    vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2,
    initializer_range=0.2,
)
torch.manual_seed(3)
model = Qwen2ForCausalLM(config).to(device).eval()

prompts = [[2, 10, 20, 30], [2, 44, 45], [2, 7, 8, 9, 10, 11]]
width = max(map(len, prompts))
input_ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts], device=device)
attention_mask = input_ids.ne(0).to(torch.long)

with torch.no_grad():
    out = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, do_sample=False, max_new_tokens=10,
        stopping_criteria=StoppingCriteriaList([StopOnTokens([31, 88, 85])]),
        return_dict_in_generate=True, output_scores=True,
    )

for row in out.sequences[:, width:].tolist():
    print("reply:", row)
print("steps:", len(out.scores))
