"""vLLM's FlashMLA metadata builder (DeepSeek's multi-head latent attention on an H100) on the
simulated device: `FlashMLAMetadataBuilder.build`, with the MLA builder it inherits
(`MLACommonMetadataBuilder.build`: the prefill split, the chunked-context metadata of prefills
that continue a cached prompt, the decode metadata FlashMLA plans from).

    syncscope run --device sim \\
        --scope vllm.v1.attention.backends.mla.flashmla:FlashMLAMetadataBuilder.build \\
        --scope vllm.model_executor.layers.attention.mla_attention:MLACommonMetadataBuilder.build \\
        examples/engines/vllm/mla_builder.py

FlashMLA's planning call, `get_mla_metadata`, is Python in both releases (vLLM vendors FlashMLA's
interface: it returns an empty `FlashMLASchedMeta`, and the tile scheduling runs on the device at
the first `flash_mla_with_kvcache` of the step). What keeps it from running here is only that the
interface module imports the compiled `vllm._flashmla_C` at its top and that vLLM, importing under
the unspecified platform, bound `get_mla_metadata` to a function that raises "FlashMLA is not
available". The stand-in: an empty `vllm._flashmla_C` module, then vLLM's own vendored
`get_mla_metadata` / `FlashMLASchedMeta` put where the builder looks them up. Not seen: the
scheduling kernel in the first decode call of the step (device work, enqueued, no host wait in
its interface) and every kernel.

0.33.0's builder also reads the attention layer (MLA dimensions, its prefill backend): the layer is
a stand-in `AttentionLayerBase` holding those, and the prefill backend is the base
`MLAPrefillBackend` named FLASH_ATTN (what vLLM picks on SM90): FlashAttention's prefill backend
adds nothing to `build` (it does not override `prepare_metadata`), but cannot be made without
FlashAttention's compiled functions.
"""

from __future__ import annotations

import pathlib
import sys
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sim_boot  # noqa: E402

sim_boot.boot("vllm.v1.attention.backends.mla.flashmla", "vllm.model_executor.layers.attention.mla_attention")

import torch  # noqa: E402
from batches import BATCHES, DEVICE, Request, common_metadata  # noqa: E402
from configs import vllm_config  # noqa: E402

LAYER = "model.layers.0.self_attn.attn"
PAGE = 64  # FlashMLA's only page size
HEADS, KV_LORA, ROPE, NOPE, V_HEAD, Q_LORA = 16, 512, 64, 128, 128, 1536

# The serving mixes, plus the case the MLA builder has its own work for: prefills continuing a
# cached prompt (chunked-context metadata), one long enough to be split over workspace chunks.
MLA_BATCHES = dict(BATCHES)
MLA_BATCHES["long_context"] = [Request(300, 1), Request(2000, 200, prefilling=True), Request(1500, 300, prefilling=True)]


def install_flashmla_interface():
    """vLLM's vendored FlashMLA interface, importable without the compiled extension."""
    sys.modules.setdefault("vllm._flashmla_C", types.ModuleType("vllm._flashmla_C"))
    from vllm.third_party.flashmla import flash_mla_interface
    import vllm.v1.attention.backends.mla.flashmla as builder_module
    import vllm.v1.attention.ops.flashmla as ops

    for module in (ops, builder_module):
        module.get_mla_metadata = flash_mla_interface.get_mla_metadata
        module.FlashMLASchedMeta = flash_mla_interface.FlashMLASchedMeta


def deepseek_config():
    from transformers import DeepseekV3Config

    return DeepseekV3Config(hidden_size=1024, intermediate_size=2048, moe_intermediate_size=256,
                            num_hidden_layers=2, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                            q_lora_rank=Q_LORA, kv_lora_rank=KV_LORA, qk_rope_head_dim=ROPE,
                            qk_nope_head_dim=NOPE, v_head_dim=V_HEAD, n_routed_experts=8,
                            num_experts_per_tok=2, first_k_dense_replace=1, vocab_size=1024,
                            max_position_embeddings=4096)


def attention_layer(config):
    """0.33.0 reads the MLA dimensions and the prefill backend from the layer."""
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase

    try:
        from vllm.v1.attention.backends.mla.prefill.base import MLAPrefillBackend
    except ImportError:
        MLAPrefillBackend = None  # 0.18.0: the builder picks its prefill kernels itself

    class Layer(AttentionLayerBase):
        num_heads = HEADS
        q_lora_rank, kv_lora_rank = Q_LORA, KV_LORA
        qk_nope_head_dim, qk_rope_head_dim, v_head_dim = NOPE, ROPE, V_HEAD

        def get_attn_backend(self):
            from vllm.v1.attention.backends.mla.flashmla import FlashMLABackend

            return FlashMLABackend

        def get_kv_cache_spec(self, vllm_config):
            return None

    layer = Layer()
    if MLAPrefillBackend is not None:
        class FlashAttnPrefillStandIn(MLAPrefillBackend):
            @staticmethod
            def get_name() -> str:
                return "FLASH_ATTN"

            def __init__(self, **kwargs):
                super().__init__(**kwargs)

            def run_prefill_new_tokens(self, *args, **kwargs):
                raise RuntimeError("prefill kernels are not run here")

            run_prefill_context_chunk = run_prefill_new_tokens

        layer.prefill_backend = FlashAttnPrefillStandIn(
            num_heads=HEADS, scale=(NOPE + ROPE) ** -0.5, kv_lora_rank=KV_LORA,
            qk_nope_head_dim=NOPE, qk_rope_head_dim=ROPE, v_head_dim=V_HEAD, vllm_config=config)
    return layer


def make_builder():
    from vllm.config import set_current_vllm_config
    from vllm.v1.attention.backends.mla.flashmla import FlashMLAMetadataBuilder
    from vllm.v1.kv_cache_interface import MLAAttentionSpec

    config = vllm_config(hf=deepseek_config(), use_mla=True)
    object.__setattr__(config.cache_config, "block_size", PAGE)
    spec = MLAAttentionSpec(block_size=PAGE, num_kv_heads=1, head_size=KV_LORA + ROPE, dtype=torch.bfloat16)
    with set_current_vllm_config(config):
        config.compilation_config.static_forward_context[LAYER] = attention_layer(config)
        return FlashMLAMetadataBuilder(spec, [LAYER], config, DEVICE)


def main():
    from vllm.config import set_current_vllm_config

    install_flashmla_interface()
    builder = make_builder()
    print(f"FlashMLA builder: reorder_batch_threshold {builder.reorder_batch_threshold}")
    for name, requests in MLA_BATCHES.items():
        m = common_metadata(requests, block_size=PAGE, blocks_per_req=64)
        with set_current_vllm_config(builder.vllm_config):
            meta = builder.build(0, m)
        assert meta.num_decodes + meta.num_prefills == len(requests), name
        chunks = None
        if meta.prefill is not None and meta.prefill.chunked_context is not None:
            context = meta.prefill.chunked_context
            # 0.33.0: a list of chunks; 0.18.0: per-chunk token totals
            chunks = len(context.chunks) if hasattr(context, "chunks") else len(context.seq_tot)
        print(f"{name:12s} decodes={meta.num_decodes} prefills={meta.num_prefills} "
              f"tokens={meta.num_decode_tokens}+{meta.num_actual_tokens - meta.num_decode_tokens} context_chunks={chunks} "
              f"decode_sched={type(getattr(meta.decode, 'scheduler_metadata', None)).__name__ if meta.decode else '-'}")


if __name__ == "__main__":
    main()
