"""Root-named methods the program calls only once per request (syncscope/lint/request_roots.py):
a metadata builder's `build` (a per-step root by its name) that a diffusion stage calls only
in its set-up, before the denoising loop, runs once per request, and what it syncs on is cold.
Called inside the loop, through a receiver of unknown class in per-step code (vLLM's model
runner), or handed out as a bound method, it stays a root. Small packages: the stage's base in
one module, the builder in another, the stage in a third."""

from __future__ import annotations

from test_lint_request_entries import BASE, MODELS
from test_lint_scope import lint_package

BUILDERS = """
    import torch

    class AttentionMetadataBuilder:
        def build(self, **kwargs):
            raise NotImplementedError

    class CubeMetadataBuilder(AttentionMetadataBuilder):
        def build(self, *, mask: torch.Tensor, num_steps: int):
            counts = mask.sum(-1)
            width = int(counts.max().item())
            for row in range(mask.shape[0]):
                width += int(mask[row].sum().item())
            return width
"""

STAGE = """
    import torch
    from pkg.base import PipelineStage
    from pkg.builders import CubeMetadataBuilder
    from pkg.models import DiT, Scheduler

    def build_metadata(mask: torch.Tensor, num_steps: int):
        builder = CubeMetadataBuilder()
        return builder.build(mask=mask, num_steps=num_steps)

    class DenoisingStage(PipelineStage):
        def __init__(self):
            self.transformer = DiT()
            self.scheduler = Scheduler()

        def forward(self, batch, server_args):
            latents: torch.Tensor = batch.latents
            metadata = build_metadata(batch.mask, len(batch.timesteps))
            for t in batch.timesteps:
                noise = self.transformer.forward(latents, t)
                latents = self.scheduler.step(noise, t, latents)
            return latents, metadata
"""


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


def _lint(tmp_path, stage: str, **extra):
    files = {"base.py": BASE, "models.py": MODELS, "builders.py": BUILDERS, "stages.py": stage}
    files.update(extra)
    return lint_package(tmp_path, files, include_cold=True)


def test_a_builder_called_only_in_a_stages_set_up_runs_once_per_request(tmp_path):
    run = _lint(tmp_path, STAGE)
    builders = lines_of(run, "pkg/builders.py")
    # VALID (cold): the builder's readbacks, its loop over the mask's rows included (a loop
    # over data in code that runs no schedule: once per call)
    assert builders.get(11) and "once per request" in builders[11], builders
    assert builders.get(13) and "once per request" in builders[13], builders
    # INVALID (per step): the denoising loop's work stays per step
    models = lines_of(run, "pkg/models.py")
    assert 6 in models and models[6] is None, models


def test_a_builder_called_inside_the_denoising_loop_stays_a_root(tmp_path):
    # INVALID twin: the same call inside the loop runs every step
    inside = STAGE.replace(
        "            metadata = build_metadata(batch.mask, len(batch.timesteps))\n"
        "            for t in batch.timesteps:\n",
        "            metadata = None\n"
        "            for t in batch.timesteps:\n"
        "                metadata = build_metadata(batch.mask, len(batch.timesteps))\n")
    builders = lines_of(_lint(tmp_path, inside), "pkg/builders.py")
    assert 11 in builders and builders[11] is None, builders


RUNNER = """
    import torch

    class ModelRunner:
        def __init__(self, builder):
            self.builders = [builder]

        def execute_model(self, batch):
            for builder in self.builders:
                builder.build(mask=batch.mask, num_steps=1)
"""


def test_a_builder_a_runner_calls_every_step_through_an_unknown_receiver_stays_a_root(tmp_path):
    # INVALID twin (vLLM's model runner): the builder is also called per step, by name, on a
    # receiver of unknown class that imports can hold it
    runner = "    from pkg.builders import CubeMetadataBuilder\n" + RUNNER
    builders = lines_of(_lint(tmp_path, STAGE, **{"runner.py": runner}), "pkg/builders.py")
    assert 11 in builders and builders[11] is None, builders


def test_a_builder_handed_out_as_a_bound_method_stays_a_root(tmp_path):
    # INVALID twin: `fn = builder.build` on a once line, called later (maybe in the loop)
    handed = STAGE.replace(
        "        return builder.build(mask=mask, num_steps=num_steps)",
        "        make = builder.build\n"
        "        return make(mask=mask, num_steps=num_steps)")
    assert handed != STAGE
    builders = lines_of(_lint(tmp_path, handed), "pkg/builders.py")
    assert 11 in builders and builders[11] is None, builders
