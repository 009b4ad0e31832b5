"""The nodes of a function's own code, found fast.

Several per-file facts need every node of a block of a certain kind: the calls a function makes
(`loops.py`: the classes it constructs; `constargs.py`: the literals it passes), the `if` tests on
its parameters, the `raise`/`return` statements of an error path (`errorpaths.py`). On whole vLLM
`ast.iter_child_nodes` over every node cost 11 s of CPU per such walk (a generator per node, and
every `Name`, `Load` and string field visited as well); this walk reads each node type's fields
once, never descends into nodes that cannot hold code (`Name`, `Constant`, an operator, a
context) and yields no generator: about a quarter of the time.

The order is `ast.iter_child_nodes`'s depth-first one from a stack (the last statement of the
block first), so callers that number what they find (constargs.py's guards) get the numbering
they always had.

`every_node` stands in for `ast.walk` in the linter (same nodes, same order): a definition's or
a module's nodes are listed once and shared by the facts that walk it; `nodes_breadth_first` of
such a node filters that list.
"""

from __future__ import annotations

import ast
import weakref
from itertools import chain

DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
# what `return` and friends inside a lambda leave is the lambda, not the block
SCOPES = DEFINITIONS | {ast.Lambda}

# fields that hold names, numbers, flags or operators, never a statement or an expression
_NOT_CODE = frozenset({"ctx", "op", "ops", "type_comment", "attr", "arg", "id", "name", "names", "module",
                       "level", "kind", "conversion", "kwd_attrs", "rest", "is_async", "simple"})
_FIELDS: dict[type, tuple] = {}  # node type -> its fields that may hold code


def code_fields(kind: type) -> tuple:
    """The fields of a node type that may hold code (statements, expressions, handlers...)."""
    fields = _FIELDS.get(kind)
    if fields is not None:
        return fields
    if kind is ast.Name or kind is ast.Constant or not issubclass(kind, ast.AST):
        fields = ()  # a leaf, or a plain value (a string in `global a, b`, a None dict key)
    else:
        fields = tuple(f for f in kind._fields if f not in _NOT_CODE)
    _FIELDS[kind] = fields
    return fields


def own_nodes(body: list, wanted, skip=SCOPES, enter_block_definitions: bool = True) -> list:
    """The nodes of `body` whose type is in `wanted`, not descending into nested nodes whose
    type is in `skip` (such a node is found itself when its type is wanted). A definition that is itself a statement of `body` is entered when
    `enter_block_definitions` (errorpaths.py's reading of a block: that def's own statements
    are the block's), else skipped like the nested ones."""
    found = []
    stack = list(body)
    floor = len(stack) if enter_block_definitions else 0  # stack[:floor]: statements of `body` not yet taken
    fields_of = _FIELDS
    while stack:
        node = stack.pop()
        kind = type(node)
        if len(stack) < floor:
            floor = len(stack)
        elif kind in skip:
            if kind in wanted:  # found, not entered
                found.append(node)
            continue
        if kind in wanted:
            found.append(node)
        fields = fields_of.get(kind)
        if fields is None:
            fields = code_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)
            elif value is not None:
                stack.append(value)
    return found


# The node types that constargs.py (tests, calls, stores), confignone.py (tests, returns,
# assignments, calls) and held_tests.py (stores, definitions, tests, calls) read in a function's
# own code: one walk serves the three (`function_code`). Nested definitions are found, not entered.
CODE_KINDS = frozenset({ast.If, ast.While, ast.Assert, ast.IfExp, ast.Call, ast.Return, ast.Assign, ast.Name,
                        ast.Global, ast.Nonlocal}) | SCOPES
# function node -> its own nodes of CODE_KINDS (the tree is never changed after parsing)
_function_code: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def function_code(function) -> list:
    """`own_nodes(function.body, CODE_KINDS, enter_block_definitions=False)`, walked once per
    function: each reader filters it by type (the order of the kinds it keeps is the walk's)."""
    found = _function_code.get(function)
    if found is None:
        found = _function_code[function] = own_nodes(function.body, CODE_KINDS, enter_block_definitions=False)
    return found


def nodes_breadth_first(node, wanted) -> list:
    """The nodes under `node` (itself included, nested definitions too) whose type is in
    `wanted`, in `ast.walk`'s breadth-first order: for the walks whose first hit decides
    (branches.py's dispatch calls, flagguards.py's passes)."""
    if type(node) in _CACHED_WALKS:  # the full walk's list, shared; what this walk skips are leaves
        return [current for current in every_node(node) if type(current) in wanted]
    found = []
    queue = [node]
    fields_of = _FIELDS
    # The child loop below is written out as in `own_nodes` rather than shared through a helper:
    # a function call per node is the kind of cost this module exists to avoid.
    for current in queue:  # the list grows while it is read: a queue without a deque
        kind = type(current)
        if kind in wanted:
            found.append(current)
        fields = fields_of.get(kind)
        if fields is None:
            fields = code_fields(kind)
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                queue.extend(value)
            elif value is not None:
                queue.append(value)
    return found


_EVERY_FIELD: dict[type, tuple] = {}  # node type -> all its fields, as `ast.walk` reads them
_CACHED_WALKS = DEFINITIONS | {ast.Module}
# definition or module -> every node under it (the tree is never changed after parsing)
_walked: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def every_node(node):
    """`ast.walk(node)`'s nodes, in its order, made faster. About fifteen per-file facts
    walk every function and class of a file, each on its own; on whole vLLM those walks were about
    a sixth of the per-file CPU under cProfile. A definition's or a module's list is made once and shared; any
    other node's is made by a loop without `ast.walk`'s two generators per node (about twice as
    fast)."""
    if type(node) in _CACHED_WALKS:
        below = _walked.get(node)
        if below is None:
            # without the node itself: a list holding its own key would keep the tree alive
            below = _walked[node] = _breadth_first(node)[1:]
        return chain((node,), below)
    return _breadth_first(node)


def _breadth_first(node) -> list:
    queue = [node]
    fields_of = _EVERY_FIELD
    is_node = ast.AST
    for current in queue:  # the list grows while it is read: a queue without a deque
        kind = type(current)
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = kind._fields
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, is_node):  # `global a, b` holds strings, `{**d}` a None key
                        queue.append(item)
            elif isinstance(value, is_node):
                queue.append(value)
    return queue


def flat_statements(body):
    """Statements of a body, looking into `if`/`try`/`with` blocks (conditional definitions)."""
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            yield from flat_statements(node.body)
            yield from flat_statements(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                yield from flat_statements(handler.body)
            yield from flat_statements(getattr(node, "finalbody", []))
        else:
            yield node


def names_bound(target) -> list[str]:
    """The plain names a `for` target binds (`t, (h, w)`: t, h, w)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in names_bound(element)]
    if isinstance(target, ast.Starred):
        return names_bound(target.value)
    return []
