"""vLLM's FlashInfer metadata builder on the simulated device: `FlashInferMetadataBuilder.build`
for prefill, decode and mixed batches, and for speculative-decode batches (EAGLE-3, 2 drafts),
as it runs on an H100 (`--arch sm90`, the default) or on a B200 (`--arch sm100`).

    syncscope run --device sim --scope vllm.v1.attention.backends.flashinfer:FlashInferMetadataBuilder.build \\
        examples/engines/vllm/flashinfer_builder.py [--arch sm90|sm100]

The architecture decides which kernels vLLM plans for, and so which host work `build` does:

- sm90: prefills on FlashInfer's native paged kernels (`BatchPrefillWithPagedKVCacheWrapper.plan`),
  decodes on XQA in 0.33.0 (no planning) and on FlashInfer's native decode in 0.18.0 (its TRT-LLM
  decode is SM100-only there: `fast_plan_decode` -> `BatchDecodeWithPagedKVCacheWrapper.plan`).
- sm100: TRT-LLM prefill and decode (no planning; the kernels read the device tensors). This is
  the path vLLM PR 39546 changed: before it, any batch that was not decode-only read the host
  copy of `seq_lens` and filled the native page tables although no native kernel would run.

FlashInfer's compiled planning is stood in (flashinfer_standins.py: what runs, what is not seen).
The model is a small Llama-shaped one (8 query heads, 2 KV heads, head size 128, bf16 KV cache,
page size 16); its attention layer is a stand-in holding vLLM's `FlashInferImpl` (the builder
reads the per-layer scale, window and soft cap from it). Prints, per batch, the split the builder
made, the kernels it chose, and whether the prefill KV page offsets it left on the device are
those of the batch (checked outside the builder's scope).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sim_boot  # noqa: E402

ARCHES = {"sm90": (9, 0), "sm100": (10, 0)}
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--arch", choices=sorted(ARCHES), default="sm90")
ARGS = parser.parse_args()

sim_boot.boot("vllm.v1.attention.backends.flashinfer", capability=ARCHES[ARGS.arch])

import flashinfer_standins  # noqa: E402

flashinfer_standins.install()

import torch  # noqa: E402
from batches import BATCHES, BLOCK_SIZE, DEVICE, common_metadata  # noqa: E402
from configs import vllm_config  # noqa: E402

NUM_SPEC = 2
LAYER = "model.layers.0.self_attn.attn"
HEADS, KV_HEADS, HEAD_SIZE = 8, 2, 128


def llama_config():
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=HEADS * HEAD_SIZE, intermediate_size=2048, num_hidden_layers=2,
                       num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_SIZE,
                       vocab_size=1024, max_position_embeddings=4096)


def attention_layer():
    """The model's attention layer as far as the builder reads it: an `AttentionLayerBase`
    (what `get_layers_from_vllm_config` selects) holding vLLM's `FlashInferImpl`."""
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.v1.attention.backends.flashinfer import FlashInferBackend, FlashInferImpl

    class Layer(AttentionLayerBase):
        def __init__(self):
            self.impl = FlashInferImpl(num_heads=HEADS, head_size=HEAD_SIZE, scale=HEAD_SIZE**-0.5,
                                       num_kv_heads=KV_HEADS, alibi_slopes=None, sliding_window=None,
                                       kv_cache_dtype="auto")

        def get_attn_backend(self):
            return FlashInferBackend

        def get_kv_cache_spec(self, vllm_config):
            return None

    return Layer()


def make_builder(num_spec: int):
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.backends.flashinfer import FlashInferMetadataBuilder
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    config = vllm_config(num_spec=num_spec, hf=llama_config())
    spec = FullAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=KV_HEADS, head_size=HEAD_SIZE,
                             dtype=torch.bfloat16)
    # The layer and the builder ask the current config (force_use_trtllm_attention) while they
    # are made: vLLM makes them under the engine's config, as here.
    with set_current_vllm_config(config):
        config.compilation_config.static_forward_context[LAYER] = attention_layer()
        resolve_layout(config, spec)
        return FlashInferMetadataBuilder(spec, [LAYER], config, DEVICE)


def resolve_layout(config, spec):
    """0.33.0 resolves the KV cache layout once in the engine core, from what the workers'
    backends support, before any builder runs; done here the same way (vLLM's functions).
    0.18.0 has no such step (the builder reads a process-wide setting)."""
    try:
        from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    except ImportError:
        return
    from vllm.v1.attention.backends.flashinfer import FlashInferBackend

    names = [layout.name for layout in get_supported_kv_cache_layouts([FlashInferBackend])]
    resolve_kv_cache_layout(config, [names], [spec])


def kernels(meta) -> str:
    def name(part):
        if part is None:
            return "-"
        kind = type(part).__name__
        kernel = getattr(part, "kernel", None)  # 0.33.0's TRT-LLM API decode: XQA or trtllm-gen
        return f"{kind}({kernel.value})" if kernel is not None else kind

    return f"prefill={name(meta.prefill)} decode={name(meta.decode)}"


def kv_indptr_check(requests, meta) -> str:
    """For a TRT-LLM prefill: are the KV page offsets handed to the kernel (cum_seq_lens_kv)
    those of the batch's prefills? (0.18.0 passed a slice of a buffer filled for the whole batch,
    or left from an earlier step: the stale read PR 39546 fixed.)"""
    prefill = meta.prefill
    if prefill is None or not hasattr(prefill, "cum_seq_lens_kv"):
        return ""
    blocks = [-(-r.seq_len // BLOCK_SIZE) for r in requests[meta.num_decodes:]]
    expect = [0]
    for b in blocks:
        expect.append(expect[-1] + b)
    got = prefill.cum_seq_lens_kv.cpu().tolist()
    return f" cum_seq_lens_kv={'ok' if got == expect else f'{got} (batch: {expect})'}"


def main():
    from vllm.config import set_current_vllm_config

    builders = {0: make_builder(0), NUM_SPEC: make_builder(NUM_SPEC)}
    print(f"arch {ARGS.arch}: reorder_batch_threshold {builders[0].reorder_batch_threshold} "
          f"(spec builder: {builders[NUM_SPEC].reorder_batch_threshold})")
    for name, requests in BATCHES.items():
        num_spec = NUM_SPEC if any(r.drafts >= 0 for r in requests) else 0
        builder = builders[num_spec]
        m = common_metadata(requests)
        # The engine's config is current while it steps (0.18.0's builder asks it for the KV
        # cache layout the first time it makes a FlashInfer wrapper).
        with set_current_vllm_config(builder.vllm_config):
            meta = builder.build(0, m)
        assert meta.num_decodes + meta.num_prefills == len(requests), name
        assert meta.num_decode_tokens + meta.num_prefill_tokens == m.num_actual_tokens, name
        # decodes first: exactly the leading requests short enough to be decodes
        threshold = builder.reorder_batch_threshold
        assert all(r.query <= threshold for r in requests[: meta.num_decodes]), name
        print(f"{name:12s} decodes={meta.num_decodes} prefills={meta.num_prefills} "
              f"tokens={meta.num_decode_tokens}+{meta.num_prefill_tokens} {kernels(meta)}"
              f"{kv_indptr_check(requests, meta)}")


if __name__ == "__main__":
    main()
