"""Realistic inputs for vLLM's metadata builders: the configs they read and the per-step batches a
model runner hands them (decodes first, then prefills, as vLLM's batch reordering leaves them).

Everything that is on the GPU in vLLM's model runner is put on "cuda" here (the simulated device),
everything it keeps on the host stays on the host. The batch is laid out as the V2 model runner
(`vllm/v1/worker/gpu/attn_utils.py`) lays it out: `seq_lens` on the device, `query_start_loc` on
both sides, and, in releases that have it, the host upper bound `seq_lens_cpu_upper_bound`
(release 0.18.0 has no host copy of `seq_lens` there: its builders' `seq_lens_cpu` reads go to
the device, which is what PR 40654 removed). These inputs are made before the builders run
(outside `--scope`), so their own uploads are not gated.

Works with vLLM 0.33.0 and 0.18.0: fields a release does not have are left out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

DEVICE = torch.device("cuda", 0)
BLOCK_SIZE = 16


@dataclass
class Request:
    context: int  # tokens already computed (in the KV cache / recurrent state)
    query: int  # tokens scheduled this step (1 for a decode, 1 + drafts for a spec decode)
    drafts: int = -1  # draft tokens being verified this step; -1: not a speculative request
    accepted: int = 1  # tokens accepted at the previous verification (spec decodes)
    prefilling: bool = False  # still in its prompt (new or chunked prefill)

    @property
    def seq_len(self) -> int:
        return self.context + self.query


# The batch mixes of a serving step (num_spec = 2 draft tokens for the speculative ones).
BATCHES: dict[str, list[Request]] = {
    "prefill": [Request(0, 37, prefilling=True), Request(0, 70, prefilling=True), Request(64, 20, prefilling=True)],
    "decode": [Request(99, 1), Request(130, 1), Request(7, 1), Request(512, 1)],
    "mixed": [Request(99, 1), Request(130, 1), Request(0, 45, prefilling=True), Request(32, 17, prefilling=True)],
    "spec_decode": [Request(99, 3, drafts=2, accepted=2), Request(130, 3, drafts=2, accepted=3), Request(7, 3, drafts=2, accepted=1)],
    "spec_mixed": [
        Request(99, 3, drafts=2, accepted=2),
        Request(130, 3, drafts=2, accepted=1),
        Request(0, 45, prefilling=True),
        Request(32, 17, prefilling=True),
    ],
}


def common_metadata(requests: list[Request], *, blocks_per_req: int = 40, max_model_len: int = 4096,
                    block_size: int = BLOCK_SIZE):
    """A `CommonAttentionMetadata` for one step, built as the V2 model runner builds it
    (`block_size`: the KV cache's page size, 64 for FlashMLA)."""
    from vllm.v1.attention.backend import CommonAttentionMetadata

    query_lens = [r.query for r in requests]
    seq_lens = [r.seq_len for r in requests]
    starts = [0]
    for q in query_lens:
        starts.append(starts[-1] + q)
    num_tokens = starts[-1]
    query_start_loc_cpu = torch.tensor(starts, dtype=torch.int32).pin_memory()
    seq_lens_cpu = torch.tensor(seq_lens, dtype=torch.int32)
    block_table_cpu = torch.arange(len(requests) * blocks_per_req, dtype=torch.int32).reshape(len(requests), blocks_per_req) + 1
    slots = []
    for i, r in enumerate(requests):
        for pos in range(r.context, r.seq_len):
            slots.append(int(block_table_cpu[i, pos // block_size]) * block_size + pos % block_size)
    fields = {f.name for f in dataclasses.fields(CommonAttentionMetadata)}
    kwargs = dict(
        query_start_loc=query_start_loc_cpu.to(DEVICE, non_blocking=True),
        query_start_loc_cpu=query_start_loc_cpu,
        seq_lens=seq_lens_cpu.pin_memory().to(DEVICE, non_blocking=True),
        num_reqs=len(requests),
        num_actual_tokens=num_tokens,
        max_query_len=max(query_lens),
        max_seq_len=min(max(seq_lens), max_model_len),
        block_table_tensor=block_table_cpu.pin_memory().to(DEVICE, non_blocking=True),
        slot_mapping=torch.tensor(slots, dtype=torch.int64).pin_memory().to(DEVICE, non_blocking=True),
        causal=True,
    )
    if "seq_lens_cpu_upper_bound" in fields:  # 0.33.0: the host mirror of PR 40654
        kwargs["seq_lens_cpu_upper_bound"] = seq_lens_cpu
    if "is_prefilling" in fields:
        kwargs["is_prefilling"] = torch.tensor([r.prefilling for r in requests])
    if "positions" in fields:
        positions = [p for r in requests for p in range(r.context, r.seq_len)]
        kwargs["positions"] = torch.tensor(positions, dtype=torch.int64).pin_memory().to(DEVICE, non_blocking=True)
    return CommonAttentionMetadata(**kwargs)


def spec_inputs(requests: list[Request]):
    """(num_accepted_tokens on the device, num_decode_draft_tokens on the host), as the model
    runner passes them to the GDN builder."""
    accepted = torch.tensor([r.accepted for r in requests], dtype=torch.int32).pin_memory()
    drafts = torch.tensor([r.drafts for r in requests], dtype=torch.int32)
    return accepted.to(DEVICE, non_blocking=True), drafts
