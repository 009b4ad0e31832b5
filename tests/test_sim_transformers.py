"""Hugging Face `generate` on the simulated device gives plain CPU's tokens: tiny random-config
models built in the test (no download), left-padded batches, greedy, sampling and beam search,
under no_grad and inference_mode (the grad_mode fixture; `generate` itself runs under no_grad)."""

from __future__ import annotations

import pytest
import torch

import syncscope
from tests.sim_grad_modes import grad_mode  # noqa: F401

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("grad_mode")


def _llama():
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )
    return transformers.LlamaForCausalLM(config)


def _mixtral():  # a mixture of experts: routing with topk, index_add and per-expert masks
    config = transformers.MixtralConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64,
        pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )
    return transformers.MixtralForCausalLM(config)


def _gpt2():
    config = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                     pad_token_id=0, eos_token_id=1, bos_token_id=2)
    return transformers.GPT2LMHeadModel(config)


MODELS = {"llama": _llama, "mixtral": _mixtral, "gpt2": _gpt2}
SEARCHES = {
    "greedy": {"do_sample": False},
    "sampling": {"do_sample": True, "top_k": 10, "temperature": 0.9},
    "beam": {"do_sample": False, "num_beams": 3},
}


def _generate(model, device: str, search: dict, seed: int = 5):
    ids = torch.tensor([[0, 0, 5, 6, 7], [3, 4, 5, 6, 7]])  # the first row left-padded
    mask = (ids != 0).long()
    model.to(device)
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=5, **search)
    return out.cpu()


@pytest.mark.parametrize("search", list(SEARCHES))
@pytest.mark.parametrize("arch", list(MODELS))
def test_generate_on_the_simulated_device_gives_cpu_tokens(arch, search):
    torch.manual_seed(0)
    model = MODELS[arch]().eval()
    want = _generate(model, "cpu", SEARCHES[search])
    with syncscope.trap(device="sim") as t:
        got = _generate(model, "cuda", SEARCHES[search])
        model.cpu()
    assert torch.equal(got, want)
    assert t.events  # generate reads its stopping criteria on the host every step
