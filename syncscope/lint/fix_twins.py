"""Host twins: the host copy of a device value that a function already holds, for `--fix`.

The seed fixes are mechanical once such a copy exists (`mask` -> `mask_cpu`, `output_size=` from
`reps_cpu`). A twin is found by the configured `twin-suffixes`, as a local or a parameter
(`mask_cpu`), an attribute of the same object (`self.lens` -> `self.lens_cpu`, `common.qsl` ->
`common.qsl_cpu` when the function or its class shows that attribute), and through expressions
(`~mask` -> `~mask_cpu`, `lens > 0` -> `lens_cpu > 0`, a local computed from device values ->
the same computation on their twins).

Safe when the function itself made one a copy of the other (`mask_cpu = mask.cpu()`,
`mask = mask_cpu.to(dev, non_blocking=True)`); unsafe when only the names say they match. No fix
(with the reason) when the twin cannot be trusted: it is a copy of something else (a different
object, or a slice: another shape), it is the device value itself (an alias), either one is
rebound, or either one (or an alias or view of it) is written in place after the twin was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from . import provenance as P
from .fix_facts import FunctionFacts, code, collect, _views
from .imports import dotted

PLAIN_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda"})
# methods that keep "the same values, on the same side": host them by hosting the receiver
PASS_THROUGH_METHODS = frozenset({"long", "int", "bool", "float", "clone", "contiguous", "sum", "max", "min"})
NUMPY_SUFFIXES = ("_np", "_numpy")
_INLINE_DEPTH = 3
_facts_cache: list = []  # [(function node, facts)]: the last function asked about


MAX_STATEMENTS = 3000  # larger functions (generated code) are not walked again for a fix


def facts_for(ctx) -> FunctionFacts | None:
    """The function's facts, computed once per function; None for a function too large (the
    walk visits every node: a 50,000-line function would cost seconds for one finding)."""
    fn = getattr(ctx, "node", None)
    if fn is None:
        return None
    if _facts_cache and _facts_cache[0][0] is fn:
        return _facts_cache[0][1]
    facts = None if too_large(fn) else collect(fn)
    _facts_cache[:] = [(fn, facts)]
    return facts


def too_large(fn: cst.FunctionDef) -> bool:
    count, todo = 0, [fn.body]
    while todo:
        block = todo.pop()
        body = getattr(block, "body", ())
        if not isinstance(body, (list, tuple)):
            body = [body]
        for stmt in body:
            count += 1
            if count > MAX_STATEMENTS:
                return True
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, cst.BaseSuite) or isinstance(inner, (cst.Else, cst.Finally, cst.If)):
                    todo.append(inner)
            todo.extend(getattr(stmt, "handlers", ()))
    return False


@dataclass
class Hosted:
    """A host expression for a device one, and how far it can be trusted."""

    node: cst.BaseExpression
    proven: bool
    why: str  # why unsafe (empty when proven)
    numpy: bool  # a numpy twin was used (no `.cpu()`, no `.numpy()` on it)
    twins: list[str] = field(default_factory=list)  # host names used, for the fix's title
    untyped: list[str] = field(default_factory=list)  # twins nothing shows to be tensors (maybe lists)

    @property
    def applicability(self) -> str:
        return "safe" if self.proven else "unsafe"


class Refused(Exception):
    """A twin exists but cannot be trusted; the message says why."""


class _NoTwin(Exception):
    """Some device part of the expression has no host copy in scope."""


class HostBuilder:
    """Rebuilds an expression with every device leaf swapped for its twin."""

    def __init__(self, ctx, facts: FunctionFacts, use_node: cst.CSTNode) -> None:
        self.ctx = ctx
        self.facts = facts
        self.use_node = use_node
        self.use = facts.position(use_node)  # position of the use: a twin must be made before it
        self.proven = True
        self.reasons: list[str] = []
        self.twins: list[str] = []
        self.numpy = False
        self.untyped: list[str] = []
        self.missing: str | None = None

    def build(self, node: cst.BaseExpression) -> Hosted:
        """Raises Refused (a twin that cannot be trusted) or _NoTwin."""
        result = self._host(node, 0)
        if not self.twins:
            raise _NoTwin()
        why = "" if self.proven else "; ".join(dict.fromkeys(self.reasons))
        return Hosted(result, self.proven, why, self.numpy, self.twins, self.untyped)

    # -- leaves --------------------------------------------------------------------------
    def _is_host(self, name: str) -> bool:
        where = self.ctx.env.get(name)
        last = name.rsplit(".", 1)[-1]
        return where in (P.PY, P.HOST) or self.ctx.config.name_hints.where(last) == P.HOST

    def _host(self, node: cst.BaseExpression, depth: int) -> cst.BaseExpression:
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.Ellipsis)):
            return node
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None") or self._is_host(node.value):
                return node
            return self._name(node, depth)
        if isinstance(node, cst.Attribute):
            if node.attr.value in PLAIN_ATTRIBUTES:
                return node
            name = dotted(node)
            if name is not None and self._is_host(name):
                return node
            return self._attribute(node)
        if isinstance(node, cst.UnaryOperation):
            return node.with_changes(expression=self._host(node.expression, depth))
        if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            return node.with_changes(left=self._host(node.left, depth), right=self._host(node.right, depth))
        if isinstance(node, cst.Comparison):
            return node.with_changes(
                left=self._host(node.left, depth),
                comparisons=[c.with_changes(comparator=self._host(c.comparator, depth)) for c in node.comparisons],
            )
        if isinstance(node, cst.Subscript):
            elements = []
            for element in node.slice:
                part = element.slice
                if isinstance(part, cst.Index):
                    part = part.with_changes(value=self._host(part.value, depth))
                elif isinstance(part, cst.Slice):
                    part = part.with_changes(**{k: self._host(getattr(part, k), depth)
                                                for k in ("lower", "upper", "step") if getattr(part, k) is not None})
                elements.append(element.with_changes(slice=part))
            return node.with_changes(value=self._host(node.value, depth), slice=elements)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in PASS_THROUGH_METHODS and not node.args:
            return node.with_changes(func=node.func.with_changes(value=self._host(node.func.value, depth)))
        raise _NoTwin()

    def _name(self, node: cst.Name, depth: int) -> cst.BaseExpression:
        name, facts = node.value, self.facts
        for suffix in self.ctx.config.twin_suffixes:
            twin = name + suffix
            if twin in facts.params or twin in facts.bindings or twin in self.ctx.env:
                proven, why = check_pair(self.ctx, facts, name, twin, self.use)
                self._used(twin, proven, why)
                return cst.Name(twin)
        binding = facts.bound_once(name)
        if binding is not None and binding.value is not None and depth < _INLINE_DEPTH \
                and binding.index < self.use and not _written(facts, name, binding.index):
            for leaf in _leaf_names(binding.value):
                if facts.times_bound(leaf) > 1:
                    raise _NoTwin()  # the value may have changed between the binding and the use
            hosted = self._host(binding.value, depth + 1)
            self.proven = False
            self.reasons.append(f"`{name}` is recomputed from host copies")
            return _parenthesized(hosted)
        self.missing = name
        raise _NoTwin()

    def _attribute(self, node: cst.Attribute) -> cst.BaseExpression:
        owner = dotted(node.value)
        if owner is None:
            raise _NoTwin()
        ctx, facts = self.ctx, self.facts
        for suffix in ctx.config.twin_suffixes:
            twin_attr = node.attr.value + suffix
            twin = f"{owner}.{twin_attr}"
            shown = twin in facts.attributes or twin in ctx.env or (
                owner == "self" and ctx.classes and (ctx.classes[-1], twin_attr) in ctx.analyzer.class_hints)
            if not shown:
                continue
            if facts.times_bound(owner.split(".", 1)[0]) > 1:
                raise Refused(f"`{owner.split('.', 1)[0]}` is rebound in this function")
            made_here = twin in facts.bindings or dotted(node) in facts.bindings
            if not made_here:  # made elsewhere: any write here may have made them differ
                for name in (dotted(node), twin):
                    written = facts.writes_after(name, -1)
                    if written:
                        raise Refused(f"`{name}` is written in this function (`{written[0].text}`)")
            proven, why = check_pair(ctx, facts, dotted(node), twin, self.use)
            self._used(twin, proven, why)
            local = _local_alias(facts, twin, self.use)
            return cst.Name(local) if local else node.with_changes(attr=cst.Name(twin_attr))
        self.missing = dotted(node)
        raise _NoTwin()

    def _used(self, twin: str, proven: bool, why: str) -> None:
        guard = _guarded_by(self.facts, self.use_node, twin)
        for alias in self.facts.aliases(twin):
            tested = self.facts.none_tests.get(alias)
            if guard is None and tested is not None and tested[0] < self.use:
                guard = tested[1]  # `if t is not None: return ...` above the use: here t may be None
        if guard is not None:
            raise Refused(f"`{twin}` is tested around this line (`{guard}`): it may be missing or differ here")
        self.twins.append(twin)
        self.numpy = self.numpy or twin.endswith(NUMPY_SUFFIXES)
        if not proven and not _tensor_evidence(self.ctx, self.facts, twin):
            self.untyped.append(twin)
        if not proven:
            self.proven = False
            self.reasons.append(why)


def check_pair(ctx, facts: FunctionFacts, name: str, twin: str, use: int) -> tuple[bool, str]:
    """(proven, why unsafe) for using `twin` in place of `name` at position `use`; raises
    Refused when the twin cannot stand for the value."""
    if any(b.start <= use <= b.index for b in facts.bindings.get(twin, ())):
        raise _NoTwin()  # the use makes the twin (`x_cpu = x.cpu()`): nothing to read instead
    for one in (name, twin):
        if facts.times_bound(one) > 1:
            raise Refused(f"`{one}` is bound more than once in this function")
    name_b, twin_b = facts.bound_once(name), facts.bound_once(twin)
    if twin_b is not None and twin_b.index > use:
        raise Refused(f"`{twin}` is made after this line")
    made = max(twin_b.index if twin_b else -1, name_b.index if name_b else -1)
    proven, why = False, f"only the names say `{twin}` holds the values of `{name}`"
    if twin_b is not None and twin_b.value is not None:
        if _views(twin_b.value) == name:
            raise Refused(f"`{twin}` is `{name}` itself (an alias on the device), not a host copy")
        source = copy_source(twin_b.value, to_host=True)
        if source is not None:
            proven = _judge_source(source, name, twin)
    if not proven and name_b is not None and name_b.value is not None:
        source = copy_source(name_b.value, to_host=False)
        if source is not None:
            proven = _judge_source(source, twin, name)
    if not proven and name_b is not None and twin_b is not None and name_b.value is not None \
            and twin_b.value is not None:
        try:
            parallel = HostBuilder(ctx, facts, name_b.value).build(name_b.value)
            if code(parallel.node) == code(twin_b.value):
                why = f"`{twin}` is computed like `{name}`, from host copies"
        except (Refused, _NoTwin):
            pass
    for one, other in ((name, twin), (twin, name)):
        for alias in sorted(facts.aliases(one)):
            written = facts.writes_after(alias, made)
            if written:
                through = "" if alias == one else f" through `{alias}`"
                raise Refused(f"`{one}` is written{through} after `{twin}` was made (`{written[0].text}`)")
    return proven, ("" if proven else why)


def _judge_source(source: cst.BaseExpression, expected: str, copy_name: str) -> bool:
    """True when `source` (what `copy_name` was copied from) is exactly `expected`."""
    if dotted(source) == expected:
        return True
    if _views(source) == expected:
        raise Refused(f"`{copy_name}` copies `{code(source)}`, not all of `{expected}` (another shape)")
    raise Refused(f"`{copy_name}` is a copy of `{code(source)}`, a different object than `{expected}`")


def copy_source(value: cst.BaseExpression, to_host: bool) -> cst.BaseExpression | None:
    """What `value` copies across devices: `x` for `x.cpu()`, `x.to("cpu")`, `x.cpu().numpy()`
    (to_host), or `x.to(dev)`, `x.cuda()`, `torch.from_numpy(x).to(dev)`,
    `x.pin_memory().to(dev, non_blocking=True)` (to the device); None when it is no such copy."""
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if to_host:
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("cpu", "numpy", "detach") or (method == "to" and _to_cpu(value)):
                inner = copy_source(func.value, True)
                return inner if inner is not None else func.value
        return None
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda") and not (
            func.attr.value == "to" and _to_cpu(value)):
        source = func.value
        while isinstance(source, cst.Call):
            inner = source.func
            if isinstance(inner, cst.Attribute) and inner.attr.value in ("pin_memory", "contiguous"):
                source = inner.value
            elif (dotted(inner) or "").endswith(("from_numpy", "as_tensor")) and source.args:
                source = source.args[0].value
            else:
                break
        return source
    return None


def _to_cpu(call: cst.Call) -> bool:
    for arg in call.args:
        if (arg.keyword is None or arg.keyword.value == "device") and isinstance(arg.value, cst.SimpleString):
            return arg.value.evaluated_value.startswith("cpu")
    return False


def _written(facts: FunctionFacts, name: str, after: int) -> bool:
    return any(facts.writes_after(alias, after) for alias in facts.aliases(name))


def _leaf_names(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Leaves(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

    node.visit(_Leaves())
    return found


def _local_alias(facts: FunctionFacts, dotted_name: str, use: int) -> str | None:
    """A local bound once, before the use, to exactly `dotted_name` and never written:
    `qsl_cpu = common.query_start_loc_cpu` reads better than the attribute again."""
    for name, bindings in facts.bindings.items():
        if len(bindings) != 1 or name in facts.params or "." in name:
            continue
        binding = bindings[0]
        if binding.value is not None and dotted(binding.value) == dotted_name and binding.index < use \
                and not _written(facts, name, -1):
            return name
    return None


def _tensor_evidence(ctx, facts: FunctionFacts, twin: str) -> bool:
    """Does anything show that `twin` is a tensor or an array (not a list or a number)? A
    tensor annotation, a local made by a tensor call, a tensor-only use of it or of an alias, or
    the class's own assignments (`self.x_cpu = x.cpu()`)."""
    if any(alias in facts.tensor_like for alias in facts.aliases(twin)):
        return True
    binding = facts.bound_once(twin)
    if binding is not None and isinstance(binding.value, cst.Call):
        made_by = dotted(binding.value.func) or ""
        if made_by.split(".", 1)[0] in ("torch", "np", "numpy") or copy_source(binding.value, True) is not None:
            return True
    for param in _params(facts.node):
        if param.name.value == twin and param.annotation is not None:
            text = code(param.annotation.annotation)
            return any(word in text for word in ("Tensor", "ndarray", "NDArray"))
    owner, _, attr = twin.rpartition(".")
    if owner == "self" and ctx.classes:
        return ctx.analyzer.class_hints.get((ctx.classes[-1], attr)) == P.HOST
    return False


def _params(fn: cst.FunctionDef):
    params = fn.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _guarded_by(facts: FunctionFacts, node: cst.CSTNode, twin: str) -> str | None:
    """The test of an `if` (or `x if t else y`) around `node` that reads `twin`, else None:
    `if meta.qsl_cpu is not None: ... else: qsl.tolist()` must not read the twin."""
    current = node
    parent = facts.parent_of(current)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        if isinstance(parent, (cst.If, cst.IfExp, cst.While)) and current is not parent.test \
                and facts.aliases(twin) & {dotted(n) for n in _names_in(parent.test)}:
            return code(parent.test)
        current, parent = parent, facts.parent_of(parent)
    return None


def _names_in(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            found.append(attribute)

    node.visit(_Names())
    return found


def _parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def host_form(ctx, node: cst.BaseExpression) -> Hosted | str | None:
    """The host form of a device expression at its place in the function: a Hosted, a string
    saying why the twin found cannot be used, or None (no twin at all)."""
    facts = facts_for(ctx)
    if facts is None:
        return None
    builder = HostBuilder(ctx, facts, node)
    try:
        return builder.build(node)
    except Refused as refused:
        return str(refused)
    except _NoTwin:
        return None


def parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    return _parenthesized(node)
