"""A parameter the function states is host data, by copying it to the device with
`non_blocking=True` or by asserting it is on the CPU, is host data from the function's entry,
not only from that line on.

    def merge_dual_encoder_text_and_vision(text_features, vision_embeds, is_multimodal):
        if is_multimodal is None or not bool(is_multimodal.any().item()):
            return text_features
        mm_mask = is_multimodal.to(device=vision_embeds.device, non_blocking=True)

    def get_num_new_pages(seq_lens, page_size, prefix_lens=None, decode=False):
        cpu_device = torch.device("cpu")
        assert seq_lens.device == cpu_device

Nobody copies device memory to the device with `non_blocking=True`: the walk already takes the
copied value for a (pinned) host tensor from the copy on (evaluate.py). An assert that a tensor
is on the CPU (`x.is_cpu`, `not x.is_cuda`, `x.device.type == "cpu"`, `x.device == <a host
device>`: place_tests.host_test, devices.device_where) makes it host data after the assert.
When the value is a parameter not rebound on the way (`FunctionContext.param_of` still names
it), it is the very object the callers passed, so the syncs this function's walk reported on it
before that line (each `RawFinding.param` names it) read host data too: they are withdrawn, the
latent ones as well. A parameter rebound before the copy, on any path, is another value: nothing
changes.
"""

from __future__ import annotations

import libcst as cst

from . import provenance as P
from .devices import device_where
from .imports import dotted
from .place_tests import host_test


def stated_host(ctx, name: str) -> None:
    """`name` is stated host data here (a pinned copy of it, an assert): withdraw the walk's
    findings on it when it is an unrebound parameter."""
    if name not in ctx.params or name in ctx.reassigned or name in ("self", "cls"):
        return
    analyzer = ctx.analyzer
    qualified = f"{analyzer.module_name}.{ctx.qualname}" if analyzer.module_name else ctx.qualname
    key = (qualified, name)
    for table in (analyzer.findings, analyzer.latent):
        if any(f.param == key for f in table):
            table[:] = [f for f in table if f.param != key]


def asserted_host(test: cst.BaseExpression, ctx) -> None:
    """`assert x.is_cpu` / `assert x.device == cpu_device`: x is host data after the assert
    (and, for a parameter, before it: `stated_host`). Each operand of an `and` counts."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        asserted_host(test.left, ctx)
        asserted_host(test.right, ctx)
        return
    name, host_if_true = host_test(test)
    if name is None:
        name, host_if_true = _device_equal(test, ctx), True
    if name is None or not host_if_true or not P.device_unknown(ctx.env.get(name, P.PY)):
        return
    ctx.env[name] = P.HOST
    stated_host(ctx, name)


def _device_equal(test: cst.BaseExpression, ctx) -> str | None:
    """`x.device == torch.device("cpu")`, `x.device == cpu_device`: x, when the device is the host."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if not (isinstance(left, cst.Attribute) and left.attr.value == "device"):
        left, right = right, left
    if not (isinstance(left, cst.Attribute) and left.attr.value == "device"):
        return None
    return dotted(left.value) if device_where(right, ctx) == P.HOST else None
