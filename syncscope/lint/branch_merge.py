"""What the two arms of an `if` leave behind, for the analyzer's walk (analyzer.py): each arm is
walked from the same starting point, then the names are merged (a name keeps the more device-like
of its two places; which parameter a name still holds the data of; tuple members), and an
`isinstance` test narrows the name it tests in the arm where it holds."""

from __future__ import annotations

import libcst as cst

from . import provenance as P
from .context import FunctionContext
from .imports import dotted
from .none_returns import none_param


def param_sources(ctx: FunctionContext) -> dict[str, str | None]:
    """For each name that holds a parameter's data (the parameter itself, or a value computed
    from it only), that parameter; None for the others of these names."""
    names = set(ctx.params) | set(ctx.derived)  # derived names may be dotted (`self.x`)
    return {name: name if name in ctx.params and name not in ctx.reassigned else ctx.derived.get(name)
            for name in names}


def merge_names(ctx: FunctionContext, before: tuple[set[str], dict[str, str]],
                 taken: tuple[set[str], dict[str, str]], taken_env: dict, bound_before) -> None:
    """After `if`/`else`: a name assigned on either path is reassigned. A name holds a
    parameter's data after the `if` where both paths leave it so, or where the other path
    never binds it (then only this path's value can be read) or binds it to a value that cannot
    sync (`accepted = True` / `accepted = mask[i] != 0`). One arm deriving it from a parameter
    and the other binding it to some other tensor (`m = lens` / `m = torch.arange(...)`) leaves
    a value of either source: derived from neither alone, so what the callers pass for that
    parameter no longer decides its syncs. `taken_env`: the names' places after the taken arm
    (`ctx.env`: after the other); `bound_before`: the names bound before the `if`."""
    taken_reassigned, taken_derived = taken
    else_reassigned, else_derived = ctx.reassigned, ctx.derived

    def harmless(name: str, reassigned: set[str], env: dict) -> bool:
        """This path leaves `name` unbound, or bound to a Python value or host data."""
        if "." not in name and name not in bound_before and name not in reassigned:
            return True
        return name in env and P.known_host(env[name])

    merged = {}
    for name in set(taken_derived) | set(else_derived):
        mine, theirs = taken_derived.get(name), else_derived.get(name)
        if mine == theirs:
            merged[name] = mine
        elif theirs is None and harmless(name, else_reassigned, ctx.env):
            merged[name] = mine
        elif mine is None and harmless(name, taken_reassigned, taken_env):
            merged[name] = theirs
    ctx.reassigned = taken_reassigned | else_reassigned
    ctx.derived = merged


def keep_param_sources(ctx: FunctionContext, before: dict[str, str | None],
                        *branches: tuple[dict[str, str | None], dict[str, P.Place]]) -> None:
    """After `if`/`else`: a name that each branch either left as the parameter's data or made
    host data (`if not isinstance(grid_thw, torch.Tensor): grid_thw = torch.tensor(grid_thw)`)
    is still the parameter's data for a sync: it syncs only where a caller passes a device value.
    Without this the host branch's assignment would cut the value off its parameter, and a
    finding on it would no longer be dropped when every caller passes host data."""
    for name, source in before.items():
        if source is None:
            continue
        kept = [branch_sources.get(name) == source or P.known_host(env.get(name, P.UNKNOWN))
                for branch_sources, env in branches]
        changed = any(branch_sources.get(name) != source for branch_sources, _ in branches)
        if not all(kept) or not changed:
            continue
        if name == source:
            ctx.reassigned.discard(name)
            ctx.derived.pop(name, None)
        else:
            ctx.derived[name] = source


def always_exits(block: cst.BaseSuite) -> bool:
    """Whether an arm of an `if` never falls through to the code after it: its last statement is
    a `return` or a `raise`, or an `if`/`else` both of whose arms end so."""
    body = block.body
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.BaseSmallStatement):  # `if x: return y` on one line
        return isinstance(last, (cst.Return, cst.Raise))
    if isinstance(last, cst.SimpleStatementLine):
        return bool(last.body) and isinstance(last.body[-1], (cst.Return, cst.Raise))
    if isinstance(last, cst.If):
        orelse = last.orelse
        if orelse is None:
            return False
        other = orelse.body if isinstance(orelse, cst.Else) else cst.IndentedBlock(body=[orelse])
        return always_exits(last.body) and always_exits(other)
    return False


