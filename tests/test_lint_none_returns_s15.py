"""Not a sync, session 15 (branch `s-host6`): a helper whose None says that its argument is no
tensor.

A module-level function whose first statement is `if not isinstance(p, Tensor): return None`,
that returns None nowhere else and otherwise only tuple displays, returns None exactly when `p`
is no tensor. Where its result is None (`if rows is None:`, or after `if rows is not None:
return`), the argument is a Python value: `float(temperature)` there reads no GPU value
(SGLang's `_build_candidate_log_probs` with `_temperature_rows`). INVALID twins: a helper that
may return None otherwise (a bare name returned, a second `return None`, a fall-through), a test
of number types instead of `Tensor`, and a read after the two branches merge.
"""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.none_returns import none_param
from test_lint_scope import lint_package, where

HELPER = """
def _rows(temperature: float | Tensor, *, batch_size: int):
    if not isinstance(temperature, Tensor):
        return None
    if temperature.ndim == 0:
        return temperature.reshape(1), 0
    values = temperature.reshape(batch_size)
    return values, values.stride(0)
"""

OPS = """
import torch
from torch import Tensor
{helper}

def build(logits: Tensor, temperature: float | Tensor):
    rows = _rows(temperature, batch_size=logits.shape[0])
    if rows is None:
        scalar = float(temperature)
        inverse = 1.0 / scalar if scalar > 0.0 else 1.0
    else:
        values, stride = rows
        inverse = 1.0
    return logits * inverse


def build_after(logits: Tensor, temperature: float | Tensor):
    if _rows(temperature, batch_size=1) is not None:
        return logits
    return logits / float(temperature)
"""

MODEL = """
import torch
from torch import nn
from pkg.ops import build, build_after


class Model(nn.Module):
    def forward(self, x: torch.Tensor, t: torch.Tensor):
        return build(x, t) + build_after(x, t)
"""

BUILD_LINE, AFTER_LINE = 17, 28  # `float(temperature)` in build / build_after (with HELPER)


def _run(tmp_path, helper=HELPER, ops=OPS):
    return lint_package(tmp_path, {"ops.py": ops.format(helper=helper), "model.py": MODEL})


def _lines(found) -> set:
    return {line for path, line, code in found if path == "pkg/ops.py" and code == "SYN205"}


def test_the_none_branch_of_a_tensor_testing_helper_reads_a_python_number(tmp_path):
    assert where(_run(tmp_path)) == []


def test_invalid_a_helper_that_returns_a_name(tmp_path):
    helper = HELPER.replace("return values, values.stride(0)", "return values")
    assert _lines(where(_run(tmp_path, helper))) == {BUILD_LINE, AFTER_LINE}


def test_invalid_a_helper_that_returns_none_elsewhere(tmp_path):
    helper = HELPER.replace("        return temperature.reshape(1), 0", "        return None")
    assert _lines(where(_run(tmp_path, helper))) == {BUILD_LINE, AFTER_LINE}


def test_invalid_a_helper_testing_number_types(tmp_path):
    helper = HELPER.replace("not isinstance(temperature, Tensor)", "isinstance(temperature, (int, float))")
    assert _lines(where(_run(tmp_path, helper))) == {BUILD_LINE, AFTER_LINE}


def test_invalid_after_the_branches_merge(tmp_path):
    ops = OPS.replace("values, stride = rows\n", "values, stride = rows\n    inverse = float(temperature)\n")
    ops = ops.replace("        inverse = 1.0\n    return logits * inverse", "    return logits * inverse")
    found = _lines(where(_run(tmp_path, ops=ops)))
    assert found == {BUILD_LINE + 4}


def _param(source: str, name: str):
    return none_param(ast.parse(textwrap.dedent(source)), name)


def test_the_table_itself():
    assert _param(HELPER, "_rows") == ("temperature", 0)
    kw = HELPER.replace("(temperature: float | Tensor, *, batch_size: int)", "(*, batch_size: int, temperature)")
    assert _param(kw, "_rows") == ("temperature", -1)
    falls = HELPER.replace("    return values, values.stride(0)\n", "    print(values)\n")
    assert _param(falls, "_rows") is None  # may fall through: an implicit None
    empty = HELPER.replace("return temperature.reshape(1), 0", "return ()")
    assert _param(empty, "_rows") is None  # an empty tuple is false
    nested = HELPER.replace("    values = temperature", "    def inner():\n        return None\n    values = temperature")
    assert _param(nested, "_rows") == ("temperature", 0)  # a nested function's own return
    assert _param(HELPER, "build") is None
