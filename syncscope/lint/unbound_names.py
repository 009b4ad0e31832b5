"""Names a module binds only for another platform, and the code that reads them: never run on CUDA.

SGLang's `models/mindspore.py` binds `ms`, `np`, `torch_npu`, `mutable` only under `if _is_npu:`.
On a CUDA GPU that arm never runs, so the names are unbound there: a statement that reads one
unconditionally raises `NameError`, and nothing after it in its block runs. Two facts follow:
* in a function, the statements after one that reads such a name (its own top-level block; the
  read not under a short-circuit, a conditional expression, a lambda or a comprehension's body)
  never run on CUDA;
* a class whose own `__init__` does so before any `return` is never instantiated on CUDA, so its
  instance methods (not its `staticmethod`s / `classmethod`s) never run there either. Not a
  decorated class (the decorator may build instances some other way), nor one that a class of the
  same module subclasses with an `__init__` of its own.
A name counts when every binding of it in the module (import, assignment, `def`, `class`, loop
or `with` target, a `global` statement anywhere) lies in an arm that branches.py decides a CUDA
GPU never takes (`if _is_npu:`, the `else` of `if _is_cuda:`), it is no builtin, and the module
has no `from m import *` outside such arms. `if TYPE_CHECKING:` is no platform test: not counted.
A name a function binds itself (a parameter, a local, an import in the function) is its own.
"""

from __future__ import annotations

import ast
import builtins
from .nodewalk import every_node

_BUILTINS = frozenset(dir(builtins))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def unbound_on_cuda(tree: ast.Module, evaluate) -> frozenset:
    """The module-level names bound only in arms a CUDA GPU never takes."""
    dead: set[str] = set()
    bound: set[str] = set()
    if not _visit(tree.body, False, evaluate, dead, bound) or not dead - bound:
        return frozenset()
    for node in every_node(tree):
        if isinstance(node, ast.Global):  # `global ms` in a function may bind it anywhere
            bound.update(node.names)
    return frozenset(dead - bound - _BUILTINS)


