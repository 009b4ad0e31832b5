"""Per-request entry points (syncscope/lint/modules.py, loops.py, reachability.py): a `forward`
is a per-step root by its name only in a class that is, or may be, an `nn.Module`. A class whose
in-tree bases end in classes that are not modules (a diffusion pipeline stage:
`class PipelineStage(ABC)`) runs its `forward(batch, server_args)` once per request: only the
lines inside its loops, and what calls on those lines reach, run every step. Small packages:
the stage in one module, its base in another."""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.loops import file_loops

from test_lint_scope import lint_package


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


BASE = """
    from abc import ABC, abstractmethod

    class StageMixin:
        def log(self, msg):
            print(msg)

    class PipelineStage(StageMixin, ABC):
        def __call__(self, batch, server_args):
            return self.forward(batch, server_args)

        @abstractmethod
        def forward(self, batch, server_args):
            raise NotImplementedError
"""

# a scheduler and a DiT: the denoising loop's per-step work
MODELS = """
    import torch

    class Scheduler:
        def step(self, noise: torch.Tensor, t: torch.Tensor, latents: torch.Tensor):
            sigma = float(t)
            return latents - sigma * noise

    class DiT(torch.nn.Module):
        def forward(self, latents: torch.Tensor, t: torch.Tensor):
            if latents.isnan().any().item():
                return latents
            return latents * 2
"""

STAGES = """
    import torch
    from pkg.base import PipelineStage
    from pkg.models import DiT, Scheduler

    def split_sizes(grid: torch.Tensor):
        return (grid.prod(-1) // 4).tolist()

    class TextEncodingStage(PipelineStage):
        def forward(self, batch, server_args):
            embeds: torch.Tensor = batch.prompt_embeds
            lengths = split_sizes(embeds)
            batch.max_len = embeds.abs().max().item()
            return batch

    class DenoisingStage(PipelineStage):
        def __init__(self):
            self.transformer = DiT()
            self.scheduler = Scheduler()

        def forward(self, batch, server_args):
            noise: torch.Tensor = batch.noise
            scale = noise.abs().max().item()
            return self._loop(batch, batch.timesteps)

        def _loop(self, batch, timesteps: torch.Tensor):
            latents: torch.Tensor = batch.latents
            first = latents.sum().item()
            for i, t in enumerate(timesteps):
                noise = self.transformer.forward(latents, t)
                latents = self.scheduler.step(noise, t, latents)
                if latents.abs().max().item() > 1e4:
                    break
            return latents
"""


def _run(tmp_path, **overrides):
    return lint_package(tmp_path, {"base.py": BASE, "models.py": MODELS, "stages.py": STAGES}, **overrides)


def test_a_stage_that_is_not_a_module_runs_once_per_request_but_its_loop_per_step(tmp_path):
    run = _run(tmp_path)
    found = where(run)
    # VALID (left out): the text-encoding stage's syncs, and the denoising stage's lines outside
    # its loop (the stage is an ABC, not an nn.Module)
    assert not [f for f in found if f[0] == "pkg/stages.py" and f[1] in (7, 12, 13, 23, 28)], found
    # INVALID (still reported): inside the denoising loop; the DiT's forward (a module's, a root);
    # the scheduler's `step` (a root by name)
    assert any(f[:2] == ("pkg/stages.py", 32) for f in found), found
    assert any(f[:2] == ("pkg/models.py", 11) for f in found), found
    assert any(f[:2] == ("pkg/models.py", 6) for f in found), found
    loop = [f for f in run.findings if f.site.path == "pkg/stages.py" and f.site.line == 32][0]
    assert [step[0].rsplit(".", 2)[-2:] for step in loop.per_step] == [["DenoisingStage", "forward"], ["DenoisingStage", "_loop"]]


def test_the_once_per_request_lines_are_cold_with_why(tmp_path):
    run = _run(tmp_path, include_cold=True)
    reasons = {f.site.line: f.cold for f in run.findings if f.site.path == "pkg/stages.py"}
    for line in (12, 13, 23, 28):
        assert reasons.get(line) and "once per request" in reasons[line], (line, reasons)
    assert "TextEncodingStage.forward" in reasons[12]
    assert reasons.get(32) is None  # the loop: per step
    # the helper only the text-encoding stage calls: once per request as well
    assert reasons.get(7) and "once per request" in reasons[7], reasons


MODULE_STAGE = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return x.sum().item()

    class ForwardMixin:
        def forward(self, x: torch.Tensor):
            return int(x.max())

    class Layer(ForwardMixin, torch.nn.Module):
        pass
