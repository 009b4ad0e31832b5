"""Locals that only ever hold a Python container: their truth value is their length, not a read of a
tensor.

A list built of device slices is no tensor:

    parts = [raw[:, :, a:b] for a, b in self.spans if b > a]
    return torch.cat(parts, dim=2) if parts else raw[:, :, :0]

The walk gives `parts` the place of its items (the device), which is what `torch.cat(parts)` or
`torch.tensor(parts)` needs; but `if parts` asks the list for its length. The fact: a name that
every binding in its function gives a list, tuple, set or dict display or comprehension (or a
conditional expression of such, or a `list(...)` / `tuple(...)` / `sorted(...)` call, and `+=` on
it, which keeps a list a list) holds a container whatever it holds; testing it reads no tensor.
A parallel assignment of displays (`prefix_lens, positions = [], []`, then `.append(...)` in a
loop) binds each name to the element in its place, as Python does: each is a display binding.
Every binding, not the reaching one: a name also bound to anything else (another unpacking, a loop
target, a call, a parameter), or declared `nonlocal` / `global` in a function nested in it, is
left to the walk's place. Decided once per function and only for the names a truth-value test
asks about (`FunctionContext.holds_container`).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

_DISPLAYS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp)
_BUILDERS = frozenset({"list", "tuple", "sorted", "set", "dict"})
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def is_container(node: cst.BaseExpression | None, shadowed) -> bool:
    """A display, a comprehension (not a generator), a builtin container call, or a conditional
    expression whose two arms are such."""
    if isinstance(node, _DISPLAYS):
        return True
    if isinstance(node, cst.IfExp):
        return is_container(node.body, shadowed) and is_container(node.orelse, shadowed)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value in _BUILDERS and not shadowed(node.func.value)
    return False


class _Bindings:
    """Each name's bindings in one function body: True while every one is a container. A
    name's answer is the `and` of its bindings', so the order the nodes are read in is free."""

    def __init__(self, shadowed) -> None:
        self.shadowed = shadowed
        self.container: dict[str, bool] = {}
        self.depth = 0  # inside a nested function, class or lambda: only its declarations count

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if self.depth:
            return
        if isinstance(target, cst.Name):
            name = target.value
            self.container[name] = self.container.get(name, True) and is_container(value, self.shadowed)
            return
        if _parallel(target, value):  # `prefix_lens, positions = [], []`: each name its own element
            for element, bound in zip(target.elements, value.elements):
                self.bind(element.value, bound.value)
            return
        for node in _names_in(target):  # unpacking, starred: not a container by this rule
            self.container[node] = False

    def read(self, node: cst.CSTNode) -> None:
        """One node (not a nested scope itself), `depth` scopes deep."""
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self.bind(target.target, node.value)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            self.bind(node.target, node.value)
        elif isinstance(node, cst.AugAssign):
            if not (isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name)):
                self.bind(node.target, None)  # `parts += more` keeps a list a list; other ops may not
        elif isinstance(node, cst.For):  # a comprehension's own targets bind in its own scope
            self.bind(node.target, None)
        elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            self.bind(node.name, None)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self.bind(node.asname.name, None)
        elif isinstance(node, cst.NamedExpr):
            self.bind(node.target, node.value)
        elif isinstance(node, cst.ExceptHandler) and node.name is not None:
            self.bind(node.name.name, None)
        elif isinstance(node, (cst.Nonlocal, cst.Global)):
            for item in node.names:  # a nested function may rebind it to anything
                self.container[item.name.value] = False
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not self.depth:
            for alias in node.names if not isinstance(node.names, cst.ImportStar) else ():
                bound = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(bound, cst.Name):
                    self.container[bound.value] = False


# node type -> the fields that may hold nodes with bindings (whitespace never does)
_FIELDS: dict[type, tuple] = {}


def _read_all(body: cst.CSTNode, walk: _Bindings) -> None:
    """Every node under `body`, each read with the number of scopes around it: a plain walk of
    the nodes' fields (a libcst visit rebuilds each node it leaves, several times the cost)."""
    stack = [(body, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind in _SCOPES:
            depth += 1
        else:
            walk.depth = depth
            walk.read(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind)
                                           if not f.name.startswith("whitespace"))
        for name in fields:
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                stack.append((value, depth))
            elif type(value) is tuple or type(value) is list:
                stack.extend((item, depth) for item in value if isinstance(item, cst.CSTNode))


def _parallel(target: cst.BaseExpression, value: cst.BaseExpression | None) -> bool:
    """A tuple/list target given a tuple/list display of as many elements, none starred: Python
    binds each target element to the value in its place (`a, b = [], []`)."""
    return isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
        and len(target.elements) == len(value.elements) \
        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))


def _names_in(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names_in(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


def container_names(function: cst.FunctionDef, params: list[str], shadowed) -> frozenset[str]:
    """The names `function` binds only to containers (never a parameter of it)."""
    walk = _Bindings(shadowed)
    _read_all(function.body, walk)
    return frozenset(name for name, only in walk.container.items() if only and name not in params)
