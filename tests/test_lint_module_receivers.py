"""A method call on a receiver declared as `nn.Module` itself (reachability.py `module_calls`,
modules.py `declared_module`, `[roots] module-types`): the receiver's class is not in the tree,
so the call is followed by name, but only into classes that may be modules. SGLang's LoRA MoE
wrapper holds `self.base_layer: nn.Module` and runs `self.base_layer.forward(hidden_states,
topk_output, **kwargs)`; by name alone that reached every diffusion pipeline stage's
`forward(batch, server_args)` (a class that is not a module: a per-request entry), and all the
once-per-request stage code behind it became per step. Small packages: the wrapper, the layers
and the stages in separate modules."""

from __future__ import annotations

from syncscope.lint.library import load

from test_lint_scope import lint_package


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


def lines_of(run, path: str) -> set[int]:
    return {f.site.line for f in run.findings if f.site.path == path}


STAGES = """
    import torch
    from abc import ABC

    class Stage(ABC):
        def forward(self, batch, server_args):
            latents: torch.Tensor = batch.latents
            return latents.sum().item()

        def apply_weights(self, x: torch.Tensor):
            return int(x.max())
"""

LAYERS = """
    import torch
    from abc import ABC
    from torch import nn

    class WeightsMixin(ABC):
        def apply_weights(self, x: torch.Tensor):
            return x.sum().item()

    class Linear(WeightsMixin, nn.Module):
        def forward(self, x: torch.Tensor):
            return self.apply_weights(x)
"""

LORA = """
    import torch
    from torch import nn
    from pkg import layers, stages  # the classes a call by name may reach (importclosure.py)

    class BaseLayerWithLoRA(nn.Module):
        def __init__(self, base_layer: nn.Module):
            super().__init__()
            self.base_layer: nn.Module = base_layer

    class MoEWithLoRA(BaseLayerWithLoRA):
        def forward(self, hidden_states: torch.Tensor, topk_output, **kwargs):
            return self.base_layer.forward(hidden_states, topk_output, **kwargs)

    class LinearWithLoRA(BaseLayerWithLoRA):
        def forward(self, x: torch.Tensor):
            return self.base_layer.apply_weights(x)

    def run_layer(layer: torch.nn.Module, x: torch.Tensor):
        return layer.apply_weights(x)

    class Runner(nn.Module):
        def forward(self, layer, x: torch.Tensor):
            return run_layer(layer, x)
"""


def _run(tmp_path, lora=LORA, **overrides):
    return lint_package(tmp_path, {"stages.py": STAGES, "layers.py": LAYERS, "lora.py": lora}, **overrides)


def test_a_module_typed_receiver_reaches_a_modules_method(tmp_path):
    # INVALID (reported): `self.base_layer.apply_weights(x)` with `self.base_layer: nn.Module`
    # reaches the method a module inherits from its mixin (WeightsMixin is an ABC, but Linear,
    # a module, inherits it), per step, from the wrapper's forward
    run = _run(tmp_path)
    assert 8 in lines_of(run, "pkg/layers.py"), where(run)
    finding = [f for f in run.findings if f.site.path == "pkg/layers.py" and f.site.line == 8][0]
    assert finding.per_step[0][0].endswith("LoRA.forward") or finding.per_step[0][0].endswith("Linear.forward"), \
        finding.per_step


def test_a_module_typed_receiver_does_not_reach_a_stage(tmp_path):
    # VALID (left out): neither `self.base_layer.forward(hidden_states, topk_output, **kwargs)`
    # nor `self.base_layer.apply_weights(x)` nor `layer.apply_weights(x)` (a parameter typed
    # `torch.nn.Module`) runs a method of `class Stage(ABC)`, which is no module: its `forward`
    # stays a per-request entry (line 8 once per request) and its `apply_weights` unreached
    run = _run(tmp_path)
    assert not lines_of(run, "pkg/stages.py") & {8, 11}, where(run)
    cold = _run(tmp_path, include_cold=True)
    reasons = {f.site.line: f.cold for f in cold.findings if f.site.path == "pkg/stages.py"}
    assert reasons.get(8) and "once per request" in reasons[8], reasons


UNTYPED = LORA.replace("self.base_layer: nn.Module = base_layer", "self.base_layer = base_layer") \
    .replace("layer: torch.nn.Module, x", "layer, x")


def test_an_untyped_receiver_may_still_be_anything(tmp_path):
    # INVALID (reported): without the annotation the receiver's class is unknown, and a call by
    # name may reach any method it can bind to: the stage's `forward` (two places, `**kwargs`)
    # and `apply_weights` run per step. The narrowing rests on the declared type alone.
    run = _run(tmp_path, lora=UNTYPED)
    assert {8, 11} <= lines_of(run, "pkg/stages.py"), where(run)


def test_the_module_types_are_library_facts():
    assert "torch.nn.Module" in load().module_types
    assert "*ComfyUI*Stage" in load().step_stages


