"""Loops around the denoising loop (syncscope/lint/steploops.py, loops.py): a per-request stage
that runs a whole denoising schedule per chunk, clip or sample of the request. The chunk loop's
own lines (building the chunk's schedule, decoding the chunk) run once per chunk, not per
step; the denoising loop inside stays per step. Small packages: the stage's base in one
module, the stages in another."""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.loops import file_loop_facts
from syncscope.lint.steploops import names_steps

from test_lint_request_entries import BASE, MODELS
from test_lint_scope import lint_package


def lines_of(run, path: str = "pkg/stages.py") -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


# the chunk loop calls a helper that holds the denoising loop (SGLang's Cosmos3 transfer and
# Sim-Auto rollout stages, the SANA-WM refiner's loop over samples)
CALLED = """
    import torch
    from pkg.base import PipelineStage
    from pkg.models import DiT, Scheduler

    class ChunkedDenoisingStage(PipelineStage):
        def __init__(self):
            self.transformer = DiT()
            self.scheduler = Scheduler()

        def forward(self, batch, server_args):
            outputs = []
            for chunk_id in range(batch.num_chunks):
                sigmas = torch.tensor(batch.sigma_list, device="cuda")
                start = sigmas[0].item()
                latents = self._denoise_once(batch, sigmas)
                outputs.append(latents.cpu())
            return outputs

        def _denoise_once(self, batch, sigmas: torch.Tensor):
            latents: torch.Tensor = batch.latents
            for i, t in enumerate(sigmas):
                noise = self.transformer.forward(latents, t)
                latents = self.scheduler.step(noise, t, latents)
                if latents.abs().max().item() > 1e4:
                    break
            return latents
"""


def test_a_loop_around_a_called_denoising_loop_runs_once_per_chunk(tmp_path):
    found = lines_of(lint_package(tmp_path, {"base.py": BASE, "models.py": MODELS, "stages.py": CALLED},
                                  include_cold=True))
    # VALID (cold): the chunk loop's own lines: the chunk's schedule, its first sigma, the copy out
    for line in (14, 15, 17):
        assert found.get(line) and "once per request" in found[line], (line, found)
    # INVALID (per step): inside the denoising loop the chunk loop calls
    assert 24 in found and found[24] is None, found


# the same chunk loop, but what it calls loops over a CFG pair, not over a schedule: the loop
# is the stage's only loop, so it stays a step loop (as before)
NO_SCHEDULE = CALLED.replace("for i, t in enumerate(sigmas):", "for branch in (True, False):") \
    .replace("noise = self.transformer.forward(latents, t)", "noise = self.transformer.forward(latents, sigmas)") \
    .replace("latents = self.scheduler.step(noise, t, latents)", "latents = self.scheduler.step(noise, sigmas, latents)")


def test_a_loop_around_a_loop_over_something_else_stays_per_step(tmp_path):
    found = lines_of(lint_package(tmp_path, {"base.py": BASE, "models.py": MODELS, "stages.py": NO_SCHEDULE},
                                  include_cold=True))
    for line in (15, 17, 24):
        assert line in found and found[line] is None, (line, found)


# the two loops in one function
NESTED = """
    import torch
    from pkg.base import PipelineStage

    class ClipStage(PipelineStage):
        def forward(self, batch, server_args):
            for clip in batch.clips:
                first = clip.latents.sum().item()
                for step_index in range(batch.num_inference_steps):
                    if clip.latents.abs().max().item() > 1e4:
                        break
                last = clip.latents.max().item()
            return batch
"""


def test_a_loop_around_a_nested_denoising_loop_runs_once_per_clip(tmp_path):
    found = lines_of(lint_package(tmp_path, {"base.py": BASE, "stages.py": NESTED}, include_cold=True))
    # VALID (cold): the clip loop's own lines, before and after the denoising loop
    for line in (8, 12):
        assert found.get(line) and "once per request" in found[line], (line, found)
    # INVALID (per step): the denoising loop's test
    assert 10 in found and found[10] is None, found
    # INVALID twin: an inner loop that may be per step (a `while`: token-by-token generation)
    # leaves the clip loop a step loop (a loop over views doing no per-step work would not:
    # test_lint_request_plain.py)
    other = NESTED.replace("for step_index in range(batch.num_inference_steps):", "while clip.pending:")
    found = lines_of(lint_package(tmp_path, {"base.py": BASE, "stages.py": other}, include_cold=True))
    for line in (8, 10, 12):
        assert line in found and found[line] is None, (line, found)


def test_loop_facts_record_each_loop_with_its_own_lines():
    source = textwrap.dedent("""
        def f(chunks, timesteps):
            a = 1
            for chunk in chunks:
                b = chunk
                for i, t in enumerate(timesteps):
                    c = t
                d = b
            while a:
                a -= 1
            return a
    """)
    straight, _, _, _, loops = file_loop_facts(ast.parse(source), "m", {})
    assert straight["m.f"] == ((2, 4), (11, 11))
    # the last element: a `for` over data (not the schedule's loop, not a `while`)
    assert loops["m.f"] == ((4, 8, False, -1, ((5, 6), (8, 8)), True),
                            (6, 7, True, 0, ((7, 7),), False),
                            (9, 10, False, -1, ((9, 10),), False))


def test_what_names_the_schedule():
    def header(text: str) -> bool:
        return names_steps(ast.parse(text, mode="eval").body)
    for text in ("enumerate(timesteps)", "range(len(sigmas) - 1)", "(i, t)", "self.scheduler.timesteps",
                 "range(batch.num_inference_steps)", "step_idx"):
        assert header(text), text
    for text in ("range(plan['num_chunks'])", "latent_chunks", "zip(prompts, seeds)", "(True, False)",
                 "self.progress_bar(range(num_chunks))", "views"):
        assert not header(text), text
