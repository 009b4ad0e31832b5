"""Small helpers several rules share."""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from .. import provenance as P
from ..imports import dotted
from .base import Fix


def show(node: cst.CSTNode, ctx, limit: int = 40) -> str:
    """Short source text of a node for messages (dotted names are free; anything else pays
    for code generation, which only flagged nodes reach)."""
    text = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if text is None:
        text = ctx.analyzer.module.code_for_node(node)
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def owner_matches(ctx, receiver: cst.BaseExpression | None, owner: str) -> bool:
    """Does `receiver` match the owner glob of a configured `Owner.name` pattern (SYN301,
    SYN302)? By its annotated type (`m: CommonAttentionMetadata`), by its text
    (`common_attn_metadata`), or by the text's last part (`self.common_attn_metadata`)."""
    text = (dotted(receiver) or "") if receiver is not None else ""
    return (fnmatchcase(ctx.types.get(text, ""), owner) or fnmatchcase(text, owner)
            or fnmatchcase(text.rsplit(".", 1)[-1], owner))


def twin_fix(ctx, node: cst.BaseExpression, replace: cst.CSTNode | None = None) -> Fix | None:
    """Swap a device value for its host twin (`mask` -> `mask_cpu`). Safe when the function
    itself made one a copy of the other; unsafe when only the name says they match."""
    twin = ctx.host_twin(node)
    if twin is None:
        return None
    name, proven = twin
    target = replace if replace is not None else node
    return Fix(
        "safe" if proven else "unsafe",
        f"use the host copy `{name}`",
        lambda: (target, cst.Name(name)),
    )


def add_keyword(call: cst.Call, keyword: str, value: str) -> cst.Call:
    """`f(a)` -> `f(a, keyword=value)`, keeping the existing argument formatting."""
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(keyword=cst.Name(keyword), value=cst.parse_expression(value),
                        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                              whitespace_after=cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


def first_input(call, *names: str):
    """The tensor an op works on: the receiver of a method call, else the first positional
    argument or one of the given keywords. Returns (node, where) or None."""
    if call.receiver is not None:
        return call.receiver, call.receiver_where
    if call.args:
        return call.args[0]
    for name in names:
        if name in call.kwargs:
            return call.kwargs[name]
    return None


def python_arg(ctx, node: cst.BaseExpression, where: int) -> str | None:
    """The parameter a stored value is, when only the callers can tell whether it is a Python
    number (`def set_slot(self, req, idx, value): buf[idx] = value`, called with `-1`): a rule
    reports it on the condition that some call in the tree passes a Python value for it
    (`report(..., python_arg=...)`, decided by wholeprogram.py)."""
    if where != P.UNKNOWN or not isinstance(node, cst.Name) or node.value in ctx.tensors_here:
        return None  # under `if torch.is_tensor(value):` it is a tensor, whatever a caller passes
    return node.value if node.value in ctx.params and node.value not in ctx.reassigned else None


def from_callers(arg: str | None) -> str:
    """The end of a store's message when the number is a parameter (`python_arg`)."""
    return f" (`{arg}` is a Python number: a per-step call in the tree passes one)" if arg else ""


def is_python_number(node: cst.BaseExpression, where: int) -> bool:
    """A Python number or bool as a stored value (`0`, `-1`, `1e9`, `True`, `float("-inf")`, a
    name holding one): what torch wraps in a 0-d host tensor and copies."""
    if where != P.PY:
        return False
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value not in ("None",)
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
                         cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return False
    return True


# Index names that hold a selection of rows (a tensor or a list of positions), not one position.
_SELECTION_WORDS = frozenset("indices idxs ids locs slots rows cols positions offsets".split())


def is_index_selection(ctx, index: cst.BaseExpression | None, where: int) -> bool:
    """An index element that selects several positions through `index_put_` / `index`: a list
    literal or comprehension, a tensor (host or device, not a boolean mask), or a name whose
    last word says it holds positions (`indices`, `rows`, `slots`)."""
    if index is None or isinstance(index, cst.Ellipsis) or (isinstance(index, cst.Name) and index.value == "None"):
        return False
    if isinstance(index, (cst.List, cst.ListComp)):
        return True
    if where in (P.HOST, P.TENSOR, P.DEVICE):
        return not ctx.is_bool(index)
    if where in (P.PY, P.UNKNOWN) and isinstance(index, (cst.Name, cst.Attribute)):  # a list or a tensor
        last = (dotted(index) or "").rsplit(".", 1)[-1]
        return last.lower().strip("_").split("_")[-1] in _SELECTION_WORDS and not ctx.is_bool(index)
    return False
