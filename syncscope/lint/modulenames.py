"""Kernels bound at import: a module-level name that is never None on a CUDA GPU.

Serving code picks its kernels once, when a module is imported, and keeps the pick in a
module-level name; a function then falls back to plain PyTorch only when no kernel was bound:

    # kernels/ops/sampling/renorm.py
    if is_cuda():
        top_k_renorm_prob = LazyImport("flashinfer.sampling", "top_k_renorm_probs")
    elif is_npu():
        ...
    else:
        top_k_renorm_prob = None

    # speculative/dflash_utils.py
    from sglang.kernels.ops.sampling.renorm import top_k_renorm_prob

    def _dflash_top_k_renorm_prob(probs, top_ks):
        if top_k_renorm_prob is not None:
            return top_k_renorm_prob(probs, top_ks)
        ...
        max_top_k = int(top_ks.max().item())      # the fallback: never runs on CUDA

(SGLang's DFlash verify). constargs.py and flagguards.py decide tests on parameters; a module's
name is no parameter, and the name that decides the test lives in another file, so the fallback
and every call that reaches it were reported per step. Here each file records (`NoneSites`, as
branches.py walks it):

* the bindings of its top-level names that may hold on a CUDA GPU: a module-level `if` is
  walked the way branches.py evaluates it (`if is_cuda():` takes its body only, `elif is_npu():`
  never runs), an `except` handler not at all (an error path, as everywhere in the scope: the
  kernel's package is installed). A `def`, a class, an imported module, a literal, a lambda:
  never None; `None`: None; `from m import f` or `g = f`: what `m.f` (or `f`) is; a call: never
  None when it constructs a class of the tree (`LazyImport(...)`); anything else (an attribute,
  a call of a function, a store in a loop or under `global`): unknown. Only names that are
  bound conditionally, more than once, or by an assignment are recorded; one bound once by a
  `def`, a class or an import is resolved from the whole-program tables;
* the lines of each function that run only when such a name is None: the body of `if k is
  None [and ...]:`, the `else` of `if k is not None:`, and the rest of the block after `if k is
  not None: ... return` (no `else`), for a `k` the function neither binds nor takes as a
  parameter.

The whole-program pass (`name_lines`) makes those lines cold when every binding of the name, followed
through imports, is never None on CUDA. A name from a package outside the tree (`from sgl_kernel
import f`) is the installed package's function. Not decided: a truth test (`if not k:`; an
object's `__bool__` may say False), a conditional expression, a name another module assigns
(`renorm.top_k_renorm_prob = None` from outside), which a per-file reading cannot see.

Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .classinfo import module_statements
from .nodewalk import every_node

NEVER_NONE = ("value",)
IS_NONE = ("none",)
UNKNOWN = ("unknown",)
_MAX_HOPS = 8
_LITERALS = (ast.Constant, ast.JoinedStr, ast.Lambda, ast.List, ast.Tuple, ast.Dict, ast.Set,
             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _dotted(node, module: str | None, aliases: dict) -> str | None:
    """`a.b.c` with its first name qualified through the module's imports (or the module)."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    head = aliases.get(head) or (f"{module}.{head}" if module else head)
    return f"{head}.{rest}" if rest else head


def _value(node, module: str | None, aliases: dict) -> tuple:
    """What an assigned value is, as far as None goes."""
    if isinstance(node, ast.Constant) and node.value is None:
        return IS_NONE
    if isinstance(node, _LITERALS):
        return NEVER_NONE
    if isinstance(node, ast.Name):
        target = _dotted(node, module, aliases)
        return ("name", target) if target else UNKNOWN
    if isinstance(node, ast.Call):
        target = _dotted(node.func, module, aliases)
        return ("call", target) if target else UNKNOWN
    return UNKNOWN


