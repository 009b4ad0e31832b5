"""Modules that run once per request (syncscope/lint/modules.py `request_module`,
reachability.py `per_request_modules`): a diffusion pipeline's text encoder (an in-tree subclass
of `[roots] request-modules`: `models.encoders.base.TextEncoder`) runs in the encoding stage,
once per request, and so do the modules only it builds (its layers, its vision tower). Their
`forward` is no per-step root, and what they reach runs once per request, loops included. A
module that per-step code also builds (a layer a DiT shares), or that something outside a
module builds, stays a root; a stage's loop that calls the encoder (a prompt enhancer's
token-by-token `generate`) makes it per step."""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.loops import file_loops

from test_lint_scope import lint_package


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


ENCODER_BASE = """
    import torch

    class TextEncoder(torch.nn.Module):
        def forward(self, input_ids):
            raise NotImplementedError
"""

LAYERS = """
    import torch

    class SharedMLP(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return x.max().item()
"""

ENCODER = """
    import torch
    from pkg.models.encoders.base import TextEncoder
    from pkg.layers import SharedMLP

    class VisionAttention(torch.nn.Module):
        def forward(self, x: torch.Tensor, cu: torch.Tensor):
            return cu.tolist()

    class VisionTower(torch.nn.Module):
        def __init__(self):
            self.blocks = torch.nn.ModuleList([VisionAttention() for _ in range(2)])
            self.mlp = SharedMLP()

        def forward(self, x: torch.Tensor):
            return x.sum().item()

    class QwenEncoder(TextEncoder):
        def __init__(self):
            self.visual = VisionTower()

        def forward(self, input_ids: torch.Tensor, mask: torch.Tensor):
            for i in range(mask.shape[0]):
                ids = input_ids[mask[i] == 1]
            return self.visual(input_ids)

        def generate(self, input_ids: torch.Tensor):
            for _ in range(8):
                input_ids = self.forward(input_ids, input_ids)
            return input_ids
"""

DIT = """
    import torch
    from pkg.layers import SharedMLP

    class DiT(torch.nn.Module):
        def __init__(self):
            self.mlp = SharedMLP()

        def forward(self, x: torch.Tensor):
            return self.mlp(x)
"""

ENHANCER = """
    from abc import ABC

    class PromptEnhanceStage(ABC):
        def forward(self, batch, server_args):
            return self.enhancer.generate(batch.input_ids)
"""


def _files(**extra) -> dict:
    files = {"models/encoders/base.py": ENCODER_BASE, "models/encoders/qwen.py": ENCODER,
             "layers.py": LAYERS, "dit.py": DIT}
    files.update(extra)
    return files


def test_an_encoder_and_the_modules_only_it_builds_run_once_per_request(tmp_path):
    run = lint_package(tmp_path, _files())
    found = where(run)
    # VALID (left out): the encoder's loop over a request's rows (line 24), its vision tower
    # (line 16) and the attention only the tower builds (line 8)
    assert not [f for f in found if f[0] == "pkg/models/encoders/qwen.py"], found
    # INVALID (still reported): a layer the DiT builds too runs every step
    assert any(f[:2] == ("pkg/layers.py", 6) for f in found), found


def test_the_encoders_lines_are_cold_with_why(tmp_path):
    run = lint_package(tmp_path, _files(), include_cold=True)
    reasons = {f.site.line: f.cold for f in run.findings if f.site.path == "pkg/models/encoders/qwen.py"}
    for line in (8, 16, 24):
        assert reasons.get(line) and "module that runs once per request" in reasons[line], (line, reasons)
    assert "QwenEncoder.forward" in reasons[24] and "VisionTower.forward" in reasons[16]


def test_a_stage_loop_that_calls_the_encoder_makes_it_per_step(tmp_path):
    # `generate` runs the encoder's `forward` once per generated token: per step
    run = lint_package(tmp_path, _files(**{"stages.py": ENHANCER}))
    found = where(run)
    assert any(f[:2] == ("pkg/models/encoders/qwen.py", 24) for f in found), found


