"""A loop over a field declared as a list of a class gives objects of that class's family: calls
on the loop variable reach only their methods (element_receivers.py).

vLLM 0.33's sampler declares `self.logits_processors: list[LogitsProcessor] = [...]` and runs
`for processor in self.logits_processors: logits = processor.apply(logits, ctx)`. The loop
variable had no class, so the call went by name to every `apply` it could bind to, the
multimodal input processor's `apply(inputs, timing_ctx)` among them, whose post-processing of a
processor's outputs (`context.py:370`, a `.cpu()`) was reported per step. VALID: the declared
element class limits the call, and a subclass's override is still reached (its sync stays per
step). INVALID twins: no declaration, a union element, a loop variable bound twice: the call
still goes by name.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

PIPELINE = """
import torch


class MediaPipeline:
    def apply(self, inputs: torch.Tensor, timing):
        return int(inputs.sum().item())
"""

STAGES = """
import torch


class LogitsStage:
    def apply(self, logits: torch.Tensor, ctx) -> torch.Tensor:
        return logits


class BiasStage(LogitsStage):
    def __init__(self):
        self.bias = torch.zeros(8, device="cuda")

    def apply(self, logits: torch.Tensor, ctx) -> torch.Tensor:
        if self.bias.sum().item() > 0:
            return logits + self.bias
        return logits
"""

SAMPLER = """
import torch
from torch import nn

from pkg.pipeline import MediaPipeline
from pkg.stages import BiasStage, LogitsStage


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages{declared} = [BiasStage()]

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
{rebind}        for stage in self.stages:
            logits = stage.apply(logits, None)
        return logits
"""

PIPELINE_SYNC = ("pkg/pipeline.py", 7, "SYN201")
OVERRIDE_SYNC = ("pkg/stages.py", 15, "SYN201")


def _run(tmp_path, declared=": list[LogitsStage]", rebind=""):
    return lint_package(tmp_path, {"pipeline.py": PIPELINE, "stages.py": STAGES,
                                   "sampler.py": SAMPLER.format(declared=declared, rebind=rebind)})


def test_a_declared_list_limits_the_calls_on_its_items(tmp_path):
    found = where(_run(tmp_path))
    assert PIPELINE_SYNC not in found
    assert OVERRIDE_SYNC in found  # a subclass's override is still reached


def test_a_sequence_declaration_limits_them_too(tmp_path):
    found = where(_run(tmp_path, declared=': "Sequence[LogitsStage]"'))
    assert PIPELINE_SYNC not in found and OVERRIDE_SYNC in found


def test_without_a_declaration_the_call_goes_by_name(tmp_path):
    assert PIPELINE_SYNC in where(_run(tmp_path, declared=""))


def test_a_union_element_says_nothing(tmp_path):
    assert PIPELINE_SYNC in where(_run(tmp_path, declared=": list[LogitsStage | MediaPipeline]"))


def test_a_loop_variable_bound_twice_says_nothing(tmp_path):
    rebind = "        for stage in ():\n            pass\n"
    assert PIPELINE_SYNC in where(_run(tmp_path, rebind=rebind))
