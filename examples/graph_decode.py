"""A serving-style decode loop: the decode step is captured once in a CUDA graph under bf16
autocast, then replayed for every token, with a sampler outside the graph.

    python examples/graph_decode.py                       # GPU if there is one, else CPU eager
    syncscope run --device sim examples/graph_decode.py   # the CUDA path, on the CPU
    syncscope run --device sim examples/graph_decode.py --plant-sync

With `--plant-sync` the decode step reads a value on the host (`.item()`) inside the capture:
a GPU refuses the capture there, and so does the simulated device (kind `sync_in_capture` at
that line). Without a GPU the program runs the same step eagerly under CPU autocast; the model
is written so that CPU and CUDA autocast run every op in the same dtype (linear in bf16,
layer norms and the residual stream in fp32), so the tokens are the same on all three.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, BATCH, STEPS, EOS = 96, 64, 4, 16, 0


class TinyDecoder(nn.Module):
    """One token in, next-token logits out; a recurrent state stands in for the KV cache and is
    updated in place, as a cache is."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM)) for _ in range(2))
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor, state: torch.Tensor, plant_sync: bool = False) -> torch.Tensor:
        h = self.embed(tokens) + state
        for block in self.blocks:
            h = h + block(F.layer_norm(h, (DIM,))).float()
        if plant_sync and h.abs().amax().item() > 1e6:  # planted: sync_in_capture
            h = h / 2
        state.mul_(0.5).add_(h, alpha=0.5)
        return self.head(F.layer_norm(h, (DIM,)))


def sample(logits: torch.Tensor, generator: torch.Generator, temperature: float = 0.8) -> torch.Tensor:
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plant-sync", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = TinyDecoder().eval()
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    model.to(device)  # sync: h2d_copy
    generator = torch.Generator(device=device)
    generator.manual_seed(1234)

    tokens = torch.tensor([5, 17, 42, 77], device=device)  # sync: h2d_copy (the prompt)
    state = torch.zeros(BATCH, DIM, device=device)
    out = []
    with torch.inference_mode(), torch.autocast(device, dtype=torch.bfloat16):
        if on_gpu:
            static_tokens = tokens.clone()
            warm = torch.cuda.Stream()
            warm.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(warm):
                for _ in range(2):  # warm-up on a side stream, as torch asks before a capture
                    model(static_tokens, state.clone())
            torch.cuda.current_stream().wait_stream(warm)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):  # sync: device_sync (torch synchronizes before capturing)
                static_logits = model(static_tokens, state, plant_sync=args.plant_sync)
            state.zero_()  # the capture ran the step once on the simulated device: start clean
            for _ in range(STEPS):
                graph.replay()
                tokens = sample(static_logits, generator)
                static_tokens.copy_(tokens)
                out.append(tokens)
                if (tokens == EOS).all():  # sync: item
                    break
        else:
            for _ in range(STEPS):
                logits = model(tokens, state, plant_sync=args.plant_sync)
                tokens = sample(logits, generator)
                out.append(tokens)
                if (tokens == EOS).all():
                    break
    text = torch.stack(out, dim=1).tolist()  # sync: tolist
    for row in text:
        print(" ".join(map(str, row)))


if __name__ == "__main__":
    main()