def _visit(body, off: bool, evaluate, dead: set, bound: set) -> bool:
    """Sorts the bindings of a module-level block into `dead` (in an arm CUDA never takes) and
    `bound`; False at a `from m import *` that runs (any name may be bound)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            value, why = (None, "") if "TYPE_CHECKING" in ast.dump(stmt.test) else evaluate(stmt.test)
            platform = "on CUDA" in why or "platform than CUDA" in why
            if not (_visit(stmt.body, off or (platform and value is False), evaluate, dead, bound)
                    and _visit(stmt.orelse, off or (platform and value is True), evaluate, dead, bound)):
                return False
            continue
        into = dead if off else bound
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*":
                    if not off:
                        return False
                    continue
                into.add(alias.asname or alias.name.split(".")[0])
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            into.add(stmt.name)
            continue
        nested = [getattr(stmt, f, None) for f in ("body", "orelse", "finalbody")]
        nested += [h.body for h in getattr(stmt, "handlers", ())]
        nested += [case.body for case in getattr(stmt, "cases", ())]
        for handler in getattr(stmt, "handlers", ()):
            if handler.name:
                into.add(handler.name)
        for part in (stmt,) if not any(nested) else _heads(stmt):
            for node in every_node(part):  # stores in comprehensions too: more bound, never fewer
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    into.add(node.id)
                elif isinstance(node, ast.alias):
                    into.add(node.asname or node.name.split(".")[0])
        for inner in nested:
            if isinstance(inner, list) and inner and not _visit(inner, off, evaluate, dead, bound):
                return False
    return True


def _heads(stmt) -> list:
    """The parts of a compound statement outside its blocks (`for` target, `with ... as`)."""
    return [getattr(stmt, f) for f in ("target", "iter", "test", "subject") if getattr(stmt, f, None) is not None] + \
        list(getattr(stmt, "items", ()))


def unbound_reads(tree: ast.Module, unbound: frozenset) -> list[tuple[int, int, str]]:
    """Cold line ranges (start, end, why): what never runs on CUDA because it comes after an
    unconditional read of a name in `unbound`."""
    if not unbound:
        return []
    cold: list[tuple[int, int, str]] = []
    _scan(tree.body, unbound, frozenset(), cold, None)
    return cold


def _scan(body, unbound: frozenset, outer: frozenset, cold: list, in_class) -> None:
    subclassed = {base.id for stmt in body if isinstance(stmt, ast.ClassDef) for base in stmt.bases
                  if isinstance(base, ast.Name) and _init_of(stmt) is not None}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = outer | _locals(stmt)
            hit = _first_read(stmt.body, unbound - own)
            if hit is not None:
                index, name = hit
                if index + 1 < len(stmt.body):
                    cold.append((stmt.body[index + 1].lineno, stmt.body[-1].end_lineno,
                                 f"after a read of `{name}`, which the module binds only for another platform than CUDA"))
            _scan(stmt.body, unbound, own, cold, None)
        elif isinstance(stmt, ast.ClassDef):
            _scan(stmt.body, unbound, outer, cold, stmt)
            init = _init_of(stmt)
            if init is None or stmt.decorator_list or stmt.name in subclassed:
                continue
            hit = _first_read(init.body, unbound - outer - _locals(init))
            if hit is None or any(isinstance(n, ast.Return) for s in init.body[:hit[0]] for n in _walk_scope(s)):
                continue
            why = f"`{stmt.name}.__init__` reads `{hit[1]}`, which the module binds only for another platform " \
                  f"than CUDA: no instance is built there"
            for method in stmt.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method is not init \
                        and method.name != "__new__" and not any(_static(d) for d in method.decorator_list):
                    cold.append((method.lineno, method.end_lineno, why))


def _init_of(cls: ast.ClassDef):
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)


def _static(decorator) -> bool:
    name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
    return name in ("staticmethod", "classmethod")


def _locals(function) -> frozenset:
    """Names a function binds itself (or declares `global` / `nonlocal`): never the module's
    unbound ones. Nested scopes' names too: more, never fewer."""
    args = function.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in every_node(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return frozenset(names)


def _first_read(body, names: frozenset) -> tuple[int, str] | None:
    """(index, name) of the first top-level statement of `body` that reads one of `names`
    whenever it runs."""
    if not names:
        return None
    for index, stmt in enumerate(body):
        for expr in _evaluated(stmt):
            name = _read(expr, names)
            if name is not None:
                return index, name
    return None


def _evaluated(stmt) -> list:
    """The expressions a statement always evaluates (not annotations: a local's is never run)."""
    if isinstance(stmt, (ast.Expr, ast.Return, ast.AugAssign, ast.AnnAssign, ast.Assign)):
        return [stmt.value] if stmt.value is not None else []
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.items[0].context_expr]
    return []


def _read(expr, names: frozenset) -> str | None:
    """A name of `names` that evaluating `expr` always reads."""
    if isinstance(expr, ast.Name):
        return expr.id if expr.id in names and isinstance(expr.ctx, ast.Load) else None
    if isinstance(expr, ast.BoolOp):
        parts = expr.values[:1]
    elif isinstance(expr, ast.IfExp):
        parts = [expr.test]
    elif isinstance(expr, ast.Compare):
        parts = [expr.left, expr.comparators[0]]
    elif isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        parts = [expr.generators[0].iter]
    elif isinstance(expr, ast.Lambda):
        parts = expr.args.defaults + [d for d in expr.args.kw_defaults if d is not None]
    else:
        parts = [c for c in ast.iter_child_nodes(expr) if isinstance(c, (ast.expr, ast.keyword))]
    for part in parts:
        found = _read(part.value if isinstance(part, ast.keyword) else part, names)
        if found is not None:
            return found
    return None


def _walk_scope(stmt):
    """The nodes of a statement, not entering nested functions or classes."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