"""


def test_a_module_forward_and_a_mixin_of_a_module_stay_roots(tmp_path):
    run = lint_package(tmp_path, {"blocks.py": MODULE_STAGE})
    lines = {f.site.line for f in run.findings if f.site.path == "pkg/blocks.py"}
    assert {6, 10} <= lines, where(run)


UNKNOWN_BASE = """
    import torch
    from somewhere_else import *
    from otherlib import Runner

    class Stage(SomeBase):
        def forward(self, x: torch.Tensor):
            return x.sum().item()

    class Engine(Runner):
        def forward(self, x: torch.Tensor):
            return int(x.max())
"""


def test_a_class_with_a_base_the_linter_cannot_follow_stays_a_root(tmp_path):
    run = lint_package(tmp_path, {"unknown.py": UNKNOWN_BASE})
    lines = {f.site.line for f in run.findings if f.site.path == "pkg/unknown.py"}
    assert {8, 12} <= lines, where(run)


ATTENTION = """
    import torch
    from abc import ABC
    from typing import Generic, TypeVar

    T = TypeVar("T")

    class AttentionImpl(ABC, Generic[T]):
        def forward(self, q: torch.Tensor):
            raise NotImplementedError

    class FlashImpl(AttentionImpl[int]):
        def forward(self, q: torch.Tensor):
            return q.sum().item()

    class Attention(torch.nn.Module):
        def __init__(self, impl):
            self.impl = impl

        def forward(self, q: torch.Tensor):
            return self.impl.forward(q)
"""


def test_a_plain_class_forward_that_a_module_calls_stays_per_step(tmp_path):
    # INVALID: an attention implementation is not a module, but a module's forward calls it
    # on a receiver of unknown class: it runs every step
    run = lint_package(tmp_path, {"attn.py": ATTENTION})
    assert any(f[:2] == ("pkg/attn.py", 14) for f in where(run)), where(run)


BY_NAME_STAGES = """
    import torch
    from abc import ABC

    class DenoiseStage(ABC):
        def forward(self, batch, server_args):
            return batch.latents.cpu()

    class FlashImpl:
        def forward(self, q, k, v, attn_metadata=None):
            return q.sum().item()

    class Attention(torch.nn.Module):
        def __init__(self, impl):
            self.impl = impl

        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
            return self.impl.forward(q, k, v, attn_metadata=None)
