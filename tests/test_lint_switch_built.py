"""A class built only on lines cold for an off switch has cold methods (switch_built.py).

SGLang 0.5.23's Cosmos3 sequence-parallel check: `SpCheck()` is built only under `if
envs.SGLANG_DIFFUSION_DEBUG_COSMOS3_MULTIVIEW_SP_CHECK:` (a debug switch), and handed as a
parameter to the layer helper that calls `sp_check.compare(...)` under `if sp_check is not None:`.
The call's line is not cold, so the walk entered `compare`, whose `torch.equal` and `float()`
counted per step (the readers judged 10 findings `R, debug`). VALID: the only construction is
under a debug switch, or under an environment switch the tree declares off. INVALID twins: a
second construction on a line that runs, a subclass, the class handed on as a factory, a
switch that is on by default, a construction `mod.Check()` through its module, and a
classmethod that builds one called where it runs.
"""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

from lint_helpers import env_module

ENVIRON = env_module("PKG_TALLY")

CHECK = """
    import torch


    class Check:
        identical: int = 0

        def compare(self, mine: torch.Tensor, out: torch.Tensor) -> None:
            self.identical += int(torch.equal(mine, out))
{extra}"""

MODEL = """
    import os
    from typing import Optional

    import torch
    from torch import nn

    import pkg.check as checks
    from pkg.check import Check
    from pkg.environ import envs


    def _layer(x: torch.Tensor, check: Optional[Check]) -> torch.Tensor:
        out = x * 2
        if check is not None:
            check.compare(x, out)
        return out


    class Model(nn.Module):
        def forward(self, x: torch.Tensor):
            check = None
            if {switch}:
                check = Check()
{more}            return _layer(x, check)
"""

DEBUG = 'os.environ.get("PKG_DEBUG_TALLY")'
SYNC = ("pkg/check.py", 9)


def flagged(tmp_path, switch=DEBUG, more="", extra=""):
    files = {"environ.py": ENVIRON, "check.py": CHECK.format(extra=extra),
             "model.py": MODEL.format(switch=switch, more=more)}
    return lines(lint_package(tmp_path, files), SYNC[0])


def test_a_class_built_only_under_a_debug_switch_has_cold_methods(tmp_path):
    assert flagged(tmp_path) == []


def test_a_class_built_only_under_an_off_environment_switch_has_cold_methods(tmp_path):
    assert flagged(tmp_path, switch="envs.PKG_TALLY.get()") == []


def test_a_switch_on_by_default_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, switch="envs.PKG_OTHER.get()") == [SYNC[1]]


def test_a_construction_that_runs_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, more="            check = Check()\n") == [SYNC[1]]


def test_a_construction_through_the_module_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, more="            check = checks.Check()\n") == [SYNC[1]]


def test_a_subclass_keeps_the_sync(tmp_path):
    extra = "\n\n    class LoudCheck(Check):\n        pass\n"
    assert flagged(tmp_path, extra=extra) == [SYNC[1]]


def test_a_class_handed_on_as_a_factory_keeps_the_sync(tmp_path):
    extra = "\n\n    FACTORY = Check\n"
    assert flagged(tmp_path, extra=extra) == [SYNC[1]]


def test_a_classmethod_called_where_it_runs_keeps_the_sync(tmp_path):
    extra = "\n        @classmethod\n        def make(cls):\n            return cls()\n"
    assert flagged(tmp_path, extra=extra, more="            check = Check.make()\n") == [SYNC[1]]
