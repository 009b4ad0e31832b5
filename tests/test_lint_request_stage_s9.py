"""Per-request stage work before or after the denoising loop (syncscope/lint/reachability.py
`per_request`, `step_named`): a helper a stage calls outside its schedule's loop
(`_before_denoising_loop`) that runs no schedule itself runs its loops over data once per
call; and an attribute read named like per-step work (`out.sample`, a VAE output's tensor
field) is no call to per-step work, so a loop over chunks that reaches one stays a loop over
data. Small packages: the stage's base in one module, the models in another, the stage in a
third."""

from __future__ import annotations

from test_lint_request_entries import BASE, MODELS
from test_lint_scope import lint_package

# a denoising stage whose set-up helper, called before the schedule's loop, loops over layers
BEFORE = """
    import torch
    from pkg.base import PipelineStage
    from pkg.models import DiT, Scheduler

    class DenoiseStage(PipelineStage):
        def __init__(self):
            self.transformer = DiT()
            self.scheduler = Scheduler()
            self.counts = []

        def _before_denoising_loop(self, latents: torch.Tensor, n: int):
            for i in range(n):
                self.counts.append(int(latents[i].sum().item()))
            return latents

        def forward(self, batch, server_args):
            latents: torch.Tensor = batch.latents
            latents = self._before_denoising_loop(latents, batch.n)
            for t in batch.timesteps:
                noise = self.transformer(latents, t)
                latents = self.scheduler.step(noise, t, latents)
            return latents
"""

# a decoding stage (no schedule) that decodes a request's chunks one by one
DECODE = """
    import torch
    from pkg.base import PipelineStage

    def tensor_of(out):
        if hasattr(out, "sample"):
            return out.sample
        return out

    class DecodeStage(PipelineStage):
        def decode(self, chunk: torch.Tensor):
            frames = tensor_of(chunk)
            peak = float(chunk.max())
            return frames / peak

        def forward(self, batch, server_args):
            videos = []
            for chunk in batch.chunks:
                videos.append(self.decode(chunk))
            return videos
"""


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


def _lint(tmp_path, stage: str):
    return lint_package(tmp_path, {"base.py": BASE, "models.py": MODELS, "stages.py": stage}, include_cold=True)


def test_a_set_up_helper_called_before_the_denoising_loop_runs_once_per_request(tmp_path):
    found = lines_of(_lint(tmp_path, BEFORE), "pkg/stages.py")
    # VALID (cold): the set-up helper's loop over the request's layers (line 14)
    assert found.get(14) and "once per request" in found[14], found
    assert "`DenoiseStage._before_denoising_loop` runs no denoising loop" in found[14], found[14]


def test_a_set_up_helper_that_may_step_stays_per_step(tmp_path):
    # INVALID twins: the helper's loop calls the DiT (per-step work by its name), or is a
    # `while` (token-by-token generation), or the helper is called inside the denoising loop
    calling = BEFORE.replace("self.counts.append(int(latents[i].sum().item()))",
                             "self.counts.append(int(latents[i].sum().item())); self.transformer.forward(latents, i)")
    found = lines_of(_lint(tmp_path, calling), "pkg/stages.py")
    assert 14 in found and found[14] is None, found
    waiting = BEFORE.replace("for i in range(n):", "while n:")
    found = lines_of(_lint(tmp_path, waiting), "pkg/stages.py")
    assert 14 in found and found[14] is None, found
    inside = BEFORE.replace("latents = self._before_denoising_loop(latents, batch.n)\n", "").replace(
        "noise = self.transformer(latents, t)",
        "noise = self.transformer(self._before_denoising_loop(latents, batch.n), t)")
    found = lines_of(_lint(tmp_path, inside), "pkg/stages.py")
    assert 19 in found and found[19] is None, found  # the call into it, in the denoising loop


def test_an_attribute_named_like_per_step_work_is_no_call(tmp_path):
    found = lines_of(_lint(tmp_path, DECODE), "pkg/stages.py")
    # VALID (cold): the chunk's peak read back in `decode` (line 13), which the loop over chunks
    # reaches through a helper that reads `out.sample` (a field, not a call)
    assert found.get(13) and "once per request" in found[13], found


def test_a_call_named_like_per_step_work_keeps_the_loop_per_step(tmp_path):
    # INVALID twins: the helper calls a function named like per-step work, or reads
    # `out.forward` (a module method) to call it later
    calling = DECODE.replace("return out.sample\n", "return sample(out)\n") + """
    def sample(out):
        return out
"""
    found = lines_of(_lint(tmp_path, calling), "pkg/stages.py")
    assert 13 in found and found[13] is None, found
    bound = DECODE.replace("return out.sample\n", "return out.forward\n")
    found = lines_of(_lint(tmp_path, bound), "pkg/stages.py")
    assert 13 in found and found[13] is None, found