def test_a_module_built_outside_a_module_stays_a_root(tmp_path):
    # a module-level factory builds the tower too: whoever calls it may run it every step
    factory = ENCODER + """
    def build_tower():
        return VisionTower()
"""
    run = lint_package(tmp_path, _files(**{"models/encoders/qwen.py": factory}))
    lines = {f.site.line for f in run.findings if f.site.path == "pkg/models/encoders/qwen.py"}
    assert 16 in lines and 8 in lines, where(run)
    assert 24 not in lines, where(run)


def test_construction_facts_of_a_file():
    source = textwrap.dedent("""
        import torch.nn as nn
        from pkg.layers import Block, make

        class Tower(nn.Module):
            def __init__(self):
                self.blocks = nn.ModuleList([Block() for _ in range(2)])
                def inner():
                    return Norm()
                self.x = make()

        class Norm(nn.Module):
            pass

        def build():
            return Tower()

        def pick(norm: "Norm | None" = None):
            chosen = norm or Norm()
            return chosen

        def pick_again(norm=None):
            if norm is None:
                norm = Norm()
            return norm

        DEFAULT = Norm()
    """)
    _, _, _, makes = file_loops(ast.parse(source), "m", {"nn": "torch.nn", "Block": "pkg.layers.Block",
                                                         "make": "pkg.layers.make"})
    # with the function each construction is in (None: a module-level statement; memo_owners.py),
    # and the parameter a fallback construction stands in for (`norm or Norm()`, `if norm is None:`)
    assert set(makes) == {("m.Tower", "torch.nn.ModuleList", "m.Tower.__init__", None),
                          ("m.Tower", "pkg.layers.Block", "m.Tower.__init__", None),
                          ("m.Tower", "m.Norm", "m.Tower.__init__.inner", None), (None, "m.Tower", "m.build", None),
                          (None, "m.Norm", "m.pick", "norm"), (None, "m.Norm", "m.pick_again", "norm"),
                          (None, "m.Norm", None, None)}


# a diffusion VAE (any module defined under SGLang diffusion's `models/vaes/`, the component
# directory its registry loads VAEs from): its decode runs in the decoding stage, once per
# request, unless a denoising loop calls it
VAE = """
    import torch

    class TiledVAE(torch.nn.Module):
        def forward(self, z: torch.Tensor):
            return self.decode(z)

        def decode(self, z: torch.Tensor):
            sizes = torch.tensor([z.shape[0], z.shape[1]], device=z.device)
            return z * sizes.max().item()
"""

VAE_STAGES = """
    import torch
    from abc import ABC
    from pkg.multimodal_gen.runtime.models.vaes.tiled import TiledVAE

    class StreamingStage(ABC):
        def __init__(self):
            self.vae = TiledVAE()

        def forward(self, batch, server_args):
            latents: torch.Tensor = batch.latents
            for i, t in enumerate(batch.timesteps):
                frames = self.vae.decode(latents)
            return frames
"""


def test_a_vae_runs_once_per_request_unless_the_denoising_loop_calls_it(tmp_path):
    vae_path = "pkg/multimodal_gen/runtime/models/vaes/tiled.py"
    # VALID (left out): nothing per step calls the VAE (the decoding stage's call to a component
    # from the registry does not resolve): its decode is once per request
    run = lint_package(tmp_path, {"multimodal_gen/runtime/models/vaes/tiled.py": VAE}, include_cold=True)
    reasons = {f.site.line: f.cold for f in run.findings if f.site.path == vae_path}
    assert reasons.get(9) and "once per request" in reasons[9], reasons
    # INVALID (per step): a streaming stage decodes inside its denoising loop
    run = lint_package(tmp_path, {"multimodal_gen/runtime/models/vaes/tiled.py": VAE, "stages.py": VAE_STAGES},
                       include_cold=True)
    reasons = {f.site.line: f.cold for f in run.findings if f.site.path == vae_path}
    assert 9 in reasons and reasons[9] is None, reasons
