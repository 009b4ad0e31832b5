"""A memo dict that a per-call context object carries for a long-lived owner (memo_carriers.py).

SGLang 0.5.23's Cosmos3 multiview DiT builds a `MultiviewAttentionContext(layout,
self._multiview_mask_cache, ...)` on every forward, and `get_multiview_attention_plan(context,
...)` fills `context.mask_cache[key]` on a miss only: the block-sparsity plan (a blocking copy)
is built once per key, the dict being the module's own, made once in `__init__`. Readers judged
its 7 default findings "R, per request" 10 times. VALID: every construction hands the field a
module's own field, by position or by keyword, and the fill (and the sync it calls) is cold.
INVALID twins: the field left to its default (a fresh dict per context), a caller's parameter
handed in, the owner re-making the dict in `forward`, the class handed on as a factory or built
through `PlanContext.make(...)`, a hit that does not return, and the sync stays per step.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

CONTEXT = """
from dataclasses import dataclass, field

import torch


@dataclass
class PlanContext:
    layout: tuple
    mask_cache: dict = field(default_factory=dict)


def build_plan(lengths: tuple, device: torch.device):
    table = torch.tensor(lengths, device=device)
    return int(table.max().item())


def get_plan(context: PlanContext, *, und_len: int, device: torch.device):
    key = (context.layout, und_len)
    cached = context.mask_cache.get(key)
    if cached is not None:
{hit}
    plan = build_plan(context.layout, device)
    context.mask_cache[key] = plan
    return plan
"""

MODEL = """
import torch
from torch import nn

from pkg.context import PlanContext, get_plan


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self._mask_cache = {{}}

    def forward(self, x: torch.Tensor, layout: tuple, cache: dict):
{remake}        context = {build}
        plan = get_plan(context, und_len=x.shape[0], device=x.device)
        return x * plan
"""

SYNC = ("pkg/context.py", 15, "SYN201")
PLAN_CALL = ("pkg/context.py", 23, "SYN602")


def package(build="PlanContext(layout, self._mask_cache)", remake="", hit="        return cached"):
    return {"context.py": CONTEXT.format(hit=hit), "model.py": MODEL.format(build=build, remake=remake)}


def test_a_module_dict_handed_by_position_fills_once_per_key(tmp_path):
    run = lint_package(tmp_path, package(), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) in (SYNC, PLAN_CALL)]
    assert found and all(f.cold for f in found)


def test_a_module_dict_handed_by_keyword_fills_once_per_key(tmp_path):
    run = lint_package(tmp_path, package(build="PlanContext(layout, mask_cache=self._mask_cache)"), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) in (SYNC, PLAN_CALL)]
    assert found and all(f.cold for f in found)


def test_the_default_dict_is_a_fresh_one_per_context(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(build="PlanContext(layout)")))


def test_a_callers_dict_may_be_a_fresh_one(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(build="PlanContext(layout, cache)")))


def test_an_owner_that_remakes_its_dict_every_call_keeps_the_sync(tmp_path):
    remake = "        self._mask_cache = {}\n"
    assert SYNC in where(lint_package(tmp_path, package(remake=remake)))


def test_a_class_handed_on_as_a_factory_keeps_the_sync(tmp_path):
    files = package()
    files["registry.py"] = "from pkg.context import PlanContext\n\nFACTORIES = dict(plan=PlanContext)\n"
    assert SYNC in where(lint_package(tmp_path, files))


def test_a_hit_that_does_not_return_keeps_the_sync(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(hit="        pass")))


def test_a_class_built_another_way_keeps_the_sync(tmp_path):
    files = package()
    files["registry.py"] = "from pkg.context import PlanContext\n\n\ndef fresh(layout):\n    return PlanContext.make(layout)\n"
    assert SYNC in where(lint_package(tmp_path, files))
