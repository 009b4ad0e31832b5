"""Which lines of a function run once per call and which once per iteration of a loop, and what
each class is derived from: the per-file facts that per-request entry points (reachability.py)
need, read from the file's `ast`.

A diffusion pipeline stage's `forward(batch, server_args)` runs once per request; only its
denoising loop (`for i, t in enumerate(timesteps):`) runs every step. So for each function the
linter keeps the lines that run once per call ("straight" lines): its span, less the bodies of
its `for`/`while` loops and the functions and classes defined inside it (they are functions of
their own). A `for` header runs once (its iterable is evaluated once); a `while` test runs per
iteration, so a `while` statement is a loop from its first line. Comprehensions are not loops
here: they iterate over a request's items, not over steps.

Each loop is kept too (`loops`): its span, whether its header names the denoising schedule
(`for i, t in enumerate(timesteps)`, `for step_idx in range(len(sigmas) - 1)`), the loop it is
nested in, its own lines (its body less the loops and definitions inside it), and whether it is
a `for` over a request's data (its header names neither the schedule nor generated tokens:
`for elev, azim in zip(elevs, azims)`, `for batch_idx in range(batch_size)`). A loop
around a denoising loop (over a request's chunks, clips or samples, each of which runs a whole
schedule) is no step loop: steploops.py decides which, over the whole program.

A class's bases are kept as written, resolved through the imports where they can be
(`nn.Module` -> `torch.nn.Module`, `Generic[T]` -> `typing.Generic`, `object` ->
`builtins.object`) and as None where they cannot (a name from a star import, a call): an
unknown base may be a module (modules.py decides).

Everything returned is plain tuples: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import builtins

from .ast_annotations import dotted
from .exprguards import nullable_required, or_fallback
from .lines import last_line
from .noneguards import EITHER, none_guard
from .nodewalk import DEFINITIONS, function_code, own_nodes, every_node
from .steploops import names_generation, names_steps

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BUILTIN_NAMES = frozenset(dir(builtins))
_CALL = frozenset({ast.Call})
SELF_MADE = "<self>"  # `cls(...)`, `type(self)(...)`: the maker's own class (constructions)


class _Walk:
    def __init__(self, module: str, aliases: dict, defined: set) -> None:
        self.module = module
        self.aliases = aliases
        self.defined = defined
        self.straight: dict[str, tuple] = {}
        self.bases: dict[str, tuple] = {}
        self.spans: dict[str, tuple] = {}
        self.makes: set[tuple] = set()
        self.loops: dict[str, tuple] = {}
        # class -> {attribute: class it names}: `pool_cls = MambaPool` in the class body
        self.class_fields: dict[str, dict[str, str]] = {}

    def qualify(self, local: str) -> str:
        return f"{self.module}.{local}" if self.module else local

    def definitions(self, body, classes: list[str], function: str | None) -> None:
        """Functions and classes in a module, class or function body (same names as
        branches.py and facts.py give them)."""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local = f"{function}.{stmt.name}" if function else ".".join(classes + [stmt.name])
                straight, loops = self.once(stmt.body, stmt.lineno)
                self.straight[self.qualify(local)] = straight
                if loops:
                    self.loops[self.qualify(local)] = loops
                self.spans[self.qualify(local)] = (stmt.lineno, last_line(stmt))
                self.constructions(_own_calls(stmt), self.qualify(".".join(classes)) if classes else None,
                                   self.qualify(local), _fallback_calls(stmt))
                self.definitions(_nested(stmt.body), classes, local)
            elif isinstance(stmt, ast.ClassDef):
                names = classes + [stmt.name]
                self.bases[self.qualify(".".join(names))] = tuple(self.base(b) for b in stmt.bases)
                self.class_fields[self.qualify(".".join(names))] = self.named_classes(stmt.body)
                self.definitions(stmt.body, names, None)
            elif function is None:
                # a module- or class-level statement (`_MODEL = Encoder()`, a class attribute)
                self.constructions(own_nodes([stmt], _CALL, skip=DEFINITIONS, enter_block_definitions=False),
                                   self.qualify(".".join(classes)) if classes else None)
                # definitions under `if TYPE_CHECKING:` / `try:` at module or class level
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        self.definitions(inner, classes, None)
                for handler in getattr(stmt, "handlers", ()) or ():
                    self.definitions(handler.body, classes, None)

    def constructions(self, calls: list, maker: str | None, function: str | None = None,
                      fallbacks: dict | None = None) -> None:
        """The classes these calls of some code construct (`Mistral3Model(config)`,
        `nn.ModuleList([Layer(c) for _ in range(n)])`), as (maker, class, function, parameter):
        the class whose code it is, or None for a module-level function or statement; the
        function the call is in, or None for a module- or class-level statement; and the
        parameter whose absence the construction stands in for (`cache = plan_cache or
        PlanCache()`: exprguards.or_fallback; `fallbacks`, id of the call -> the parameter), else
        None. A function nested in a method builds for that method's class (definitions() walks
        it with the same maker).
        `cls(...)` and `type(self)(...)` in a class's code build that class or a subclass: made
        is `SELF_MADE` + the class then, which no other reader resolves (memo.py asks where a
        class is built)."""
        for node in calls:
            func = node.func
            if maker is not None and ((isinstance(func, ast.Name) and func.id == "cls") or (
                    isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type")):
                self.makes.add((maker, SELF_MADE + maker, function, None))
                continue
            made = self.base(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
            if made is None and maker is not None and isinstance(func, ast.Attribute) \
                    and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                # `self.pool_cls(...)` with `pool_cls = MambaPool` in the class body: builds that
                # class (SGLang's `HybridReqToTokenPool` makes its `MambaPool` so)
                made = self.class_fields.get(maker, {}).get(func.attr)
            if made is None and isinstance(func, (ast.Name, ast.Attribute)):
                # a name this module does not bind (imported inside the function): kept under
                # `SELF_MADE` + `?` + its name, which no reader resolves but memo_owners.py counts
                name = dotted(func)
                if name and name.rsplit(".", 1)[-1][:1].isupper():
                    self.makes.add((maker, f"{SELF_MADE}?{name}", function, (fallbacks or {}).get(id(node))))
                continue
            if _names_class(made):
                self.makes.add((maker, made, function, (fallbacks or {}).get(id(node))))

    def named_classes(self, body) -> dict[str, str]:
        """The class attributes of a class body that name a class (`pool_cls = MambaPool`,
        `runner_cls = runners.Runner`): attribute -> the class, qualified."""
        found = {}
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                made = self.base(stmt.value)
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and _names_class(made):
                    found[targets[0].id] = made
        return found

    def once(self, body, first: int) -> tuple[tuple, tuple]:
        """The line ranges of `body` (a function's, starting at its `def` line) that run once
        per call: everything but loop bodies and nested definitions; and its loops, each as
        (first line, last line, whether its header names steps, index of the loop it is in or
        -1, its own line ranges: the lines that run once per iteration of it and of no inner
        loop)."""
        owned: list[list[list[int]]] = [[]]  # [0]: the function's own lines; [i + 1]: loop i's
        loops: list[list] = []

        def add(owner: int, start: int, end: int) -> None:
            out = owned[owner + 1]
            if start > end:
                return
            if out and start <= out[-1][1] + 1:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])

        def enter(stmt, owner: int, steps: bool, items: bool = False) -> int:
            loops.append([stmt.lineno, last_line(stmt), steps, owner, items])
            owned.append([])
            return len(loops) - 1

        def walk(stmts, owner: int) -> None:
            for stmt in stmts:
                if isinstance(stmt, _DEFS):
                    continue
                if isinstance(stmt, (ast.For, ast.AsyncFor)):
                    # the header runs once per iteration of the enclosing code (the iterable is
                    # evaluated once)
                    add(owner, stmt.lineno, stmt.body[0].lineno - 1 if stmt.body[0].lineno > stmt.lineno else stmt.lineno)
                    steps = names_steps(stmt.target) or names_steps(stmt.iter)
                    # a `for` over data (views, prompts, a batch's items): no step loop unless
                    # steploops.py finds per-step work in it; not one over tokens (generation)
                    items = not steps and not names_generation(stmt.target) and not names_generation(stmt.iter)
                    inner = enter(stmt, owner, steps, items)
                    walk(stmt.body, inner)
                    if stmt.orelse:
                        walk(stmt.orelse, owner)
                    continue
                if isinstance(stmt, ast.While):
                    # the test runs per iteration
                    inner = enter(stmt, owner, names_steps(stmt.test))
                    add(inner, stmt.lineno, stmt.body[0].lineno - 1 if stmt.body[0].lineno > stmt.lineno else stmt.lineno)
                    walk(stmt.body, inner)
                    if stmt.orelse:
                        walk(stmt.orelse, owner)
                    continue
                blocks = _blocks(stmt)
                if not blocks:
                    add(owner, stmt.lineno, last_line(stmt))
                    continue
                add(owner, stmt.lineno, blocks[0][0].lineno - 1 if blocks[0][0].lineno > stmt.lineno else stmt.lineno)
                for block in blocks:
                    walk(block, owner)

        add(-1, first, body[0].lineno - 1 if body and body[0].lineno > first else first)
        walk(body, -1)
        straight = tuple((start, end) for start, end in owned[0])
        return straight, tuple((start, end, steps, parent, tuple((a, b) for a, b in owned[index + 1]), items)
                               for index, (start, end, steps, parent, items) in enumerate(loops))

    def base(self, node) -> str | None:
        if isinstance(node, ast.Subscript):  # `Generic[T]`, `AttentionImplBase[T]`
            node = node.value
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root in self.aliases:
            target = self.aliases[root]
        elif root in self.defined:
            target = self.qualify(root)
        elif root in _BUILTIN_NAMES and not rest:
            target = f"builtins.{root}"
        else:
            return None
        return f"{target}.{rest}" if rest else target


def _names_class(made: str | None) -> bool:
    """A qualified name that is an in-tree or library class's by its form (capitalized, not a builtin)."""
    return bool(made) and made.rsplit(".", 1)[-1][:1].isupper() and not made.startswith("builtins.")


def _blocks(stmt) -> list[list]:
    """The statement lists inside a compound statement (`if`, `with`, `try`, `match`)."""
    out = []
    for field in ("body", "orelse", "finalbody"):
        inner = getattr(stmt, field, None)
        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
            out.append(inner)
    for handler in getattr(stmt, "handlers", ()) or ():
        if handler.body:
            out.append(handler.body)
    for case in getattr(stmt, "cases", ()) or ():
        if case.body:
            out.append(case.body)
    out.sort(key=lambda block: block[0].lineno)
    return out


def _nested(body) -> list:
    """The function and class definitions anywhere inside a function body (not inside other
    definitions: those are walked from their own parent)."""
    found = []
    pending = list(reversed(body))
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, _DEFS):
            found.append(stmt)
            continue
        for block in reversed(_blocks(stmt)):  # loop bodies too
            pending.extend(reversed(block))
    return found


