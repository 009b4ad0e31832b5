"""A small LLM serving loop built on reference_impl: the program `syncscope run` is shown on.

A scheduler mixes prefills, plain decodes and speculative decodes (drafts accepted at random);
each step the runner prepares positions and KV slots, builds the attention metadata with the five
reference builders, runs a small hybrid model (gated linear-attention mixing with recurrent state,
a paged KV write, MLPs) and verifies the drafts, all on the device.

    python examples/serve_loop.py --impl naive --steps 200     # on a GPU
    syncscope run examples/serve_loop.py --impl naive          # finds the naive builders' syncs
    syncscope run examples/serve_loop.py --impl fixed          # only the two end-of-phase reads

`--impl naive` syncs in every step (accepted counts read on the host, device boolean masks,
`repeat_interleave` without `output_size`, `.tolist()` of `cu_seqlens`, the lazy `seq_lens_cpu`).
`--impl fixed` does the same work without a sync: the host runs ahead of the GPU. The program
deliberately syncs twice outside the steps: once after the warm-up steps and once at the end,
reading the generated-token count (that read waits for the device, which is what makes the
timing honest). The program is written for CUDA; without a GPU, run it under `syncscope run`,
which provides a simulated CUDA device. It does not import syncscope.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # reference_impl, from a checkout

from reference_impl.async_spec_decode import InputPreparer  # noqa: E402
from reference_impl.common import PinnedStaging, ScheduledBatch, ceil_div  # noqa: E402
from reference_impl.gdn_chunk_indices import GDNPrefillMetadataBuilder, gdn_chunk_prefill  # noqa: E402
from reference_impl.gdn_spec_decode import GDNSpecDecodeMetadataBuilder  # noqa: E402
from reference_impl.seq_lens_upper_bound import ChunkedContextBuilder, make_common_metadata  # noqa: E402
from reference_impl.trtllm_indptr import TrtllmMetadataBuilder  # noqa: E402


@dataclass
class Config:
    impl: str = "fixed"
    steps: int = 32
    warmup: int = 4
    seed: int = 0
    device: str = "cuda"
    max_batch: int = 32  # requests per step
    max_tokens: int = 1024  # tokens per step
    arrivals: int = 2  # new requests admitted per step at most
    prompt_len: tuple[int, int] = (16, 400)
    decode_steps: tuple[int, int] = (8, 40)
    spec_fraction: float = 0.5  # requests that decode with drafts
    num_spec: int = 3  # drafts per spec-decode step
    accept_rate: float = 0.7
    hidden: int = 512
    layers: int = 2
    heads: int = 8
    vocab: int = 4096
    block_size: int = 16
    kv_dim: int = 64
    pad_to: int = 8  # token count padded to a multiple (as for CUDA graphs)


# ------------------------------------------------------------------------------------ scheduler
@dataclass
class Request:
    row: int
    prompt_len: int
    decode_steps_left: int
    spec: bool
    prefilled: bool = False
    blocks: list[int] = field(default_factory=list)


class Scheduler:
    """Host only. Admits an endless stream of requests; decodes first, then prefills."""

    def __init__(self, cfg: Config, preparer: InputPreparer, max_blocks: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.preparer = preparer
        self.free_rows = list(range(cfg.max_batch - 1, -1, -1))
        self.free_blocks = list(range(cfg.max_batch * max_blocks - 1, -1, -1))
        self.running: list[Request] = []
        self.finished = 0

    def schedule(self) -> tuple[ScheduledBatch, list[Request]]:
        cfg = self.cfg
        decodes = [r for r in self.running if r.prefilled]
        budget = cfg.max_tokens - sum(1 + (cfg.num_spec if r.spec else 0) for r in decodes)
        for _ in range(cfg.arrivals):
            prompt = int(self.rng.integers(*cfg.prompt_len))
            if not self.free_rows or prompt > budget:
                break
            req = Request(
                row=self.free_rows.pop(),
                prompt_len=prompt,
                decode_steps_left=int(self.rng.integers(*cfg.decode_steps)),
                spec=bool(self.rng.random() < cfg.spec_fraction),
            )
            self.preparer.add_request(req.row, np.zeros(0, np.int32))
            self.running.append(req)
            budget -= prompt
        reqs = decodes + [r for r in self.running if not r.prefilled]
        drafts = [cfg.num_spec if (r.prefilled and r.spec) else 0 for r in reqs]
        query = [d + 1 if r.prefilled else r.prompt_len for r, d in zip(reqs, drafts)]
        batch = ScheduledBatch(
            req_indices=np.asarray([r.row for r in reqs], np.int32),
            query_lens=np.asarray(query, np.int32),
            num_draft=np.asarray(drafts, np.int32),
        )
        # KV blocks for the host's upper bound of every sequence: always enough.
        upper = self.preparer.mirror.upper_bound(batch)
        for req, bound in zip(reqs, upper):
            need = ceil_div(int(bound), cfg.block_size) - len(req.blocks)
            if need > 0:
                new = [self.free_blocks.pop() for _ in range(need)]
                self.preparer.append_blocks(req.row, len(req.blocks), np.asarray(new, np.int32))
                req.blocks += new
        self.preparer.commit_block_table()
        return batch, reqs

    def advance(self, reqs: list[Request]) -> None:
        for req in reqs:
            if req.prefilled:
                req.decode_steps_left -= 1
            req.prefilled = True
            if req.decode_steps_left <= 0:
                self.running.remove(req)
                self.free_rows.append(req.row)
                self.free_blocks += req.blocks
                self.finished += 1


# -------------------------------------------------------------------------------------- model
class TinyHybridModel(torch.nn.Module):
    """Gated linear-attention mixing (chunked for prefills, recurrent state for decodes) and an
    MLP per layer; the MLP matmuls are the GPU work that makes a host stall visible."""

    def __init__(self, cfg: Config, num_state_slots: int, num_kv_slots: int):
        super().__init__()
        dev = cfg.device
        gen = torch.Generator(device=dev).manual_seed(cfg.seed)

        def param(*shape, scale):
            # Drawn on the device: no host data, no upload, so even the set-up is sync-free.
            return torch.nn.Parameter(torch.randn(*shape, generator=gen, device=dev) * scale, requires_grad=False)

        h = cfg.hidden
        self.cfg = cfg
        self.embed = param(cfg.vocab, h, scale=1.0)
        self.w_gate = torch.nn.ParameterList([param(h, cfg.heads, scale=h**-0.5) for _ in range(cfg.layers)])
        self.w_kv = torch.nn.ParameterList([param(h, cfg.kv_dim, scale=h**-0.5) for _ in range(cfg.layers)])
        self.w_up = torch.nn.ParameterList([param(h, 4 * h, scale=h**-0.5) for _ in range(cfg.layers)])
        self.w_down = torch.nn.ParameterList([param(4 * h, h, scale=(4 * h) ** -0.5) for _ in range(cfg.layers)])
        self.lm_head = param(h, cfg.vocab, scale=h**-0.5)
        self.register_buffer("state", torch.zeros(cfg.layers, num_state_slots, cfg.heads, device=dev))
        # One extra row: the trash slot where padding tokens' KV goes.
        self.register_buffer("kv_cache", torch.zeros(cfg.layers, num_kv_slots + 1, cfg.kv_dim, device=dev))

    def forward(self, input_ids, slot_mapping, meta) -> torch.Tensor:
        cfg = self.cfg
        x = self.embed[input_ids]  # [padded tokens, hidden]; padding rows are token 0
        spec, pre = meta["gdn_spec"], meta["gdn_prefill"]
        n_dec_tokens = meta["num_decode_tokens"]
        slots = slot_mapping.masked_fill(slot_mapping < 0, self.kv_cache.shape[1] - 1)  # padding -> trash slot
        for layer in range(cfg.layers):
            gate = F.logsigmoid(x @ self.w_gate[layer])  # [tokens, heads] log-decays
            mix = torch.zeros_like(gate)
            if pre.num_prefills:
                g = gate[n_dec_tokens : meta["num_tokens"]].contiguous()
                g_cum, seq_decay = gdn_chunk_prefill(
                    g, pre.cu_seqlens, chunk_indices=pre.chunk_indices, chunk_offsets=pre.chunk_offsets
                )
                mix[n_dec_tokens : meta["num_tokens"]] = g_cum.exp()
                state = self.state[layer]
                rows = spec.non_spec_state_indices[-pre.num_prefills :].long()
                state.index_copy_(0, rows, seq_decay.exp())
            if spec.num_non_spec > pre.num_prefills:  # plain decodes: one token each
                rows = spec.non_spec_state_indices[: spec.num_non_spec - pre.num_prefills].long()
                tokens = spec.non_spec_token_indices[: spec.num_non_spec - pre.num_prefills]
                new = self.state[layer][rows] * gate[tokens].exp() + 1.0
                mix[tokens] = new
                self.state[layer].index_copy_(0, rows, new)
            if spec.num_spec_decodes:
                # A spec decode keeps one state per draft position; it starts from the state its
                # previous step's last accepted token left, and stores one state per position.
                slots_2d = spec.spec_state_indices.long()  # [n_spec, num_spec + 1]
                start = slots_2d.gather(1, spec.num_accepted_tokens.long()[:, None])[:, 0]
                tok = spec.spec_token_indices
                base = self.state[layer][start].repeat_interleave(cfg.num_spec + 1, dim=0)  # int repeats: no sync
                mix[tok] = base * gate[tok].exp()
                self.state[layer].index_copy_(0, slots_2d.reshape(-1), mix[tok])
            k = x @ self.w_kv[layer]
            self.kv_cache[layer].index_copy_(0, slots, k)  # padding goes to the trash slot
            x = x + (mix.mean(-1, keepdim=True) * 1e-2)
            x = x + F.gelu(x @ self.w_up[layer]) @ self.w_down[layer]
        last_tokens = meta["query_start_loc"][1:].long() - 1
        return x[last_tokens] @ self.lm_head  # [num_reqs, vocab]


# ------------------------------------------------------------------------------------- runner
class ServeLoop:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        dev = torch.device(cfg.device)
        max_len = cfg.prompt_len[1] + cfg.decode_steps[1] * (cfg.num_spec + 1) + cfg.block_size
        self.max_blocks = ceil_div(max_len, cfg.block_size)
        self.preparer = InputPreparer(cfg.max_batch, self.max_blocks, cfg.block_size, dev, cfg.impl)
        self.scheduler = Scheduler(cfg, self.preparer, self.max_blocks)
        # Recurrent-state slots: num_spec + 1 per request row (one per draft position).
        width = cfg.num_spec + 1
        self.state_table = torch.arange(cfg.max_batch * width, dtype=torch.int32, device=dev).reshape(-1, width)
        self.model = TinyHybridModel(cfg, cfg.max_batch * width, cfg.max_batch * self.max_blocks * cfg.block_size)
        self.gdn_spec = GDNSpecDecodeMetadataBuilder(cfg.num_spec, dev, cfg.impl)
        self.gdn_prefill = GDNPrefillMetadataBuilder(dev, cfg.impl)
        self.context = ChunkedContextBuilder(2048, dev, cfg.impl)
        self.trtllm = TrtllmMetadataBuilder(cfg.block_size, cfg.max_batch, dev, cfg.impl)
        self.staging = PinnedStaging(dev)  # the runner's own uploads: persistent pinned buffers
        self.last_accepted = torch.zeros(cfg.max_batch, dtype=torch.int32, device=dev)
        self.tokens_generated = torch.zeros((), dtype=torch.int64, device=dev)
        self.draft_pos = torch.arange(cfg.num_spec, device=dev)
        self.device = dev

    def step(self) -> None:
        cfg = self.cfg
        batch, reqs = self.scheduler.schedule()
        n = batch.num_tokens
        padded = ceil_div(n, cfg.pad_to) * cfg.pad_to
        inputs = self.preparer.prepare(batch, padded)
        rows = inputs.req_indices.long()
        common = make_common_metadata(
            batch, inputs.seq_lens, inputs.seq_lens_cpu_upper_bound, self.preparer.block_table[rows], self.device,
            staging=self.staging,
        )
        gdn_common = dataclasses.replace(common, block_table=self.state_table[rows])
        meta = {
            "gdn_spec": self.gdn_spec.build(gdn_common, self.last_accepted[rows]),
            "gdn_prefill": self.gdn_prefill.build(gdn_common),
            "context": self.context.build(common),
            "trtllm": self.trtllm.build(common),
            "num_tokens": n,
            "num_decode_tokens": int(batch.query_lens[: batch.num_decodes].sum()),
            "query_start_loc": inputs.query_start_loc,
        }
        input_ids = torch.zeros(padded, dtype=torch.int64, device=self.device)
        input_ids[:n] = (inputs.positions * 1_000_003 + 7_919) % cfg.vocab
        logits = self.model(input_ids, inputs.slot_mapping, meta)

        # Verification, on the device: accept each draft with probability ~accept_rate (derived
        # from the sampled token, so both impls accept the same), stop at the first rejection.
        sampled = logits.argmax(-1)
        num_draft = common.num_draft_tokens.long()
        u = ((sampled[:, None] * 2_654_435_761 + self.draft_pos * 40_503) % 10_007).float() / 10_007
        accept = (u < cfg.accept_rate) & (self.draft_pos < num_draft[:, None])
        num_accepted = accept.int().cumprod(-1).sum(-1).to(torch.int32)
        self.tokens_generated += (num_accepted + 1).sum()
        self.preparer.finish(batch, num_accepted)
        self.last_accepted.index_copy_(0, rows, num_accepted)
        self.scheduler.advance(reqs)

    def run(self) -> dict:
        cfg = self.cfg
        for _ in range(cfg.warmup):
            self.step()
        start_tokens = int(self.tokens_generated)  # end-of-warm-up read: waits for the device
        start = time.perf_counter()
        for _ in range(cfg.steps):
            self.step()
        tokens = int(self.tokens_generated) - start_tokens  # end-of-run read: waits for the device
        wall = time.perf_counter() - start
        return {
            "impl": cfg.impl,
            "steps": cfg.steps,
            "tokens": tokens,
            "wall_s": wall,
            "tokens_per_s": tokens / wall if wall > 0 else 0.0,
            "requests_finished": self.scheduler.finished,
        }


def parse_args(argv=None) -> Config:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", choices=("naive", "fixed"), default="fixed")
    p.add_argument("--steps", type=int, default=Config.steps)
    p.add_argument("--warmup", type=int, default=Config.warmup)
    p.add_argument("--seed", type=int, default=Config.seed)
    p.add_argument("--device", default=Config.device)
    p.add_argument("--hidden", type=int, default=Config.hidden)
    p.add_argument("--layers", type=int, default=Config.layers)
    p.add_argument("--max-batch", type=int, default=Config.max_batch)
    p.add_argument("--max-tokens", type=int, default=Config.max_tokens)
    p.add_argument("--accept-rate", type=float, default=Config.accept_rate)
    a = p.parse_args(argv)
    return Config(
        impl=a.impl, steps=a.steps, warmup=a.warmup, seed=a.seed, device=a.device, hidden=a.hidden,
        layers=a.layers, max_batch=a.max_batch, max_tokens=a.max_tokens, accept_rate=a.accept_rate,
    )


def main(argv=None) -> dict:
    cfg = parse_args(argv)
    torch.manual_seed(cfg.seed)
    result = ServeLoop(cfg).run()
    print(
        f"impl={result['impl']} steps={result['steps']} tokens={result['tokens']} "
        f"requests_finished={result['requests_finished']} wall={result['wall_s']:.3f}s "
        f"tokens/s={result['tokens_per_s']:.1f}"
    )
    return result


if __name__ == "__main__":
    main()
