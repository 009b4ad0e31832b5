"""Loops beside the denoising loop (syncscope/lint/steploops.py `beside`): in a per-request
function whose own loop names the schedule, a `for` over data before or after that loop (a
private scheduler per stream, each given its schedule; the outputs collected afterwards) runs
once per call, not per step. The denoising loop itself stays per step, and so does a loop
beside it that may do per-step work. Small packages: the stage's base in one module, the
schedulers in another, the stage in a third."""

from __future__ import annotations

from test_lint_request_entries import BASE, MODELS
from test_lint_scope import lint_package

SCHEDULERS = """
    import torch

    class UniPCScheduler:
        def set_timesteps(self, n: int, device=None):
            self.timesteps = torch.linspace(1.0, 0.0, n, device=device)
            self.first = float(self.timesteps[0])

        def step(self, noise: torch.Tensor, t: torch.Tensor, latents: torch.Tensor):
            return latents - float(t) * noise
"""

# SGLang's `cosmos_unipc`: one scheduler per stream, each set up before the shared loop
STAGE = """
    import copy
    import torch
    from pkg.base import PipelineStage
    from pkg.models import DiT
    from pkg.schedulers import UniPCScheduler

    def solve(samples: dict, predict, scheduler: UniPCScheduler, n_steps: int):
        device = next(iter(samples.values())).device
        schedulers = {k: copy.deepcopy(scheduler) for k in samples}
        for stream_scheduler in schedulers.values():
            stream_scheduler.set_timesteps(n_steps, device=device)
        timesteps = next(iter(schedulers.values())).timesteps
        for tick in timesteps:
            velocity = predict(samples, tick.item())
            samples = {k: schedulers[k].step(velocity[k], tick, samples[k]) for k in samples}
        for name in samples:
            samples[name] = samples[name].cpu()
        return samples

    class ActionStage(PipelineStage):
        def __init__(self):
            self.transformer = DiT()
            self.scheduler = UniPCScheduler()

        def forward(self, batch, server_args):
            result = solve(batch.samples, self.transformer.forward, self.scheduler, batch.steps)
            return result
"""


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


def _lint(tmp_path, stage: str):
    return lint_package(tmp_path, {"base.py": BASE, "models.py": MODELS, "schedulers.py": SCHEDULERS,
                                   "stages.py": stage}, include_cold=True)


def test_a_loop_beside_the_denoising_loop_runs_once_per_request(tmp_path):
    run = _lint(tmp_path, STAGE)
    stages = lines_of(run, "pkg/stages.py")
    schedulers = lines_of(run, "pkg/schedulers.py")
    # VALID (cold): what the set-up loop's call into the scheduler (line 12) reaches (the
    # schedule's first sigma read back, schedulers.py:7), and the copy-out loop after the
    # denoising loop (line 18)
    assert stages.get(18) and "once per request" in stages[18], stages
    assert schedulers.get(7) and "once per request" in schedulers[7], schedulers
    # INVALID (per step): the denoising loop's readback (line 15) and the scheduler's `step`
    assert 15 in stages and stages[15] is None, stages
    assert 10 in schedulers and schedulers[10] is None, schedulers


def test_a_loop_beside_it_that_may_step_stays_per_step(tmp_path):
    # INVALID twins: the loop beside calls something named like per-step work (`step`), or is a
    # `while` (token-by-token generation): either may be a second schedule, so it stays per step
    stepping = STAGE.replace("stream_scheduler.set_timesteps(n_steps, device=device)",
                             "stream_scheduler.set_timesteps(n_steps, device=device); "
                             "stream_scheduler.step(device, device, device)")
    found = lines_of(_lint(tmp_path, stepping), "pkg/schedulers.py")
    assert 7 in found and found[7] is None, found
    waiting = STAGE.replace("for name in samples:\n            samples[name] = samples[name].cpu()",
                            "while samples:\n            samples[name] = samples[name].cpu()")
    found = lines_of(_lint(tmp_path, waiting), "pkg/stages.py")
    assert 18 in found and found[18] is None, found