def file_loops(tree: ast.Module, module: str, aliases: dict):
    """({function: ((start, end), ...) of the lines that run once per call},
    {class: (base as a qualified name, or None where it cannot be told, ...)},
    {function: (first line, last line)},
    ((maker class or None, constructed class as a qualified name), ...))."""
    return file_loop_facts(tree, module, aliases)[:4]


def _fallback_calls(function) -> dict:
    """{id of a call: parameter} for the calls that run only when the caller leaves a parameter
    out: the fallback of the function's own `x = p or PlanCache()` statements
    (exprguards.or_fallback) and the block of `if p is None: p = PlanCache()` (noneguards.py)."""
    found = {}
    nullable = params = None
    for node in function_code(function):
        kind = type(node)
        if kind is not ast.If and (kind is not ast.Assign and kind is not ast.Return
                                   or type(node.value) is not ast.BoolOp):
            continue
        if nullable is None:
            args = function.args
            nullable = nullable_required(args)
            params = frozenset(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
        if kind is ast.If:
            guard = none_guard(node, params, nullable)
            if guard is None or EITHER in guard[2]:
                continue
            block = node.body if guard[0] == node.body[0].lineno else node.orelse
            found.update((id(call), guard[2]) for stmt in block for call in every_node(stmt) if type(call) is ast.Call)
            continue
        shaped = or_fallback(node, function, nullable)
        if shaped is not None:
            found.update((id(call), shaped[0]) for call in every_node(shaped[1]) if type(call) is ast.Call)
    return found


def _own_calls(function) -> list:
    """The calls of a function's own code, its lambdas' included, not its nested definitions'
    (definitions() walks those on their own), in no particular order: nodewalk.function_code,
    which finds lambdas without entering them, and each lambda's own calls."""
    nodes = function_code(function)
    calls = [node for node in nodes if type(node) is ast.Call]
    for node in nodes:
        if type(node) is ast.Lambda:
            calls.extend(own_nodes([node], _CALL, skip=DEFINITIONS, enter_block_definitions=False))
    return calls


def file_loop_facts(tree: ast.Module, module: str, aliases: dict):
    """file_loops(), and {function: its loops (see _Walk.once), for functions that have any}."""
    defined = {n.name for n in tree.body if isinstance(n, _DEFS)}
    walk = _Walk(module, aliases, defined)
    walk.definitions(tree.body, [], None)
    makes = tuple(sorted(walk.makes, key=lambda m: (m[0] or "", m[1], m[2] or "", m[3] or "")))
    return walk.straight, walk.bases, walk.spans, makes, walk.loops
