"""A parameter the function copies to the device with `non_blocking=True` is host data from the
function's entry, not only from that line on.

    def merge_dual_encoder_text_and_vision(text_features, vision_embeds, is_multimodal):
        if is_multimodal is None or not bool(is_multimodal.any().item()):
            return text_features
        mm_mask = is_multimodal.to(device=vision_embeds.device, non_blocking=True)

Nobody copies device memory to the device with `non_blocking=True`: the walk already takes the
copied value for a (pinned) host tensor from the copy on (evaluate.py). When the value is a
parameter not rebound on the way (`FunctionContext.param_of` still names it), it is the very
object the callers passed, so the syncs this function's walk reported on it before the copy
(each `RawFinding.param` names it) read host data too: they are withdrawn, the latent ones
as well. A parameter rebound before the copy, on any path, is another value: nothing changes.
"""

from __future__ import annotations


def copied_pinned(ctx, name: str) -> None:
    """`name.to(device, non_blocking=True)` in the function walked by `ctx`."""
    if name not in ctx.params or name in ctx.reassigned or name in ("self", "cls"):
        return
    analyzer = ctx.analyzer
    qualified = f"{analyzer.module_name}.{ctx.qualname}" if analyzer.module_name else ctx.qualname
    key = (qualified, name)
    for table in (analyzer.findings, analyzer.latent):
        if any(f.param == key for f in table):
            table[:] = [f for f in table if f.param != key]
