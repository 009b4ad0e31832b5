"""A field that nothing the tree runs while serving leaves None: its None branch is a fallback.

SGLang's LoRA kernels size their grid from the batch's longest segment:

    def _max_segment_len(batch_info: LoRABatchInfo) -> int:
        if batch_info.max_len is not None:
            return batch_info.max_len
        return int(batch_info.seg_lens.max().item())     # a sync, if it ever ran

    @dataclass
    class LoRABatchInfo:
        max_len: Optional[int]                          # required: every construction gives it

Every backend gives `max_len` a number when it builds a batch's info (`max_len=max(lengths)`,
`max_len=chunk_size`), or stores one per batch (`batch_info.max_len = chunk_size`); only the
CUDA-graph buffers built at start-up pass `max_len=None  # Set per batch`. The fact, about code:
a field of an in-tree class (declared in a class body with an annotation, as dataclasses and
named tuples declare them) is never None while serving when no class declares it with a None
default, every keyword argument of that name and every store `.name = value` outside start-up
code gives a value that cannot be None, and no construction outside start-up code passes a
class declaring it a value that may be None by position. Then the lines that run only when a
read of that field is None (`if x.f is None:`, the `else` of `if x.f is not None:`, and what
follows `if x.f is not None: return ...`) never run while serving.

Fields are matched by name, whatever the receiver (as the other field facts are): a second class
declaring the name, or any store or keyword of that name, can only keep the fallback. Start-up
code is a function named like code that runs once (`skip-functions`), other than the
constructor and `reset`-like methods, which may run in every step: a None given there is a
placeholder that the serving path fills before it reads it ("Set per batch").

A value cannot be None when it is a literal other than None, a display, arithmetic or a
comparison, a construction (a capitalized callee), a `torch.*` call, a builtin or tensor method
known to return a value, a local every assignment of which is such a value, a parameter
annotated without `Optional`/`None`/`Any` and not defaulting to None, an `if`-expression or `or`
of such values, or a read of another field that is never None (decided together: the greatest
such set). Per file (`file_field_nones`, `ast`, over the nodes nodewalk.function_code already
gathered for the other passes); over the tree (`field_none_lines`).
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .guardblocks import early_exits
from .nodewalk import function_code

# builtins that return a value, never None
_VALUED_BUILTINS = frozenset(("max", "min", "len", "int", "float", "sum", "abs", "round", "str", "bool", "list",
                              "tuple", "dict", "set", "sorted", "range", "divmod", "pow", "frozenset"))
# tensor methods that return a tensor or a Python value
_VALUED_METHODS = frozenset(("to", "cpu", "cuda", "clone", "contiguous", "sum", "max", "min", "int", "long",
                             "float", "view", "reshape", "tolist", "item", "numpy", "size", "numel", "cumsum",
                             "new_tensor", "new_zeros", "new_empty", "new_full", "pin_memory", "detach"))
_NOT_STARTUP = ("__init__", "__post_init__", "__new__")
_DEPTH = 3


def file_field_nones(tree: ast.Module, startup) -> tuple:
    """(declared fields, those declared with a None default, {class: its declared fields}, fields
    given a value that may be None outside start-up code, (field, field read) pairs of values
    that are None only if the field read is, classes passed a maybe-None value by position
    outside start-up code, [(start, end, field)] of the lines that run only when a read of the
    field is None). `startup(name)`: the function runs once (skip-functions)."""
    declared: set[str] = set()
    none_default: set[str] = set()
    by_class: dict[str, tuple] = {}
    maybe: set[str] = set()
    depends: set[tuple] = set()
    positional: set[str] = set()
    guards: list[tuple] = []

    def give(field: str, value, function, hot: bool) -> None:
        found = _value(value, function, 0)
        if found is None:
            if hot:
                maybe.add(field)
        else:
            depends.update((field, read) for read in found)

    def visit_function(function, hot: bool) -> None:
        for node in function_code(function):
            kind = type(node)
            if kind is ast.Call:
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        give(keyword.arg, keyword.value, function, hot)
                name = dotted(node.func) or ""
                short = name.rpartition(".")[2]
                if hot and short[:1].isupper() and any(_value(arg, function, 0) is None for arg in node.args):
                    positional.add(short)
            elif kind is ast.AnnAssign:  # `self.linker: Optional[Linker] = None`
                if isinstance(node.target, ast.Attribute) and node.value is not None:
                    give(node.target.attr, node.value, function, hot)
            elif kind is ast.Assign:
                for target in node.targets:
                    if isinstance(target, ast.Attribute):
                        give(target.attr, node.value, function, hot)
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        maybe.update(t.attr for t in target.elts if isinstance(t, ast.Attribute) and hot)
            elif kind is ast.If:
                field = _none_test(node.test)
                if field is not None:
                    guards.append((node.body[0].lineno, node.body[-1].end_lineno, field))
                field = _not_none_test(node.test)
                if field is not None and node.orelse:
                    guards.append((node.orelse[0].lineno, node.orelse[-1].end_lineno, field))
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                visit_function(node, hot and not _startup(node.name, startup))
        guards.extend((start, end, test[1]) for start, end, test in early_exits(function.body, _not_none_test))

    def visit(body) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                fields = []
                for item in stmt.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        fields.append(item.target.id)
                        if item.value is not None and _none_default(item.value):
                            none_default.add(item.target.id)
                declared.update(fields)
                if fields:
                    by_class[stmt.name] = tuple(fields)
                visit(stmt.body)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit_function(stmt, not _startup(stmt.name, startup))
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, field, None) or [])

    visit(tree.body)
    if not guards and not declared and not maybe and not depends and not positional:
        return ()
    return (frozenset(declared), frozenset(none_default), by_class, frozenset(maybe), frozenset(depends),
            frozenset(positional), tuple(guards))


def field_none_lines(results: dict) -> dict[str, list]:
    """{path: [(start, end, why)]}: the lines that run only when a field that is never None while
    serving is None (see the module docstring)."""
    declared: set[str] = set()
    killed: set[str] = set()
    depends: dict[str, set] = {}
    per_path: dict[str, tuple] = {}
    by_class: dict[str, set] = {}
    positional: set[str] = set()
    for path, result in results.items():
        facts = getattr(result, "field_nones", None)
        if not facts:
            continue
        fields, none_default, classes, maybe, pairs, passed, guards = facts
        declared |= fields
        killed |= none_default | maybe
        for field, read in pairs:
            depends.setdefault(field, set()).add(read)
        for cls, names in classes.items():
            by_class.setdefault(cls, set()).update(names)
        positional |= passed
        if guards:
            per_path[path] = guards
    if not per_path:
        return {}
    for cls in positional:
        killed |= by_class.get(cls, set())
    # the greatest set: a field whose value may be a read of a field that is not in it is out too
    never = declared - killed
    changed = True
    while changed:
        changed = False
        for field in list(never):
            if any(read not in never for read in depends.get(field, ())):
                never.discard(field)
                changed = True
    found: dict[str, list] = {}
    for path, guards in per_path.items():
        for start, end, field in guards:
            if field in never:
                found.setdefault(path, []).append((start, end, (
                    f"runs only when `.{field}` is None, and nothing that runs while serving leaves `{field}` None "
                    "(a declared field every construction and store gives a value, None only in start-up code)")))
    return found


def _startup(name: str, startup) -> bool:
    return startup(name) and name not in _NOT_STARTUP and not name.lstrip("_").startswith("reset")


def _none_test(test) -> str | None:
    """`x.f is None` -> "f"."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
            and isinstance(test.left, ast.Attribute) and _is_none(test.comparators[0]):
        return test.left.attr
    return None