def merge_branches(ctx: FunctionContext, other_env: dict[str, P.Place], other_bools: set[str]) -> None:
    """After `if`/`else`: a name may hold either branch's value, so keep the more device-like
    one (a device mask on one path is a sync on that path) and any boolean-mask flag."""
    env = ctx.env
    for name, where in other_env.items():
        mine = env.get(name)
        if mine is None:
            env[name] = where
        elif where != mine:
            env[name] = P.join(mine, where)
    ctx.bools |= other_bools


def merge_parts(ctx: FunctionContext, other_env: dict[str, P.Place],
                 other_parts: dict[str, tuple[P.Place, ...]]) -> None:
    """After `if`/`else`, the members of a tuple a name holds: joined member by member when both
    paths assigned one of the same length. A tuple assigned on one path only still counts when
    the other path never bound the name (`if self._replay is None: self._replay = (...)`: the
    other path reads what an earlier call stored by the same line); a name the other path
    bound to something else loses its members."""
    merged = {}
    for name in ctx.parts.keys() | other_parts.keys():
        mine, theirs = ctx.parts.get(name), other_parts.get(name)
        if mine is not None and theirs is not None:
            if len(mine) == len(theirs):
                merged[name] = tuple(P.join(a, b) for a, b in zip(mine, theirs))
        elif mine is not None and name not in other_env:
            merged[name] = mine
        elif theirs is not None and name not in ctx.env:
            merged[name] = theirs
    ctx.parts = merged


def tensor_check(test: cst.BaseExpression, ctx: FunctionContext) -> tuple[str | None, bool]:
    """`isinstance(x, torch.Tensor)` / `torch.is_tensor(x)` (or its `not`): the name tested and
    whether the test is negated. The branch where the test fails holds a Python value or host
    data, never a tensor (`torch.tensor(dcp_rank, device=...)` in the `else` copies an int).
    So does a call of a helper whose None says its argument is no tensor (none_returns.py), a
    local bound to one, and `is None` / `is not None` of either."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    call = test.expression if negated else test
    if isinstance(call, cst.Comparison) and len(call.comparisons) == 1 and isinstance(call.left, (cst.Name, cst.Call)) \
            and isinstance(call.comparisons[0].operator, (cst.Is, cst.IsNot)) \
            and isinstance(call.comparisons[0].comparator, cst.Name) and call.comparisons[0].comparator.value == "None":
        # `rows is None` for a local a none_returns helper bound, or for its call: `not rows`
        negated = negated != isinstance(call.comparisons[0].operator, cst.Is)
        if isinstance(call.left, cst.Call):  # only a none_returns helper's call: `isinstance(...) is None` is no test
            helper = _helper_test(call.left, ctx) if isinstance(call.left.func, cst.Name) else None
            return (helper, negated) if helper is not None else (None, False)
        call = call.left if call.left.value in ctx.tensor_tests else None
    if isinstance(call, cst.Name) and call.value in ctx.tensor_tests:  # a local holding the test
        checked, was_negated = ctx.tensor_tests[call.value]
        return checked, negated != was_negated
    if not isinstance(call, cst.Call) or not call.args:
        return None, False
    if isinstance(call.func, cst.Name) and (helper := _helper_test(call, ctx)) is not None:
        return helper, negated
    function = dotted(call.func)
    if function == "isinstance" and len(call.args) == 2:
        kind = dotted(call.args[1].value) or ""
        if kind.rsplit(".", 1)[-1] != "Tensor":
            return None, False
    elif ctx.resolve(call.func) != "torch.is_tensor":
        return None, False
    return dotted(call.args[0].value), negated


def _helper_test(call: cst.Call, ctx: FunctionContext) -> str | None:
    """The name a call of a module helper that returns None only for a non-tensor argument
    (none_returns.py) tests: true exactly when that argument is a tensor."""
    found = none_param(getattr(ctx.analyzer, "file_tree", None), call.func.value)
    if found is None or any(arg.star for arg in call.args):
        return None
    param, position = found
    positional = [arg for arg in call.args if arg.keyword is None]
    arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param), None)
    if arg is None and 0 <= position < len(positional):
        arg = positional[position].value
    return arg.value if isinstance(arg, cst.Name) else None


def narrow_plain(ctx: FunctionContext, name: str | None) -> None:
    """Where `isinstance(name, <plain types>)` holds, `name` is a Python value: no tensor, so not
    on the device (`calculate_timestamps` in vLLM: `if not isinstance(indices, list): indices =
    indices.tolist()`, then `int(i)` for its items). A list's items are not known to be Python
    numbers (a list of tensors is a list), so they stay unknown, never assumed host."""
    if name is None:
        return
    ctx.env[name] = P.PY
    ctx.elements[name] = P.UNKNOWN
