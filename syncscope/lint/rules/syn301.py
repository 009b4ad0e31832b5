from __future__ import annotations

from ..imports import dotted
from ..fix_offers import bound_fix
from ._common import owner_matches
from .base import Rule


class SyncingPropertyRead(Rule):
    """A property that looks like a plain host field but copies from the device on every read.
    vLLM's `CommonAttentionMetadata.seq_lens_cpu` was one (seed PR 40654). Patterns come from
    `syncing-properties` in the config, `Type.attr` (matched against a parameter's annotation)
    or `name.attr` (matched against the receiver's text, globs allowed)."""

    code = "SYN301"
    name = "syncing-property-read"
    summary = "Reading a property that copies from the device (e.g. `seq_lens_cpu`)"
    fix_applicability = "sometimes"
    ATTRIBUTES = True

    VALID = [
        "def build(common_attn_metadata):\n    return common_attn_metadata.seq_lens_cpu_upper_bound\n",
        "def build(common_attn_metadata):\n    common_attn_metadata.seq_lens_cpu = None\n",
        "def build(batch):\n    return batch.seq_lens_cpu\n",  # not attention metadata
    ]
    INVALID = [
        "def build(self, common_attn_metadata):\n    return common_attn_metadata.seq_lens_cpu.max()\n",
        "def build(self, m: CommonAttentionMetadata):\n    return m.num_computed_tokens_cpu\n",
        "def build(self):\n    return self.common_attn_metadata.seq_lens_cpu\n",
    ]

    def __init__(self, config):
        super().__init__(config)
        self.patterns = [p.rsplit(".", 1) for p in config.syncing_properties if "." in p]

    def on_attribute(self, ctx, node, receiver_where):
        attr = node.attr.value
        for owner, name in self.patterns:
            if name == attr and owner_matches(ctx, node.value, owner):
                offer = bound_fix(ctx, node)
                ctx.report(
                    self, node,
                    f"`{dotted(node.value) or '...'}.{attr}` is a property that copies from the device on "
                    "every read (a hidden sync; use a host-computed value)",
                    anchor="." + attr, fix=offer.fix, no_fix=offer.why_not,
                )
                return
