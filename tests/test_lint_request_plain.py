"""Stages that run no denoising schedule (syncscope/lint/steploops.py `items`, reachability.py):
a preprocessing, text-encoding or LoRA-switch stage runs once per request, and so do its loops
over the request's data (views, prompts, a batch's items). A loop that may do per-step work stays
a step loop: a `while` or a loop over tokens (generation), one that calls per-step work
(`forward`, `step`) or reaches it, one that holds such a loop. Small packages: the stage's base
in one module, the stages in another, the helpers in a third."""

from __future__ import annotations

from test_lint_request_entries import BASE, MODELS
from test_lint_scope import lint_package


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


# a renderer that a preprocessing stage calls once per view (SGLang's Hunyuan3D paint stage)
RENDER = """
    import numpy as np
    import torch

    class MeshRender:
        def __init__(self, device):
            self.device = device

        def render_multiview(self, elevs, azims):
            maps = []
            for elev, azim in zip(elevs, azims):
                maps.append(self.render(elev, azim))
            return maps

        def render(self, elev, azim):
            normals = np.zeros((4, 3), dtype=np.float32)
            image = torch.from_numpy(normals).to(self.device)
            return image.max().item()
"""

STAGES = """
    import torch
    from pkg.base import PipelineStage
    from pkg.render import MeshRender

    class PaintPreprocessStage(PipelineStage):
        def __init__(self):
            self.renderer = MeshRender("cuda")

        def forward(self, batch, server_args):
            batch.maps = self.renderer.render_multiview(batch.elevs, batch.azims)
            features: torch.Tensor = batch.features
            for batch_idx in range(batch.size):
                total = features[batch_idx].sum().item()
                features[batch_idx] = total
            return batch
"""


def test_loops_over_data_in_a_stage_without_a_schedule_run_once_per_request(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "stages.py": STAGES}, include_cold=True)
    render, stages = lines_of(run, "pkg/render.py"), lines_of(run, "pkg/stages.py")
    # VALID (cold): the copy and the readback of each view, the readback of each item
    for found, line in ((render, 17), (render, 18), (stages, 14)):
        assert found.get(line) and "runs no denoising loop" in found[line], (line, found)


# INVALID twins: the same loops, but one may do per-step work
def test_a_loop_that_may_do_per_step_work_stays_a_step_loop(tmp_path):
    # a `while` (token-by-token generation)
    looping = RENDER.replace("for elev, azim in zip(elevs, azims):", "while elevs:")
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": looping, "stages.py": STAGES}, include_cold=True)
    found = lines_of(run, "pkg/render.py")
    for line in (17, 18):
        assert line in found and found[line] is None, (line, found)
    # a loop over tokens
    tokens = STAGES.replace("for batch_idx in range(batch.size):", "for batch_idx in range(batch.max_new_tokens):")
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "stages.py": tokens}, include_cold=True)
    found = lines_of(run, "pkg/stages.py")
    assert 14 in found and found[14] is None, found
    # a loop whose lines call a module's `forward`: a schedule loop whose header says nothing
    stepping = STAGES.replace("from pkg.render import MeshRender", "from pkg.render import MeshRender\n"
                              "    from pkg.models import DiT") \
        .replace('self.renderer = MeshRender("cuda")', 'self.renderer = MeshRender("cuda")\n'
                 '            self.transformer = DiT()') \
        .replace("total = features[batch_idx].sum()", "total = self.transformer.forward(features, features).sum()")
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "models.py": MODELS, "stages.py": stepping},
                       include_cold=True)
    found = lines_of(run, "pkg/stages.py")
    assert 16 in found and found[16] is None, found


# a stage with a denoising loop keeps its own loops per step, and the loops of what it calls
# that runs a schedule; what it calls outside the schedule's loop that runs none (a renderer
# called before it) runs its loops over data once per request (session 9:
# test_lint_request_stage_s9.py). A loop over data beside the schedule's loop in the same
# function runs once per request (session 8: test_lint_request_beside_s8.py)
SCHEDULED = STAGES.replace("            return batch\n", "            for i, t in enumerate(batch.timesteps):\n"
                           "                batch.latents = batch.latents * t\n"
                           "            return batch\n")
# the same schedule loop in a helper the stage calls: nothing is beside it in `forward`
HELPED = STAGES.replace("            return batch\n", "            self.denoise(batch)\n"
                        "            return batch\n\n"
                        "        def denoise(self, batch):\n"
                        "            for i, t in enumerate(batch.timesteps):\n"
                        "                batch.latents = batch.latents * t\n")


def test_a_stage_with_a_schedule_keeps_its_own_loops_per_step(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "stages.py": SCHEDULED}, include_cold=True)
    render, stages = lines_of(run, "pkg/render.py"), lines_of(run, "pkg/stages.py")
    for found, line in ((render, 17), (render, 18), (stages, 14)):
        assert found.get(line) and "once per request" in found[line], (line, found)
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "stages.py": HELPED}, include_cold=True)
    render, stages = lines_of(run, "pkg/render.py"), lines_of(run, "pkg/stages.py")
    for found, line in ((render, 17), (render, 18)):
        assert found.get(line) and "once per request" in found[line], (line, found)
    assert 14 in stages and stages[14] is None, stages


# a router stage that runs whichever stage it holds (SGLang's ProgressiveDenoisingStageRouter:
# `self.standard_stage.forward(batch, server_args)`): it may reach a denoising stage, so it runs
# a schedule; the preprocessing stage it may also reach is still judged by its own loops
ROUTED = STAGES + """
    class DenoisingStage(PipelineStage):
        def forward(self, batch, server_args):
            for i, t in enumerate(batch.timesteps):
                batch.latents = batch.latents * t
            return batch

    class RouterStage(PipelineStage):
        def __init__(self, stage: PipelineStage):
            self.stage = stage

        def forward(self, batch, server_args):
            return self.stage.forward(batch, server_args)
"""


def test_a_stage_that_a_router_runs_is_judged_by_its_own_loops(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "render.py": RENDER, "stages.py": ROUTED}, include_cold=True)
    render = lines_of(run, "pkg/render.py")
    for line in (17, 18):
        assert render.get(line) and "runs no denoising loop" in render[line], (line, render)
        assert "`PaintPreprocessStage.forward`" in render[line], render[line]  # not the router
