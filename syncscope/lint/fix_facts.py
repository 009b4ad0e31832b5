"""What `--fix` needs to know about one function before it swaps a device value for a host
one: where every name is bound, where it is written in place, who else holds the same object,
and how each node is used. Collected with one libcst walk of the function, and only for a
function that has a finding a fix could apply to (the normal lint run pays nothing).

Positions are pre-order indices of the nodes in the function, so "after" means later in the
source; a write inside a loop that also holds the use comes after the twin was made whichever
line it is on, which is what the checks want (conservative).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from .imports import dotted

# Tensor methods that return a view of their receiver: writing to the view writes to it.
VIEW_METHODS = frozenset(
    "view view_as reshape flatten squeeze unsqueeze t transpose permute narrow expand expand_as "
    "select unflatten as_strided detach numpy contiguous".split()
)
# Attributes and operators only tensors and arrays have: a name used with one holds no list.
TENSOR_ATTRIBUTES = frozenset(
    "sum max min amax amin mean numpy tolist item to cuda cpu long int float bool shape dtype device numel "
    "size cumsum pin_memory view reshape flatten any all nonzero argmax argmin prod clamp".split()
)
TENSOR_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.Modulo, cst.BitAnd, cst.BitOr, cst.BitXor,
                    cst.MatrixMultiply, cst.Power)
ORDERING = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)
# Calls that write into the tensors they are given (collectives), and callees known not to.
COLLECTIVES = frozenset(
    "all_reduce all_gather all_gather_into_tensor reduce_scatter reduce_scatter_tensor broadcast reduce "
    "scatter gather send recv isend irecv all_to_all all_to_all_single".split()
)
PURE_ROOTS = frozenset({"torch", "np", "numpy", "math", "F", "nn"})
PURE_BUILTINS = frozenset(
    "len int float bool str repr print isinstance max min sum list tuple range enumerate zip sorted any all abs "
    "round hash id type getattr hasattr".split()
)
_EMPTY_MODULE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    """Source text of a node, whitespace collapsed (for messages and comparisons)."""
    return " ".join(_EMPTY_MODULE.code_for_node(node).split())


@dataclass
class Binding:
    index: int  # where the name takes the value: the end of its statement
    value: cst.BaseExpression | None  # the value bound to the name, None when not a plain value
    target: cst.CSTNode
    start: int = -1  # where its statement begins (a use inside it reads the old value)


@dataclass
class Write:
    index: int
    text: str  # the statement or call that writes, for messages


@dataclass
class FunctionFacts:
    node: cst.FunctionDef
    params: set[str] = field(default_factory=set)
    order: dict[int, int] = field(default_factory=dict)  # id(node) -> pre-order index
    parent: dict[int, cst.CSTNode] = field(default_factory=dict)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)  # dotted name -> bindings
    writes: dict[str, list[Write]] = field(default_factory=dict)  # dotted name -> in-place writes
    reads: dict[str, list[cst.CSTNode]] = field(default_factory=dict)  # dotted name -> read nodes
    attributes: set[str] = field(default_factory=set)  # dotted attribute texts seen anywhere
    # dotted name -> (position, text) of `name is None` / `name is not None` tests: it may be missing
    none_tests: dict[str, tuple[int, str]] = field(default_factory=dict)
    tensor_like: set[str] = field(default_factory=set)  # dotted names used the way only tensors are

    def position(self, node: cst.CSTNode) -> int:
        return self.order.get(id(node), -1)

    def parent_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parent.get(id(node))

    def bound_once(self, name: str) -> Binding | None:
        """The one binding of a local bound exactly once (and not a parameter), else None."""
        found = self.bindings.get(name, [])
        if len(found) == 1 and name not in self.params:
            return found[0]
        return None

    def times_bound(self, name: str) -> int:
        return len(self.bindings.get(name, ())) + (name in self.params)

    def writes_after(self, name: str, index: int) -> list[Write]:
        return [w for w in self.writes.get(name, ()) if w.index > index]

    def aliases(self, name: str) -> set[str]:
        """Names that may hold the same object as `name`, or a view of it: `a = name`,
        `a = name[1:]`, `a = name.view(...)`, and `name = a`. One step each way, repeated."""
        found, todo = {name}, [name]
        while todo:
            current = todo.pop()
            for other, bindings in self.bindings.items():
                for binding in bindings:
                    if other not in found and self.views(binding.value) == current:
                        found.add(other)
                        todo.append(other)
                    if other == current:
                        source = self.views(binding.value)
                        if source is not None and source not in found:
                            found.add(source)
                            todo.append(source)
        return found


    def views(self, value: cst.BaseExpression | None) -> str | None:
        """`_views`, except that indexing with a boolean mask makes a copy, not a view."""
        if isinstance(value, cst.Subscript) and any(
                isinstance(e.slice, cst.Index) and self.is_mask(e.slice.value) for e in value.slice):
            return None
        return _views(value)

    def is_mask(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A boolean mask, by its making: a comparison, `~m`, or a name bound only to masks."""
        if isinstance(node, cst.Comparison) or (
                isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.BitInvert, cst.Not))):
            return True
        if isinstance(node, cst.Name) and depth < 4:
            if "mask" in node.value.lower():
                return True
            values = [b.value for b in self.bindings.get(node.value, ()) if b.value is not None]
            return bool(values) and all(self.is_mask(v, depth + 1) for v in values)
        return False