def module_bindings(tree: ast.Module, module: str | None, aliases: dict, evaluate) -> dict[str, tuple]:
    """{name: (binding, ...)} of the top-level names bound on a CUDA GPU conditionally, more than
    once, or by an assignment (`evaluate`: branches.Conditions.evaluate, with the module's own
    decided names)."""
    found: dict[str, list] = {}
    plain: set[str] = set()  # bound once, unconditionally, by a def, a class or an import

    def bind(name: str, what: tuple, nested: bool, assigned: bool) -> None:
        found.setdefault(name, []).append(what)
        if not nested and not assigned:
            plain.add(name)

    def walk(body, nested: bool) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind is ast.If:
                value = evaluate(stmt.test)[0]
                if value is not False:
                    walk(stmt.body, True)
                if value is not True:
                    walk(stmt.orelse, True)
            elif kind is ast.Try or kind.__name__ == "TryStar":
                # an `except` handler is an error path: the import it guards works on CUDA
                walk(stmt.body, True)
                walk(stmt.orelse, True)
                walk(stmt.finalbody, True)
            elif kind is ast.With:
                walk(stmt.body, True)
                for item in stmt.items:
                    for sub in every_node(item.optional_vars) if item.optional_vars is not None else ():
                        if isinstance(sub, ast.Name):
                            bind(sub.id, UNKNOWN, True, True)
            elif kind is ast.Import:
                for alias in stmt.names:
                    bind(alias.asname or alias.name.split(".")[0], NEVER_NONE, nested, False)
            elif kind is ast.ImportFrom:
                for alias in stmt.names:
                    local = alias.asname or alias.name
                    if alias.name == "*":
                        continue
                    source = f"{stmt.module}.{alias.name}" if stmt.level == 0 and stmt.module else aliases.get(local)
                    bind(local, ("name", source) if source else UNKNOWN, nested, False)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                bind(stmt.name, NEVER_NONE, nested, False)
            elif kind is ast.Assign or (kind is ast.AnnAssign and stmt.value is not None):
                targets = stmt.targets if kind is ast.Assign else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        bind(target.id, _value(stmt.value, module, aliases), nested, True)
                    else:  # unpacking: no single value
                        for sub in every_node(target):
                            if isinstance(sub, ast.Name):
                                bind(sub.id, UNKNOWN, nested, True)
            elif kind is not ast.Expr:
                # loops, augmented stores, `del`, `match`: whatever they store is unknown
                for sub in every_node(stmt):
                    if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                        bind(sub.id, UNKNOWN, True, True)

    walk(tree.body, False)
    # a function's `global k` may store anything into it
    for stmt in module_statements(tree):
        if type(stmt) is ast.Global:
            for name in stmt.names:
                found.setdefault(name, []).append(UNKNOWN)
    return {name: tuple(dict.fromkeys(whats)) for name, whats in found.items()
            if not (name in plain and len(whats) == 1)}