"""


def test_a_call_by_name_reaches_only_the_methods_it_can_bind_to(tmp_path):
    # VALID: `self.impl.forward(q, k, v, attn_metadata=...)` on a receiver of unknown class
    # reaches an implementation's forward, never a pipeline stage's (a per-request entry) `forward(self, batch,
    # server_args)` (three positional arguments and a keyword it lacks: Python would raise), so
    # the stage's `.cpu()` is not per step (SGLang's diffusion attention layer and its stages)
    run = lint_package(tmp_path, {"attn.py": BY_NAME_STAGES})
    lines = {f[1] for f in where(run) if f[0] == "pkg/attn.py"}
    assert 11 in lines and 7 not in lines, where(run)
    # VALID too: a call that passes more through `*args` still passes at least these
    run = lint_package(tmp_path, {"attn.py": BY_NAME_STAGES.replace("self.impl.forward(q, k, v, attn_metadata=None)",
                                                                    "self.impl.forward(q, k, v, *self.extra)")})
    lines = {f[1] for f in where(run) if f[0] == "pkg/attn.py"}
    assert 11 in lines and 7 not in lines, where(run)
    # INVALID: a stage whose forward takes what the call passes is still reached
    run = lint_package(tmp_path, {"attn.py": BY_NAME_STAGES.replace("def forward(self, batch, server_args):",
                                                            "def forward(self, batch, *rest, **options):")})
    assert 7 in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, where(run)


def test_a_dict_of_known_keys_passed_as_double_star_counts_as_its_keywords(tmp_path):
    # SGLang's MiniCPM adapter: `kwargs = {"sm_scale": ...}; self.active_wrapper.forward(q, (k,
    # v), **kwargs)`: two positional arguments alone would bind to a stage's `forward(self,
    # batch, server_args)`; `sm_scale` cannot
    two = BY_NAME_STAGES.replace("self.impl.forward(q, k, v, attn_metadata=None)",
                                 "self.impl.forward(q, (k, v), **kwargs)")
    known = two.replace("return self.impl.forward(q, (k, v), **kwargs)",
                        "kwargs = {\"sm_scale\": 1.0}\n            return self.impl.forward(q, (k, v), **kwargs)")
    run = lint_package(tmp_path, {"attn.py": known})
    assert 7 not in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, where(run)
    # INVALID: keys a caller may remove (`kwargs.pop(...)`), or a dict of unknown keys, say nothing
    popped = known.replace("return self.impl.forward(q, (k, v), **kwargs)",
                           "kwargs.pop(\"sm_scale\")\n            return self.impl.forward(q, (k, v), **kwargs)")
    run = lint_package(tmp_path, {"attn.py": popped})
    assert 7 in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, where(run)
    unknown = two.replace("return self.impl.forward(q, (k, v), **kwargs)",
                          "kwargs = dict(self.options)\n            return self.impl.forward(q, (k, v), **kwargs)")
    run = lint_package(tmp_path, {"attn.py": unknown})
    assert 7 in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, where(run)


def test_a_call_that_leaves_out_a_required_parameter_does_not_bind(tmp_path):
    # `mega.forward(tensors)` (SGLang's MoE megakernel) passes one argument: a stage's
    # `forward(self, batch, server_args)` would raise, so it is not reached
    one = BY_NAME_STAGES.replace("self.impl.forward(q, k, v, attn_metadata=None)", "self.impl.forward(q)")
    run = lint_package(tmp_path, {"attn.py": one})
    assert 7 not in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, where(run)
    # INVALID: a default, a keyword or a `**kwargs` may fill the rest
    for variant in (one.replace("def forward(self, batch, server_args):", "def forward(self, batch, server_args=None):"),
                    one.replace("self.impl.forward(q)", "self.impl.forward(q, server_args=None)"),
                    one.replace("self.impl.forward(q)", "self.impl.forward(q, **self.extra)")):
        run = lint_package(tmp_path, {"attn.py": variant})
        assert 7 in {f[1] for f in where(run) if f[0] == "pkg/attn.py"}, (variant, where(run))


def test_loop_facts_of_a_function():
    source = textwrap.dedent("""
        from abc import ABC
        import torch.nn as nn

        class A(ABC, nn.Module, object):
            def f(self, xs):
                a = 1
                for x in xs:
                    b = x
                    def inner():
                        return 2
                else:
                    c = 3
                while a:
                    a -= 1
                with open("f") as h:
                    d = 4
                return a
    """)
    straight, bases, spans, _ = file_loops(ast.parse(source), "m", {"ABC": "abc.ABC", "nn": "torch.nn"})
    assert bases["m.A"] == ("abc.ABC", "torch.nn.Module", "builtins.object")
    assert straight["m.A.f"] == ((6, 8), (13, 13), (16, 18))
    assert straight["m.A.f.inner"] == ((10, 11),)
    assert spans["m.A.f"] == (6, 18) and spans["m.A.f.inner"] == (10, 11)


def test_a_namespace_package_inside_a_package_is_named_through_its_parent(tmp_path):
    # SGLang's `sglang/multimodal_gen/runtime/` has no `__init__.py`: its modules import each
    # other as `sglang.multimodal_gen.runtime....`, so the stage's base must resolve that way
    from syncscope.lint.engine import lint_paths

    from lint_helpers import make_config

    root = tmp_path / "pkg"
    (root / "runtime" / "stages").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "runtime" / "stages" / "__init__.py").write_text("")
    (root / "runtime" / "stages" / "base.py").write_text(textwrap.dedent(BASE))
    (root / "runtime" / "stages" / "text.py").write_text(textwrap.dedent("""
        import torch
        from pkg.runtime.stages.base import PipelineStage

        class TextEncodingStage(PipelineStage):
            def forward(self, batch, server_args):
                embeds: torch.Tensor = batch.prompt_embeds
                return embeds.abs().max().item()
    """))
    run = lint_paths([str(root)], make_config(tmp_path, include_cold=True), use_cache=False, jobs=1)
    found = {(f.site.path, f.site.line): f.cold for f in run.findings}
    assert "once per request" in (found.get(("pkg/runtime/stages/text.py", 8)) or ""), found


BARE = """
    import torch
    from abc import ABC

    class Sampler:
        def forward(self, lens: torch.Tensor):
            return lens.sum().item()

    class Stage(ABC):
        def forward(self, lens: torch.Tensor):
            return lens.sum().item()
"""


def test_a_class_without_bases_is_no_evidence_of_a_stage(tmp_path):
    # INVALID (reported): a bare class's forward may be a per-step runner (SGLang's ModelRunner)
    # VALID (cold): a class whose base says it is not a module (ABC) runs it once per request
    run = lint_package(tmp_path, {"bare.py": BARE})
    lines = {f.site.line for f in run.findings if f.site.path == "pkg/bare.py"}
    assert 7 in lines and 11 not in lines, where(run)
