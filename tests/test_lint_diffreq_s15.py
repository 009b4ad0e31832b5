"""Session 15 (branch s-diffreq): diffusion work that runs once per request."""

from __future__ import annotations

from test_lint_request_roots_s13 import STAGE, _lint, lines_of


def test_a_builder_built_and_called_in_one_expression_runs_once_per_request(tmp_path):
    inline = STAGE.replace(
        "        builder = CubeMetadataBuilder()\n"
        "        return builder.build(mask=mask, num_steps=num_steps)",
        "        return CubeMetadataBuilder().build(mask=mask, num_steps=num_steps)")
    assert inline != STAGE
    builders = lines_of(_lint(tmp_path, inline), "pkg/builders.py")
    assert builders.get(11) and "once per request" in builders[11], builders


# An autoregressive prior stage (no denoising schedule): one prior per output of the request,
# each prepared once, then decoded token by token in the encoder's `generate`.
ENCODER = """
    import torch

    class Encoder(torch.nn.Module):
        def forward(self, ids: torch.Tensor):
            return ids * 2

        def generate(self, ids: torch.Tensor, eos: list, max_new_tokens: int):
            eos_tokens = torch.tensor(eos, device=ids.device)
            for _ in range(max_new_tokens):
                logits = self.forward(ids)
                if (logits == eos_tokens).any():
                    break
            return ids
"""

PRIOR = """
    import torch
    from pkg.base import PipelineStage
    from pkg.encoder import Encoder

    class PriorStage(PipelineStage):
        def __init__(self):
            self.encoder = Encoder()

        def prior(self, ids: torch.Tensor, eos: list):
            first = int(ids[0].item())
            out = self.encoder.generate(ids, eos, max_new_tokens=first)
            return out

        def forward(self, batch, server_args):
            ids: torch.Tensor = batch.input_ids
            priors = []
            for output_idx in range(batch.num_outputs):
                priors.append(self.prior(ids, batch.eos))
            return priors
"""


def _prior(tmp_path, stage: str = PRIOR, encoder: str = ENCODER):
    from test_lint_request_entries import BASE
    from test_lint_scope import lint_package
    return lint_package(tmp_path, {"base.py": BASE, "encoder.py": encoder, "stages.py": stage}, include_cold=True)


def test_a_loop_over_outputs_around_a_token_loop_runs_once_per_output(tmp_path):
    run = _prior(tmp_path)
    stages, encoder = lines_of(run, "pkg/stages.py"), lines_of(run, "pkg/encoder.py")
    # VALID (cold): the prior's set-up and the encoder's before its token loop run once per output
    assert stages.get(11) and "once per request" in stages[11], stages
    assert encoder.get(9) and "once per request" in encoder[9], encoder
    # INVALID (per step): the token loop's readback is one per generated token
    assert 12 in encoder and encoder[12] is None, encoder


def test_a_model_call_before_the_token_loop_keeps_the_loop_per_step(tmp_path):
    # INVALID twin: the callee calls the model outside its token loop (a step of its own)
    prefill = ENCODER.replace(
        "            eos_tokens = torch.tensor(eos, device=ids.device)\n",
        "            eos_tokens = torch.tensor(eos, device=ids.device)\n"
        "            ids = self.forward(ids)\n")
    encoder = lines_of(_prior(tmp_path, encoder=prefill), "pkg/encoder.py")
    assert 9 in encoder and encoder[9] is None, encoder


def test_a_loop_over_layers_in_the_callee_keeps_the_outer_loop_per_step(tmp_path):
    # INVALID twin: the callee's loop is over data (layers) calling `forward`: maybe one
    # denoising step whose header says nothing, so the loop around it stays a step loop
    layers = ENCODER.replace("for _ in range(max_new_tokens):", "for layer in range(len(eos)):")
    assert layers != ENCODER
    encoder = lines_of(_prior(tmp_path, encoder=layers), "pkg/encoder.py")
    assert 9 in encoder and encoder[9] is None, encoder


# A builder whose `build` takes its layout by keyword only, beside a per-step runner that calls
# another builder's `build` by name on a receiver of unknown class without that keyword.
KW_BUILDERS = """
    import torch

    class AttentionMetadataBuilder:
        def build(self, **kwargs):
            raise NotImplementedError

    class CubeMetadataBuilder(AttentionMetadataBuilder):
        def build(self, *, mask: torch.Tensor, num_steps: int, **kwargs):
            counts = mask.sum(-1)
            width = int(counts.max().item())
            return width

    class TileMetadataBuilder(AttentionMetadataBuilder):
        def build(self, current_timestep: int, **kwargs):
            return current_timestep
"""

KW_RUNNER = """
    from pkg.builders import CubeMetadataBuilder, TileMetadataBuilder

    class ModelRunner:
        def __init__(self, cls):
            self.builder = cls()

        def execute_model(self, batch):
            return self.builder.build(current_timestep=batch.step, device=batch.device)
"""


def test_a_call_that_omits_a_required_keyword_does_not_reach_the_builder(tmp_path):
    inline = STAGE.replace(
        "        builder = CubeMetadataBuilder()\n"
        "        return builder.build(mask=mask, num_steps=num_steps)",
        "        return CubeMetadataBuilder().build(mask=mask, num_steps=num_steps)")
    run = _lint(tmp_path, inline, **{"builders.py": KW_BUILDERS, "runner.py": KW_RUNNER})
    builders = lines_of(run, "pkg/builders.py")
    # VALID (cold): the runner's per-step `build(current_timestep=...)` cannot bind to the cube
    # builder's `build(self, *, mask, ...)` (Python raises a TypeError), so it keeps no per-step use
    assert builders.get(11) and "once per request" in builders[11], builders


def test_a_call_that_passes_the_required_keyword_keeps_the_builder_a_root(tmp_path):
    # INVALID twin: the runner passes `mask=`: it may run the cube builder every step
    runner = KW_RUNNER.replace("current_timestep=batch.step,", "mask=batch.mask, num_steps=1,")
    inline = STAGE.replace(
        "        builder = CubeMetadataBuilder()\n"
        "        return builder.build(mask=mask, num_steps=num_steps)",
        "        return CubeMetadataBuilder().build(mask=mask, num_steps=num_steps)")
    run = _lint(tmp_path, inline, **{"builders.py": KW_BUILDERS, "runner.py": runner})
    builders = lines_of(run, "pkg/builders.py")
    assert 11 in builders and builders[11] is None, builders
