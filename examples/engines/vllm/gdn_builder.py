"""vLLM's GDN (Gated DeltaNet, Qwen3-Next's linear attention) metadata builder on the simulated
device: `GDNAttentionMetadataBuilder.build` for prefill, decode, mixed, speculative-decode and
speculative-plus-prefill batches, and the FLA chunk-index preparation of the chunked prefill.

    syncscope run --device sim --scope vllm.v1.attention.backends.gdn_attn:GDNAttentionMetadataBuilder.build \\
        examples/engines/vllm/gdn_builder.py

Prints, per batch, the counts the builder derived (checked against the batch: a builder that
indexed the wrong rows fails here, not only in the report).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sim_boot  # noqa: E402

sim_boot.boot(
    "vllm.v1.attention.backends.gdn_attn",
    "vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn",  # imported by the builder's __init__
)

import torch  # noqa: E402
from batches import BATCHES, common_metadata, spec_inputs  # noqa: E402
from configs import vllm_config  # noqa: E402

NUM_SPEC = 2


def make_builder(num_spec: int):
    from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder
    from vllm.v1.kv_cache_interface import MambaSpec

    config = vllm_config(num_spec=num_spec)
    spec = MambaSpec(
        block_size=config.cache_config.block_size,
        shapes=((3, 1024), (8, 128, 128)),
        dtypes=(torch.bfloat16, torch.float32),
        num_speculative_blocks=num_spec,
    )
    return GDNAttentionMetadataBuilder(spec, ["model.layers.0.linear_attn"], config, torch.device("cuda", 0))


def _shape(t):
    return None if t is None else tuple(t.shape)


def check(name, requests, meta):
    spec = [r for r in requests if r.drafts >= 0]
    decodes = [r for r in requests if r.drafts < 0 and r.query == 1]
    prefills = [r for r in requests if r.drafts < 0 and r.query > 1]
    expect_decodes = 0 if spec else len(decodes)
    expect_prefills = len(prefills) + (len(decodes) if spec else 0)
    got = (meta.num_spec_decodes, meta.num_decodes, meta.num_prefills)
    assert got == (len(spec), expect_decodes, expect_prefills), (name, got)
    if spec and prefills:
        # the token split the spec-plus-prefill path makes with the mask: check the rows
        token_rows = [i for i, r in enumerate(requests) for _ in range(r.query)]
        spec_rows = {i for i, r in enumerate(requests) if r.drafts >= 0}
        spec_tokens = [t for t, row in enumerate(token_rows) if row in spec_rows]
        assert meta.spec_token_indx.cpu().tolist() == spec_tokens, name
    print(f"{name:12s} spec_decodes={got[0]} decodes={got[1]} prefills={got[2]} "
          f"tokens={meta.num_actual_tokens} chunk_indices={_shape(getattr(meta, 'chunk_indices', None))}")


def main():
    builder = make_builder(NUM_SPEC)
    for name, requests in BATCHES.items():
        m = common_metadata(requests)
        accepted, drafts = spec_inputs(requests)
        has_spec = any(r.drafts >= 0 for r in requests)
        meta = builder.build(
            0, m,
            num_accepted_tokens=accepted if has_spec else None,
            num_decode_draft_tokens_cpu=drafts if has_spec else None,
        )
        check(name, requests, meta)


if __name__ == "__main__":
    main()