def _views(value: cst.BaseExpression | None) -> str | None:
    """The dotted name whose object (or a view of it) `value` is, else None."""
    while value is not None:
        if isinstance(value, (cst.Name, cst.Attribute)):
            return dotted(value)
        if isinstance(value, cst.Subscript):
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in VIEW_METHODS:
            value = value.func.value
        else:
            return None
    return None


def collect(fn: cst.FunctionDef) -> FunctionFacts:
    facts = FunctionFacts(fn)
    params = fn.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        facts.params.add(param.name.value)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            facts.params.add(star.name.value)
    fn.body.visit(_Collector(facts))
    return facts


class _Collector(cst.CSTVisitor):
    def __init__(self, facts: FunctionFacts) -> None:
        super().__init__()
        self.facts = facts
        self.stack: list[cst.CSTNode] = []
        self.targets: set[int] = set()  # ids of Name/Attribute nodes that are binding targets
        self.pending: dict[int, list[Binding]] = {}  # statement id -> its bindings, ended on leave

    def on_visit(self, node: cst.CSTNode) -> bool:
        facts = self.facts
        facts.order[id(node)] = len(facts.order)
        if self.stack:
            facts.parent[id(node)] = self.stack[-1]
        self.stack.append(node)
        handler = getattr(self, "see_" + type(node).__name__, None)
        if handler is not None:
            handler(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()
        for binding in self.pending.pop(id(original_node), ()):
            binding.index = len(self.facts.order)  # the value is evaluated before the name is bound

    # -- bindings and writes -------------------------------------------------------------
    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, node: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            pairs = None
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) \
                    and not any(isinstance(e, cst.StarredElement) for e in value.elements):
                pairs = [e.value for e in value.elements]
            for i, element in enumerate(target.elements):
                self._bind(element.value, pairs[i] if pairs else None, node)
            return
        if isinstance(target, cst.StarredElement):
            self._bind(target.value, None, node)
            return
        if isinstance(target, cst.Subscript):
            base = _views(target.value)
            if base is not None:
                self._write(base, node)
            return
        name = dotted(target)
        if name is None:
            return
        self.targets.add(id(target))
        index = self.facts.order.get(id(node), len(self.facts.order))
        binding = Binding(index, value, target, start=index)
        self.facts.bindings.setdefault(name, []).append(binding)
        if not isinstance(node, cst.For):  # a loop target is bound before the body runs
            self.pending.setdefault(id(node), []).append(binding)

    def _write(self, name: str, node: cst.CSTNode) -> None:
        index = self.facts.order.get(id(node), len(self.facts.order))
        self.facts.writes.setdefault(name, []).append(Write(index, code(node)))

    def see_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value, node)

    def see_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value, node)

    def see_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._bind(node.target, None, node)
        else:
            name = dotted(node.target)
            if name is not None:  # `x += y` on a tensor is in place
                self._write(name, node)

    def see_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value, node)

    def see_For(self, node: cst.For) -> None:
        self._bind(node.target, None, node)

    def see_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None, node)

    def see_Del(self, node: cst.Del) -> None:
        self._bind(node.target, None, node)

    def see_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method.endswith("_") and not method.startswith("__"):
                base = _views(func.value)  # `x.fill_(0)`, `x[1:].zero_()`, `x.copy_(y)`
                if base is not None:
                    self._write(base, node)
        callee = dotted(func) or ""
        parts = callee.split(".")
        passes_on = parts[-1] in COLLECTIVES or (
            isinstance(func, cst.Name) and callee not in PURE_BUILTINS)  # a helper may write what it gets
        if parts[0] in PURE_ROOTS and parts[-1] not in COLLECTIVES:
            passes_on = False
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "out":
                base = _views(arg.value)
                if base is not None:
                    self._write(base, node)
            elif passes_on and arg.keyword is None:
                base = _views(arg.value)
                if base is not None:
                    self._write(base, node)

    def see_Comparison(self, node: cst.Comparison) -> None:
        for target in node.comparisons:
            if isinstance(target.operator, (cst.Is, cst.IsNot)) and isinstance(target.comparator, cst.Name) \
                    and target.comparator.value == "None":
                name = dotted(node.left)
                if name is not None:
                    self.facts.none_tests.setdefault(name, (self.facts.order[id(node)], code(node)))

    # -- reads ---------------------------------------------------------------------------
    def see_Name(self, node: cst.Name) -> None:
        parent = self.facts.parent.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # `y` in `x.y` is no variable
        if id(node) not in self.targets:
            self.facts.reads.setdefault(node.value, []).append(node)
            self._note_tensor_use(node.value, node)

    def see_Attribute(self, node: cst.Attribute) -> None:
        name = dotted(node)
        if name is None:
            return
        self.facts.attributes.add(name)
        if id(node) not in self.targets:
            self.facts.reads.setdefault(name, []).append(node)
            self._note_tensor_use(name, node)

    def _note_tensor_use(self, name: str, node: cst.CSTNode) -> None:
        """`x.sum()`, `x[1:] - x[:-1]`, `x > 0`: x is a tensor or an array, not a list."""
        parent = self.facts.parent.get(id(node))
        while isinstance(parent, cst.Subscript) and parent.value is node:
            # a slice of a tensor is a tensor; an element of a list may be a number
            if len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index):
                return
            node, parent = parent, self.facts.parent.get(id(parent))
        used = (isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in TENSOR_ATTRIBUTES) \
            or (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, TENSOR_OPERATORS)) \
            or (isinstance(parent, cst.Comparison) and any(isinstance(c.operator, ORDERING) for c in parent.comparisons)) \
            or (isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, ORDERING))
        if used:
            self.facts.tensor_like.add(name)
