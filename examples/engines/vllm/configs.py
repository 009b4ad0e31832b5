"""The configs vLLM's metadata builders read, built without a model from the hub.

`VllmConfig`, `CacheConfig`, `SchedulerConfig` and `CompilationConfig` are vLLM's own, built with
their constructors. `SpeculativeConfig` validates against the target and draft models' Hugging
Face configs, which a CPU box without the hub does not have: it is made with vLLM's class but
without its validation (`SpeculativeConfig.__new__`), holding the fields the builders read
(`num_speculative_tokens`, `method`, `parallel_drafting`, the eagle block-drop switches), so its
methods are vLLM's.
"""

from __future__ import annotations

import torch


def vllm_config(*, num_spec: int = 0, full_cudagraphs: bool = False, gdn_prefill_backend: str = "triton", hf=None,
                use_mla: bool = False):
    from vllm.config import CacheConfig, CompilationConfig, SchedulerConfig, VllmConfig

    import inspect

    accepted = inspect.signature(SchedulerConfig).parameters
    scheduler_kwargs = dict(max_num_seqs=64, max_num_batched_tokens=2048, max_model_len=4096, is_encoder_decoder=False)
    scheduler_kwargs = {k: v for k, v in scheduler_kwargs.items() if k in accepted}
    compilation = CompilationConfig(cudagraph_mode="FULL_AND_PIECEWISE" if full_cudagraphs else "NONE")
    config = VllmConfig(
        cache_config=CacheConfig(block_size=16),
        scheduler_config=SchedulerConfig(**scheduler_kwargs),
        compilation_config=compilation,
        # The Triton (FLA) chunked prefill, the one whose chunk metadata the builder prepares
        # (auto picks FlashInfer's GDN prefill on an H100, which needs none).
        additional_config={"gdn_prefill_backend": gdn_prefill_backend},
    )
    object.__setattr__(config, "model_config", model_config(hf, use_mla=use_mla))
    if num_spec:
        object.__setattr__(config, "speculative_config", speculative_config(num_spec))
    return config


def model_config(hf=None, *, use_mla: bool = False):
    """vLLM's `ModelConfig` without its hub look-ups (made with `ModelConfig.__new__`), around a
    Hugging Face configuration built locally by transformers: `hf`, or by default a small
    Qwen3-Next one (GDN head sizes 128)."""
    from transformers import Qwen3NextConfig
    from vllm.config import ModelConfig

    name = f"{getattr(hf, 'model_type', '?')} (config only, built locally)"
    if hf is None:
        name = "Qwen/Qwen3-Next-80B-A3B-Instruct (config only, built locally)"
        hf = Qwen3NextConfig(
            hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
            linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=128,
            linear_value_head_dim=128, num_experts=4, num_experts_per_tok=2, vocab_size=1024,
        )
    model = ModelConfig.__new__(ModelConfig)
    values = dict(
        model=name,
        hf_config=hf, hf_text_config=hf, dtype=torch.bfloat16, max_model_len=4096,
        use_mla=use_mla, is_encoder_decoder=False, enforce_eager=False,
    )
    for field, value in values.items():
        if not isinstance(getattr(ModelConfig, field, None), property):  # derived in vLLM
            object.__setattr__(model, field, value)
    # What the head-count questions read (`get_num_attention_heads`), derived by vLLM's own
    # converter from the local HF config, as `ModelConfig.__init__` derives it.
    if hasattr(ModelConfig, "get_model_arch_config"):
        object.__setattr__(model, "model_arch_config", model.get_model_arch_config())
    return model


def speculative_config(num_spec: int, method: str = "eagle3"):
    from vllm.config import SpeculativeConfig

    spec = SpeculativeConfig.__new__(SpeculativeConfig)
    values = dict(
        num_speculative_tokens=num_spec,
        method=method,
        parallel_drafting=False,
        disable_eagle_block_drop=True,
        draft_model_config=None,
        target_model_config=None,
        disable_padded_drafter_batch=False,
    )
    for name, value in values.items():
        object.__setattr__(spec, name, value)
    return spec