# -- a field only ever given a typed parameter (`self.primary = primary`) ----------------------
BACKENDS = """
    import torch, pkg.stages as stages  # the stage is a class this module can name (importclosure.py)
    from abc import ABC

    class AttentionBackend(ABC):
        def forward(self, *args, **kwargs):
            raise NotImplementedError

    class FlashBackend(AttentionBackend):
        def forward(self, q: torch.Tensor, k: torch.Tensor, scale=1.0):
            return q.sum().item()

    class OverlapBackend(AttentionBackend):
        def __init__(self, primary: AttentionBackend):
            self.primary = primary

        def forward(self, *args, **kwargs):
            return self.primary.forward(*args, **kwargs)

    class Attention(torch.nn.Module):
        def __init__(self, backend):
            self.backend = backend

        def forward(self, q: torch.Tensor, k: torch.Tensor):
            return self.backend.forward(q, k, scale=1.0)
"""

ANY_HOLDER = """
    class AnyHolder(AttentionBackend):
        def __init__(self, primary: AttentionBackend, other):
            self.primary = primary
            self.primary = other

        def forward(self, *args, **kwargs):
            return self.primary.forward(*args, **kwargs)
"""


def test_a_field_given_a_typed_parameter_reaches_only_that_familys_entries(tmp_path):
    # INVALID (reported): the backends run every step (the module's `self.backend.forward(q, k)`,
    # by name), FlashBackend's sync too.
    # VALID (left out): `OverlapBackend.forward(*args, **kwargs)` delegates to
    # `self.primary.forward(*args, **kwargs)`, a field only ever given `primary: AttentionBackend`:
    # it does not run the stage's `forward(batch, server_args)` (a class that is not a module and
    # not an AttentionBackend)
    run = lint_package(tmp_path, {"stages.py": STAGES, "backends.py": BACKENDS})
    assert 11 in lines_of(run, "pkg/backends.py"), where(run)
    assert 8 not in lines_of(run, "pkg/stages.py"), where(run)


def test_a_field_given_anything_else_too_may_hold_anything(tmp_path):
    # INVALID (reported): `AnyHolder.primary` is also given an untyped `other`: by name it may
    # still be the stage, whose `forward` then runs per step
    run = lint_package(tmp_path, {"stages.py": STAGES, "backends.py": BACKENDS + ANY_HOLDER})
    assert 8 in lines_of(run, "pkg/stages.py"), where(run)


# -- `base_cls.forward(self, x)`: a call through a class passes `self` itself --------------------
EMBEDDING = """
    import torch

    def scaled(module):
        base_cls = module.__class__

        class ScaledEmbedding(base_cls):
            def forward(self, input_):
                return base_cls.forward(self, input_) * 2

        return ScaledEmbedding

    class Layer(torch.nn.Module):
        def __init__(self, impl):
            self.impl = impl

        def forward(self, q: torch.Tensor, k: torch.Tensor):
            return self.impl.forward(self, q, k)

    class Impl:
        def forward(self, layer, q: torch.Tensor, k: torch.Tensor):
            return q.sum().item()
"""


def test_a_call_through_a_class_passes_self_in_the_receivers_place(tmp_path):
    # VALID (left out): `base_cls.forward(self, input_)` passes one argument besides `self`; the
    # stage's `forward(self, batch, server_args)` needs two: it is not run (SGLang's
    # `ScaledEmbedding` in srt/models/transformers.py)
    # INVALID (reported): `self.impl.forward(self, q, k)` on an instance field gives the layer as
    # an argument (vLLM's attention layers): the implementation's `forward(self, layer, q, k)` runs
    run = lint_package(tmp_path, {"stages.py": STAGES, "embedding.py": EMBEDDING})
    assert 8 not in lines_of(run, "pkg/stages.py"), where(run)
    assert 22 in lines_of(run, "pkg/embedding.py"), where(run)


# -- a stage that runs once per denoising step (`[roots] step-stages`) ---------------------------
COMFY = """
    import torch
    from pkg.stages import Stage

    class ComfyUIStepStage(Stage):
        def forward(self, batch, server_args):
            sigma: torch.Tensor = batch.sigma
            return sigma.sum().item()
"""


def test_a_step_stage_stays_a_per_step_root(tmp_path):
    # INVALID (reported): ComfyUI calls SGLang once per DiT step, so a `--comfyui-mode` stage's
    # `forward` runs every step although its class is no module (its sync stays, with nothing
    # reaching it: it is a root itself)
    # VALID (left out): the plain stage's `forward` stays a per-request entry
    run = lint_package(tmp_path, {"stages.py": STAGES, "comfy.py": COMFY})
    assert 8 in lines_of(run, "pkg/comfy.py"), where(run)
    assert 8 not in lines_of(run, "pkg/stages.py"), where(run)
