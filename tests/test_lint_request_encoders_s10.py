"""Encoders by their component directory (`[roots] request-modules`,
`*multimodal_gen.runtime.models.encoders.*`): SGLang diffusion's registry loads a pipeline's
text and image encoders from `models/encoders/`, and many of them do not subclass the in-tree
`TextEncoder` (a transformers `PreTrainedModel` subclass, a plain `nn.Module` with a mixin). A
module defined there runs in the encoding stage (or a prompt-enhancement stage), once per
request, like a VAE under `models/vaes/`. What keeps one per step is unchanged: a module that a
per-step module builds inside itself, or a stage's step loop that calls it."""

from __future__ import annotations

from test_lint_scope import lint_package

ENC = "multimodal_gen/runtime/models/encoders/mistral.py"
ENC_PATH = "pkg/" + ENC

# a causal LM and its text model, no TextEncoder base on either chain (lines: 6 the mask check
# in the text model's forward, 15 the LM's own readback)
ENCODER = """
    import torch

    class MistralModel(torch.nn.Module):
        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
            if torch.all(attention_mask > 0).item():
                return input_ids
            return input_ids * attention_mask

    class MistralForCausalLM(torch.nn.Module):
        def __init__(self):
            self.model = MistralModel()

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
            n = int(attention_mask.sum().item())
            return self.model(input_ids[:, :n], attention_mask)
"""

# a DiT that builds the encoder's text model inside itself: its forward runs every step
DIT = """
    import torch
    from pkg.multimodal_gen.runtime.models.encoders.mistral import MistralModel

    class DiT(torch.nn.Module):
        def __init__(self):
            self.text = MistralModel()

        def forward(self, x: torch.Tensor, mask: torch.Tensor):
            return self.text(x, mask)
"""

# a stage whose denoising loop calls the encoder on every step
STAGE = """
    import torch
    from abc import ABC
    from pkg.multimodal_gen.runtime.models.encoders.mistral import MistralForCausalLM

    class RefineStage(ABC):
        def __init__(self):
            self.encoder = MistralForCausalLM()

        def forward(self, batch, server_args):
            ids: torch.Tensor = batch.input_ids
            mask: torch.Tensor = batch.mask
            for i, t in enumerate(batch.timesteps):
                ids = self.encoder.forward(ids, mask)
            return ids
"""


def _reasons(run) -> dict:
    return {f.site.line: f.cold for f in run.findings if f.site.path == ENC_PATH}


def test_an_encoder_without_the_base_runs_once_per_request(tmp_path):
    # VALID (cold): both modules are defined under models/encoders/ and only each other builds
    # them; on main both `forward`s were per-step roots
    run = lint_package(tmp_path, {ENC: ENCODER}, include_cold=True)
    reasons = _reasons(run)
    for line in (6, 15):
        assert reasons.get(line) and "module that runs once per request" in reasons[line], (line, reasons)
    assert not [f for f in lint_package(tmp_path, {ENC: ENCODER}).findings if f.site.path == ENC_PATH]


def test_an_encoder_module_a_dit_builds_stays_per_step(tmp_path):
    # INVALID (per step): the DiT builds `MistralModel` inside itself, so its mask check runs
    # every step; the causal LM that only the encoder directory builds is still cold
    run = lint_package(tmp_path, {ENC: ENCODER, "multimodal_gen/runtime/models/dits/dit.py": DIT},
                       include_cold=True)
    reasons = _reasons(run)
    assert 6 in reasons and reasons[6] is None, reasons
    assert reasons.get(15) and "once per request" in reasons[15], reasons


def test_an_encoder_a_denoising_loop_calls_stays_per_step(tmp_path):
    # INVALID (per step): a stage's step loop calls the encoder's forward on every step. (The
    # text model it calls as `self.model(...)` stays cold: a module's `__call__` is no call edge,
    # modules are reached as roots, as for `TextEncoder` subclasses before this rule.)
    run = lint_package(tmp_path, {ENC: ENCODER, "multimodal_gen/runtime/stages.py": STAGE},
                       include_cold=True)
    reasons = _reasons(run)
    assert 15 in reasons and reasons[15] is None, reasons
