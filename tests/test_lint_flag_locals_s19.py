"""A local flag cleared first and set only under a test of the function's parameters
(flag_locals.py): a caller's constants can rule its blocks out. vLLM's SM100 attention planner
splits a mixed batch only `if split_prefill_decode and qmax > threshold:`, through the flag
`has_mixed_prefill`; its one caller passes `split_prefill_decode=False`."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

from test_lint_scope import lint_package, where

PLANNER = """
    import torch

    def _plan(lens: torch.Tensor):
        return lens.tolist()

    def plan(qo_lens: torch.Tensor, kv_lens: torch.Tensor, split_prefill_decode=True, threshold=16):
        has_mixed_prefill = False
        qmax = int(threshold)
        SETTING
        if has_mixed_prefill:
            return _plan(qo_lens[:3]), _plan(kv_lens[3:])
        return None
"""

SPLIT = """if split_prefill_decode and qmax > threshold:
            split = qmax - threshold
            has_mixed_prefill = split > 0"""

BUILDER = """
    import torch
    from pkg.planner import plan

    class Builder:
        def build(self, qo: torch.Tensor, kv: torch.Tensor):
            return plan(qo, kv, split_prefill_decode=PASSED)
"""

def _calls(setting: str) -> set:
    """The two call sites that reach the sync: the planner's (its line moves with the setting)
    and the builder's."""
    planner = textwrap.dedent(PLANNER.replace("SETTING", setting)).splitlines()
    line = next(n for n, text in enumerate(planner, 1) if "return _plan(" in text)
    return {("pkg/planner.py", line, "SYN601"), ("pkg/builder.py", 7, "SYN601")}


def _run(tmp_path, passed="False", setting=SPLIT):
    fresh = Path(tempfile.mkdtemp(dir=tmp_path))
    return lint_package(fresh, {"planner.py": PLANNER.replace("SETTING", setting),
                                "builder.py": BUILDER.replace("PASSED", passed)})


def test_a_flag_set_only_under_a_parameter_test_is_ruled_out_by_the_callers_constant(tmp_path):
    # VALID: the one caller passes False; the flag's block never runs
    assert where(_run(tmp_path)) == []
    # VALID: the setting under an `else` of a test the constant decides the other way
    flipped = SPLIT.replace("if split_prefill_decode and qmax > threshold:",
                            "if not split_prefill_decode:\n            pass\n        else:")
    assert where(_run(tmp_path, setting=flipped)) == []


def test_a_caller_that_may_split_or_a_flag_set_elsewhere_keeps_the_syncs(tmp_path):
    # INVALID: the caller passes True (or a value it does not know)
    assert _calls(SPLIT) <= set(where(_run(tmp_path, passed="True")))
    assert _calls(SPLIT) <= set(where(_run(tmp_path, passed="qo.numel() > 4")))
    # INVALID: the flag set under no parameter test, or bound another way
    for setting in ("has_mixed_prefill = qmax > threshold",
                    "if qmax > threshold:\n            has_mixed_prefill = True",
                    "for has_mixed_prefill in (qmax > threshold,):\n            pass",
                    "has_mixed_prefill |= qmax > threshold",
                    SPLIT + "\n        has_mixed_prefill = bool(qmax)",
                    SPLIT + "\n        def mark():\n            nonlocal has_mixed_prefill\n"
                            "            has_mixed_prefill = True\n        mark()"):
        assert _calls(setting) <= set(where(_run(tmp_path, setting=setting))), setting
