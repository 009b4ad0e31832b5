"""A method called on the object another method returns (`self._get_stage().forward(batch, args)`,
fact_values.py `CALLED`, program.py `returned_class`): the receiver's class is the one the
method's definition is annotated to return (`def _get_stage(self) -> DenoisingStage`), so the call
runs that class's method (or an override), not every method of that name in the tree. SGLang's
`ProgressiveDenoisingStageRouter.forward` was taken to run every stage's `forward` (prompt
enhancement, AR prompt generation, decoding) per step. Small packages: the stage base in one
module, the stages in another, the router in a third."""

from __future__ import annotations

from test_lint_request_entries import BASE
from test_lint_scope import lint_package


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


# a prompt-enhancement stage: token-by-token generation, once per request before denoising
STAGES = """
    import torch
    from pkg.base import PipelineStage

    class PromptStage(PipelineStage):
        def forward(self, batch, server_args):
            unfinished = torch.ones(4, dtype=torch.bool, device="cuda")
            while True:
                unfinished = unfinished & batch.more
                if not unfinished.any():
                    break
            return batch

    class DenoisingStage(PipelineStage):
        def forward(self, batch, server_args):
            for i, t in enumerate(batch.timesteps):
                batch.latents = batch.latents * t
            return batch
"""

ROUTER = """
    from pkg.base import PipelineStage
    from pkg.stages import DenoisingStage

    class RouterStage(PipelineStage):
        def __init__(self, factory):
            self._factory = factory
            self._stage = None

        def _get_stage(self) -> DenoisingStage:
            if self._stage is None:
                self._stage = self._factory()
            return self._stage

        def forward(self, batch, server_args):
            return self._get_stage().forward(batch, server_args)
"""


def _entries(run) -> list[str]:
    """The per-step entries each finding at the prompt stage's readback is reached from."""
    found = [f for f in run.findings if f.site.path == "pkg/stages.py" and f.site.line == 10]
    assert found, run.findings
    return [step[0] for f in found for step in (f.per_step or ())]


def test_a_call_on_an_annotated_return_reaches_only_that_class(tmp_path):
    # VALID: the router runs a DenoisingStage (or an override); the prompt stage's generation
    # loop is no longer reached from it, only from its own stage
    run = lint_package(tmp_path, {"base.py": BASE, "stages.py": STAGES, "router.py": ROUTER}, include_cold=True)
    assert "pkg.router.RouterStage.forward" not in _entries(run), _entries(run)


def test_an_unannotated_or_unioned_return_is_still_dispatched_by_name(tmp_path):
    # INVALID twins: no annotation, or `A | B`: the receiver's class is not one: every `forward`
    for router in (ROUTER.replace("def _get_stage(self) -> DenoisingStage:", "def _get_stage(self):"),
                   ROUTER.replace("-> DenoisingStage:", "-> DenoisingStage | PipelineStage:")):
        run = lint_package(tmp_path, {"base.py": BASE, "stages.py": STAGES, "router.py": router}, include_cold=True)
        assert "pkg.router.RouterStage.forward" in _entries(run), _entries(run)