def top_names(tree: ast.Module, aliases: dict) -> frozenset:
    """Every name the module binds at its top level (or imports anywhere at its top level)."""
    names = set(aliases)
    pending = list(tree.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                names.update(n.id for n in every_node(target) if isinstance(n, ast.Name))
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            pending.extend(stmt.body)
            pending.extend(getattr(stmt, "orelse", ()))
            pending.extend(getattr(stmt, "finalbody", ()))
            for handler in getattr(stmt, "handlers", ()):
                pending.extend(handler.body)
    return frozenset(names)


def _none_test(test) -> tuple[str, bool] | None:
    """(name, True) for `k is None` (or an `and` holding it), (name, False) for `k is not None`."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for part in test.values:
            found = _none_test(part)
            if found is not None and found[1]:
                return found
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return test.left.id, isinstance(test.ops[0], ast.Is)
    return None


def none_block(stmt: ast.If, rest: tuple | None, names: frozenset) -> tuple[str, int, int] | None:
    """(name, first line, last line) of the code after or under `stmt` that runs only when the
    module-level name it tests is None, or None. `rest`: the first and last statement after
    `stmt` in its block, if any. A cheap test of shape first: this runs for every `if`."""
    found = _none_test(stmt.test)
    if found is None or found[0] not in names:
        return None
    name, is_none = found
    if is_none:
        body = stmt.body
    elif stmt.orelse:
        body = stmt.orelse
    elif rest is not None and stmt.body and isinstance(stmt.body[-1], _TERMINAL):
        first, last = rest
        return name, first.lineno, getattr(last, "end_lineno", None) or last.lineno
    else:
        return None
    return name, body[0].lineno, getattr(body[-1], "end_lineno", None) or body[-1].lineno


def binds(function, name: str) -> bool:
    """Whether `function` (or a function nested in it) takes `name` as a parameter or stores
    into it: then the test may read a local, not the module's name."""
    for node in every_node(function):
        kind = type(node)
        if kind is ast.Name and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if kind is ast.arg and node.arg == name:
            return True
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and node.name == name:
            return True
        if kind in (ast.Import, ast.ImportFrom) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            return True
    return False


class NoneSites:
    """One file's part: its names' bindings, and the lines of its functions that run only when
    a module-level name is None ({function: [(start, end, qualified name)]}), as branches.py
    walks the file."""

    def __init__(self, tree: ast.Module, module: str | None, aliases: dict, evaluate) -> None:
        self.module = module
        self.aliases = aliases
        self.names = top_names(tree, aliases)
        self.bindings = module_bindings(tree, module, aliases, evaluate)
        self.guards: dict[str, list[tuple[int, int, str]]] = {}

    def visit(self, stmt: ast.If, rest, outer, function: str) -> None:
        """An `if` of `function` (nested in the outermost function `outer`), `rest` the first
        and last statement after it in its block, if any."""
        found = none_block(stmt, rest, self.names)
        if found is None or binds(outer, found[0]):
            return
        name, start, end = found
        if name in self.bindings or name not in self.aliases:  # this module's own name
            target = f"{self.module}.{name}" if self.module else name
        else:
            target = self.aliases[name]
        self.guards.setdefault(function, []).append((start, end, target))


class ModuleNames:
    """The whole-program view: is a qualified module-level name ever None on a CUDA GPU?"""

    def __init__(self, program, results: dict) -> None:
        self.program = program
        self.bindings: dict[str, dict] = {}
        for result in results.values():
            if result.module is not None and getattr(result, "name_bindings", None):
                self.bindings.setdefault(result.module, result.name_bindings)
        self.packages = frozenset(module.split(".")[0] for module in program.modules)
        self.memo: dict[str, bool] = {}

    def never_none(self, qualname: str | None, hops: int = 0) -> bool:
        if qualname is None or hops > _MAX_HOPS:
            return False
        known = self.memo.get(qualname)
        if known is not None:
            return known
        self.memo[qualname] = False  # a cycle of aliases decides nothing
        value = self._decide(qualname, hops)
        self.memo[qualname] = value
        return value

    def _decide(self, qualname: str, hops: int) -> bool:
        program = self.program
        module, _, name = qualname.rpartition(".")
        whats = self.bindings.get(module, {}).get(name)
        if whats is not None:  # bound under a platform test, in a `try`, by an assignment
            return all(self._binding(what, hops) for what in whats)
        if qualname in program.modules or qualname in program.functions or qualname in program.classes:
            return True
        if module not in program.modules:
            # a package outside the tree (`from sgl_kernel import f`): its function or class; a
            # module of the tree that is not linted (or a name of no module) is not known
            return bool(module) and qualname.split(".")[0] not in self.packages
        target = program.modules[module].get(name)
        return target is not None and target != qualname and self.never_none(target, hops + 1)

    def _binding(self, what: tuple, hops: int) -> bool:
        kind = what[0]
        if kind == "value":
            return True
        if kind == "name":
            return self.never_none(what[1], hops + 1)
        if kind == "call":  # a class of the tree constructs an object, never None
            return self.program.chase(what[1], want_class=True) is not None
        return False


def name_lines(program, results: dict) -> dict[str, list]:
    """{path: [(start, end, why)]}: the lines that run only when a module-level name is None,
    where that name is never None on a CUDA GPU."""
    names = None
    found: dict[str, list] = {}
    for path, result in results.items():
        guards = getattr(result, "name_guards", None)
        if not guards:
            continue
        if names is None:
            names = ModuleNames(program, results)
        for blocks in guards.values():
            for start, end, target in blocks:
                if names.never_none(target):
                    short = target.rsplit(".", 1)[-1]
                    found.setdefault(path, []).append(
                        (start, end, f"runs only when `{short}` is None, and it is bound on CUDA (`{target}`)"))
    return found
