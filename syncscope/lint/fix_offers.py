"""The seed fixes (issue 27), as the rules offer them: each function returns an `Offer`, a fix
(safe or unsafe, Ruff's convention) or the reason there is none, which the finding's message
carries either way.

- `read_fix`: `.item()` / `.tolist()` / `int()` / `.cpu()` / `.numpy()` of a device value ->
  the same read on its host twin (fix_twins.py finds it);
- `mask_fix`: `t[mask]` -> `t[mask_cpu]`; when `mask` has no twin but every use of it indexes
  (`spec = spec_mask` in one branch, `spec = uploaded_indices` in the other), the binding that
  aliases a device mask takes its host twin instead;
- `output_size_fix`: `repeat_interleave(x, reps)` -> `..., output_size=int(reps_cpu.sum())`;
- `bound_fix`: a syncing `*_cpu` property -> the host upper bound the class offers
  (`upper-bounds` in the config), safe only where the value is used as a bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .fix_twins import Hosted, facts_for, host_form, parenthesized
from .fix_facts import code
from .imports import dotted
from .rules.base import Fix


@dataclass
class Offer:
    fix: Fix | None = None
    why_not: str | None = None  # no fix, and why (None: nothing to say)


def _describe(hosted: Hosted) -> str:
    names = ", ".join(f"`{t}`" for t in dict.fromkeys(hosted.twins))
    return f"use the host copy {names}" + (f" ({hosted.why})" if hosted.why else "")


def _no_twin(ctx, node) -> Offer:
    if facts_for(ctx) is None and getattr(ctx, "node", None) is not None:
        return Offer(why_not="the function is too large to check for a host copy")
    return Offer(why_not=f"no host copy of `{_short(node)}` in scope")


def _short(node: cst.CSTNode) -> str:
    text = code(node)
    return text if len(text) <= 40 else text[:37] + "..."


def read_fix(ctx, value: cst.BaseExpression, call: cst.Call | None = None, method: str | None = None) -> Offer:
    """The same read on the host twin. `call`/`method`: the whole `value.cpu()` /
    `value.numpy()` call, which becomes the twin itself (the read gives a host tensor or array
    already); otherwise `value` is swapped in place (`x.item()` -> `x_cpu.item()`)."""
    hosted = host_form(ctx, value)
    if hosted is None:
        return _no_twin(ctx, value)
    if isinstance(hosted, str):
        return Offer(why_not=hosted)
    if method == "cpu" and hosted.numpy:
        return Offer(why_not="the host copy is a numpy array and `.cpu()` gives a tensor")
    if hosted.untyped:
        return _maybe_list(hosted)
    if method in ("cpu", "numpy") and call is not None:
        if method == "numpy" and not hosted.numpy:
            target, replacement = value, parenthesized(hosted.node)  # `x_cpu.numpy()`
        else:
            shared = _shares_result(ctx, call)
            if shared:
                return Offer(why_not=shared)
            target, replacement = call, hosted.node
        applicability = hosted.applicability
        title = _describe(hosted)
        if method == "cpu" and _returned(ctx, call):
            applicability = "unsafe"
            title += " (the caller gets the host copy itself, not a new one)"
        return Offer(Fix(applicability, title, lambda: (target, replacement)))
    replacement = hosted.node
    if _is_receiver(ctx, value):
        replacement = parenthesized(replacement)
    return Offer(Fix(hosted.applicability, _describe(hosted), lambda: (value, replacement)))


def _maybe_list(hosted: Hosted) -> Offer:
    return Offer(why_not=f"nothing in this function shows that `{hosted.untyped[0]}` is a tensor (it may be a list)")


def mask_fix(ctx, value: cst.BaseExpression) -> Offer:
    """`t[mask]` with a device mask -> the host mask."""
    direct = host_form(ctx, value)
    if isinstance(direct, Hosted):
        return Offer(Fix(direct.applicability, _describe(direct), lambda: (value, direct.node)))
    if isinstance(direct, str) or not isinstance(value, cst.Name):
        return Offer(why_not=direct) if isinstance(direct, str) else _no_twin(ctx, value)
    return _binding_fix(ctx, value)


def _binding_fix(ctx, value: cst.Name) -> Offer:
    """`spec = spec_mask` (one branch) and `x[spec]` (every use an index): the binding takes
    `spec_mask_cpu`. Unsafe: the other bindings, if any, are left as they are."""
    facts = facts_for(ctx)
    name = value.value
    if facts is None or name in facts.params or not facts.bindings.get(name):
        return _no_twin(ctx, value)
    for read in facts.reads.get(name, ()):
        if not _indexes_with(facts, read):
            return Offer(why_not=f"no host copy of `{name}` in scope, and `{name}` is used other than as an index")
    if any(facts.writes.get(alias) for alias in facts.aliases(name)):
        return Offer(why_not=f"`{name}` is written in place")
    pairs, reasons = [], []
    for binding in facts.bindings[name]:
        if binding.value is None:
            continue
        from .fix_twins import HostBuilder, Refused, _NoTwin

        try:
            hosted = HostBuilder(ctx, facts, binding.value).build(binding.value)
        except Refused as refused:
            reasons.append(str(refused))
            continue
        except _NoTwin:
            continue
        pairs.append((binding.value, hosted))
    if not pairs:
        return Offer(why_not=reasons[0]) if reasons else _no_twin(ctx, value)
    shown = ", ".join(f"`{code(v)}` -> `{code(h.node)}`" for v, h in pairs)
    title = f"bind `{name}` to the host mask ({shown}): it is only used to index"
    return Offer(Fix("unsafe", title, lambda: [(v, h.node) for v, h in pairs]))


def output_size_fix(ctx, call: cst.Call, repeats: cst.BaseExpression) -> Offer:
    hosted = host_form(ctx, repeats)
    if hosted is None:
        total = _host_total(ctx, repeats)
        if total is None:
            return _no_twin(ctx, repeats)
        return Offer(Fix("safe", f"pass `output_size={total}` (`{code(repeats)}` is a copy of that host data, made here)",
                         lambda: (call, add_keyword(call, "output_size", total))))
    if isinstance(hosted, str):
        return Offer(why_not=hosted)
    if hosted.untyped:
        return _maybe_list(hosted)
    total = f"int({code(parenthesized(hosted.node))}.sum())"
    title = f"pass `output_size={total}`" + (f" ({hosted.why})" if hosted.why else "")
    return Offer(Fix(hosted.applicability, title, lambda: (call, add_keyword(call, "output_size", total))))


def add_keyword(call: cst.Call, keyword: str, value: str) -> cst.Call:
    """`f(a)` -> `f(a, keyword=value)`. A call laid out one argument per line with a trailing
    comma gets the new argument on a line of its own, the comments staying where they were."""
    from .rules._common import add_keyword as inline

    args = list(call.args)
    last = args[-1].comma if args else None
    if not (isinstance(last, cst.Comma) and isinstance(last.whitespace_after, cst.ParenthesizedWhitespace)):
        return inline(call, keyword, value)
    closing = last.whitespace_after  # the last argument's line end (its comment) and the `)` line
    before = args[-2].comma.whitespace_after if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    if not isinstance(before, cst.ParenthesizedWhitespace):
        return inline(call, keyword, value)
    args[-1] = args[-1].with_changes(comma=last.with_changes(
        whitespace_after=closing.with_changes(indent=before.indent, last_line=before.last_line)))
    args.append(cst.Arg(
        keyword=cst.Name(keyword), value=cst.parse_expression(value),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=closing.indent, last_line=closing.last_line)),
    ))
    return call.with_changes(args=args)


def _host_total(ctx, repeats: cst.BaseExpression) -> str | None:
    """`reps = torch.tensor(lens, device=d)` (or `lens_t.to(d)`) with host `lens` in scope: the
    total the output size needs is on the host already (`sum(lens)`). None otherwise."""
    from . import provenance as P
    from .fix_twins import _written, copy_source

    facts = facts_for(ctx)
    if facts is None or not isinstance(repeats, cst.Name):
        return None
    binding = facts.bound_once(repeats.value)
    if binding is None or not isinstance(binding.value, cst.Call) or binding.index > facts.position(repeats):
        return None
    made = binding.value
    source = None
    name = ctx.resolve(made.func) or dotted(made.func) or ""
    if name in ("torch.tensor", "torch.as_tensor") and made.args and made.args[0].keyword is None \
            and any(a.keyword is not None and a.keyword.value == "device" for a in made.args):
        source = made.args[0].value
    elif copy_source(made, to_host=False) is not None:
        source = copy_source(made, to_host=False)
    host = dotted(source) if source is not None else None
    if host is None or facts.times_bound(host) > 1 or _written(facts, host, -1) \
            or _written(facts, repeats.value, binding.index):
        return None
    where = ctx.env.get(host)
    if where == P.PY or _annotated_list(facts, host):
        return f"sum({host})"
    if where == P.HOST:
        return f"int({host}.sum())"
    return None


def _annotated_list(facts, name: str) -> bool:
    fn = facts.node
    for param in [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]:
        if param.name.value == name and param.annotation is not None:
            return code(param.annotation.annotation).split("[", 1)[0] in ("list", "List", "tuple", "Tuple", "Sequence")
    return False


BOUND_USES = frozenset({"max", "amax"})


def bound_fix(ctx, node: cst.Attribute) -> Offer:
    """`meta.seq_lens_cpu` -> `meta.seq_lens_cpu_upper_bound`."""
    bound = ctx.config.upper_bounds.get(node.attr.value)
    if not bound:
        return Offer()
    bound = bound[0]
    replacement = node.attr.with_changes(value=bound)
    use = _non_bound_use(ctx, node)
    if use is None:
        return Offer(Fix("safe", f"read the host upper bound `{bound}` (used as a bound here)",
                         lambda: (node.attr, replacement)))
    return Offer(Fix("unsafe", f"read the host upper bound `{bound}` (used as data in `{use}`; the "
                     "bound is larger than the true value when drafts were rejected)",
                     lambda: (node.attr, replacement)))


def _non_bound_use(ctx, node: cst.Attribute) -> str | None:
    """None when the value is only used as a bound (`x.max()`, `max(x)`, a local whose every
    use is one); else the text of a use that is not."""
    facts = facts_for(ctx)
    if facts is None:
        return code(node)
    current = node
    parent = facts.parent_of(current)
    while isinstance(parent, cst.IfExp) or (isinstance(parent, cst.Call) and _to_int(parent)):
        current, parent = parent, facts.parent_of(parent)
        if isinstance(parent, cst.Arg):
            current, parent = parent, facts.parent_of(parent)
    if _is_bound_use(facts, current):
        return None
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        if len(targets) == 1 and isinstance(targets[0], cst.Name) and facts.times_bound(targets[0].value) == 1:
            for read in facts.reads.get(targets[0].value, ()):
                if not _is_bound_use(facts, read):
                    return _short(_statement_part(facts, read))
            return None
    return _short(_statement_part(facts, current))


def _is_bound_use(facts, node: cst.CSTNode) -> bool:
    parent = facts.parent_of(node)
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in BOUND_USES:
        return isinstance(facts.parent_of(parent), cst.Call)
    if isinstance(parent, cst.Arg):
        call = facts.parent_of(parent)
        return isinstance(call, cst.Call) and (dotted(call.func) or "").rsplit(".", 1)[-1] in BOUND_USES \
            and len(call.args) == 1
    return False


def _to_int(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value in ("int", "float")


def _statement_part(facts, node: cst.CSTNode) -> cst.CSTNode:
    """The expression around a use, up to its statement (for messages)."""
    current = node
    while True:
        parent = facts.parent_of(current)
        if parent is None or isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement,
                                                 cst.SimpleStatementLine, cst.Arg)):
            return current
        current = parent


def _indexes_with(facts, read: cst.CSTNode) -> bool:
    """Is this read of a name the whole index of a subscript that is read (`x[m]`, `x[m, :k]`)?"""
    index = facts.parent_of(read)
    element = facts.parent_of(index) if isinstance(index, cst.Index) else None
    subscript = facts.parent_of(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript):
        return False
    holder = facts.parent_of(subscript)
    if isinstance(holder, (cst.AssignTarget, cst.AugAssign, cst.Del)):
        return False
    return not (isinstance(holder, (cst.Element,)) and isinstance(facts.parent_of(holder), (cst.Tuple, cst.List))
                and isinstance(facts.parent_of(facts.parent_of(holder)), cst.AssignTarget))


def _shares_result(ctx, call: cst.Call) -> str | None:
    """`y = x.cpu()` -> `y = x_cpu`: y is then the host copy itself; refuse when y is written."""
    facts = facts_for(ctx)
    parent = facts.parent_of(call) if facts else None
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        for target in targets:
            name = dotted(target)
            if name is None:
                return "the result is unpacked; it would share memory with the host copy"
            for alias in facts.aliases(name):
                if facts.writes.get(alias):
                    return f"`{name}` is written (`{facts.writes[alias][0].text}`) and would change the host copy"
    return None


def _returned(ctx, call: cst.Call) -> bool:
    facts = facts_for(ctx)
    return facts is not None and isinstance(facts.parent_of(call), cst.Return)


def _is_receiver(ctx, node: cst.CSTNode) -> bool:
    facts = facts_for(ctx)
    parent = facts.parent_of(node) if facts else None
    return isinstance(parent, cst.Attribute) and parent.value is node