def _not_none_test(test) -> str | None:
    """`x.f is not None` -> "f"."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and isinstance(test.left, ast.Attribute) and _is_none(test.comparators[0]):
        return test.left.attr
    return None


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _none_default(value) -> bool:
    """A class-body default that is None: `= None`, `= field(default=None)`; a `field(...)` with
    neither `default` nor `default_factory` is required."""
    if _is_none(value):
        return True
    if isinstance(value, ast.Call) and (dotted(value.func) or "").rpartition(".")[2] == "field":
        return any(keyword.arg == "default" and _is_none(keyword.value) for keyword in value.keywords)
    return False


def _value(node, function, depth: int) -> frozenset | None:
    """The field reads a value is None only through (empty: never None), or None: it may be None."""
    kind = type(node)
    if kind is ast.Constant:
        return None if node.value is None else frozenset()
    if kind in (ast.JoinedStr, ast.BinOp, ast.UnaryOp, ast.Compare, ast.List, ast.Tuple, ast.Dict, ast.Set,
                ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda):
        return frozenset()
    if kind is ast.IfExp:
        return _both(_value(node.body, function, depth), _value(node.orelse, function, depth))
    if kind is ast.BoolOp:  # `a or b` is b when a is None; `a and b` is a when a is None
        last = _value(node.values[-1], function, depth)
        return last if isinstance(node.op, ast.Or) else _both(_value(node.values[0], function, depth), last)
    if kind is ast.Attribute:
        return frozenset((node.attr,))
    if kind is ast.Call:
        func = node.func
        name = dotted(func) or ""
        if name in _VALUED_BUILTINS or name.startswith("torch.") or name.rpartition(".")[2][:1].isupper():
            return frozenset()
        if isinstance(func, ast.Attribute) and func.attr in _VALUED_METHODS:
            return frozenset()
        return None
    if kind is ast.Name and depth < _DEPTH:
        return _name(node.id, function, depth + 1)
    return None


def _both(a, b):
    return None if a is None or b is None else a | b


def _name(name: str, function, depth: int) -> frozenset | None:
    """A parameter annotated as never None, or a local every assignment of which is never None."""
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if any(arg.arg == name for arg in every):
        defaults = dict(zip([a.arg for a in [*args.posonlyargs, *args.args][::-1]], args.defaults[::-1]))
        defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
        arg = next(a for a in every if a.arg == name)
        if arg.annotation is None or _is_none(defaults.get(name, ast.Constant(0))):
            return None
        written = ast.unparse(arg.annotation)
        return None if any(word in written for word in ("Optional", "None", "Any", "object")) else frozenset()
    values = [node.value for node in function_code(function)
              if (type(node) is ast.Assign and any(isinstance(t, ast.Name) and t.id == name for t in node.targets))
              or (type(node) is ast.AnnAssign and node.value is not None and isinstance(node.target, ast.Name)
                  and node.target.id == name)]
    if not values or any(type(node) is ast.Name and node.id == name and isinstance(node.ctx, ast.Store)
                         and not _assigned(node, function) for node in function_code(function)):
        return None
    found = frozenset()
    for value in values:
        part = _value(value, function, depth)
        if part is None:
            return None
        found |= part
    return found


def _assigned(name_node, function) -> bool:
    """The stored name is the whole target of a plain assignment (not a loop's, a `with`'s, ...)."""
    return any((type(node) is ast.Assign and name_node in node.targets)
               or (type(node) is ast.AnnAssign and node.target is name_node and node.value is not None)
               for node in function_code(function))
