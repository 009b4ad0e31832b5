from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ..fix_offers import output_size_fix
from ._common import show
from .base import Invalid, Rule


class RepeatInterleaveWithoutOutputSize(Rule):
    """`repeat_interleave` with tensor repeats and no `output_size` reads the repeats back to
    size its output (two syncs per call, measured)."""

    code = "SYN104"
    name = "repeat-interleave-without-output-size"
    summary = "`repeat_interleave` with tensor repeats and no `output_size`"
    fix_applicability = "sometimes"
    FUNCTIONS = frozenset({"torch.repeat_interleave"})
    METHODS = frozenset({"repeat_interleave"})
    # repeats read from a field of `self` make a finding conditional (`needs_device` below); it
    # is a sync for the callers too, wherever the tree keeps that field on the device
    ROOT_ON_CONDITION = True

    VALID = [
        "import torch\ndef f(x: torch.Tensor, reps: torch.Tensor, n: int):\n    return torch.repeat_interleave(x, reps, output_size=n)\n",
        "import torch\ndef f(x: torch.Tensor, heads: int):\n    return x.repeat_interleave(heads, dim=1)\n",
        "import torch\ndef f(x_cpu: torch.Tensor, reps_cpu: torch.Tensor):\n    return torch.repeat_interleave(x_cpu, reps_cpu)\n",
        "def f(self, k, n):\n    return k.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)\n",
        # a count from the configuration, kept in a field the tree never puts on the device
        "import torch\nclass B:\n    def __init__(self, spec):\n        self.num_draft = spec.num_draft\n"
        "    def build(self, pages: torch.Tensor):\n        return torch.repeat_interleave(pages, repeats=self.num_draft, dim=0)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor, reps: torch.Tensor):\n    return torch.repeat_interleave(x, reps)\n",
        "import torch\ndef f(query_lens: torch.Tensor):\n    return torch.repeat_interleave(query_lens)\n",
        # another object's field: reported whatever the tree keeps in it (it may be declared a
        # tensor in a module this file does not see), here one the tree keeps on the device
        "import torch\nclass Meta:\n    def __init__(self, lens, d):\n        self.reps = torch.tensor(lens, device=d)\n"
        "def build(meta, pages: torch.Tensor):\n    return torch.repeat_interleave(pages, meta.reps, dim=0)\n",
        "import torch\ndef f(common, spec_mask):\n    query_lens = common.query_start_loc[1:] - common.query_start_loc[:-1]\n"
        "    return torch.repeat_interleave(spec_mask, query_lens)\n",
        Invalid(
            "import torch\ndef f(x: torch.Tensor, reps: torch.Tensor, reps_cpu: torch.Tensor):\n"
            "    return x.repeat_interleave(reps, dim=0)\n",
            fixed="import torch\ndef f(x: torch.Tensor, reps: torch.Tensor, reps_cpu: torch.Tensor):\n"
            "    return x.repeat_interleave(reps, dim=0, output_size=int(reps_cpu.sum()))\n",
        ),
    ]

    def on_call(self, ctx, call):
        if "output_size" in call.kwargs:
            return
        if call.receiver is not None:
            source, repeats = (call.receiver, call.receiver_where), (call.args[0] if call.args else call.kwargs.get("repeats"))
        elif len(call.args) >= 2:
            source, repeats = call.args[0], call.args[1]
        elif len(call.args) == 1 and "repeats" not in call.kwargs:
            source, repeats = None, call.args[0]  # torch.repeat_interleave(repeats)
        else:
            source, repeats = call.args[0] if call.args else None, call.kwargs.get("repeats")
        if repeats is None or P.known_host(repeats[1]):
            return
        # the method form `x.repeat_interleave(n_heads // n_kv, dim=1)` usually repeats by an
        # int: ask for evidence of a tensor there; the function form with two arguments is used
        # for tensor repeats, so there not knowing is enough
        needs = None
        if not P.is_tensor_like(repeats[1]):
            if call.receiver is not None or source is None:
                return
            # ... except a field of the object read as it is (`repeats=self.num_draft_tokens`,
            # which the class does not fill with a tensor itself): engines keep counts from their
            # configuration in such fields, so, as for `if self.flag:`, the tree decides (a
            # finding only if it keeps that attribute on the device). Another object's field
            # (`verify_input.reps`) may be declared a tensor in another module: reported as before
            node = repeats[0]
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
                needs = ctx.device_field(node)
        if source is not None and source[1] == P.HOST:
            return
        offer = output_size_fix(ctx, call.node, repeats[0])
        ctx.report(
            self, call.node,
            f"`{show(call.node.func, ctx)}` with tensor repeats `{show(repeats[0], ctx)}` and no "
            "`output_size` reads the repeats back to size the output (pass `output_size=`)",
            anchor="repeat_interleave", subject=repeats[0], fix=offer.fix, no_fix=offer.why_not,
            needs_device=needs,
        )
