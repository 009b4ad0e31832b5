"""Names that hold a decided test: `self.sync_dbo_comm = current_platform.is_rocm()`.

A class often evaluates a platform (or switch) test once, in `__init__`, and keeps the answer in
a field under a name that says what it is for, not which platform it means:

    def __init__(self, ...):
        self.sync_dbo_comm = current_platform.is_rocm()

    def _sync_dbo_comm_if_needed(self):
        if self.sync_dbo_comm and dbo_enabled():    # ROCm only
            torch.cuda.current_stream().synchronize()

(vLLM's DeepEP high-throughput prepare/finalize). branches.py reads the name `sync_dbo_comm`,
which says nothing, so the test was unknown and the stream sync per-step. Here a field whose every
assignment in its class is a test branches.Conditions decides, all to the same value, carries
that value (and why) into the class's own branch tests.

Conservative on purpose: a field also assigned anything else in the class (another method, a
tuple unpacking, an augmented assignment), or stored on any other receiver in the file
(`layer.sync_dbo_comm = True`), is left unknown. What this per-file reading cannot see: a store
from another file, or a subclass elsewhere that assigns the field again (not seen in vLLM 0.33 /
SGLang 0.5.23 for the fields it decides).

The same holds for a local assigned once: `check_page_mappings = ps > 1 and
self.allocator.debug_mode` then `if check_page_mappings:` (SGLang's SWA allocator checks its page
mappings only in its debug mode): a local bound by exactly one plain assignment in its function
(no other store: loop target, `with ... as`, `:=`, augmented, deleted, global/nonlocal) carries
the test it was given; so does such a local stored into a field (`supports_gpu_triton = is_cuda()
or is_hip() or is_xpu()` then `self._use_triton_compact_rebuild = supports_gpu_triton`: SGLang's
DFlash worker keeps its two-sync compact rebuild only for platforms without GPU Triton).

And a module-level name bound once: `_validate_indices = envs.SGLANG_VALIDATE_..._INDICES.get()`
then `if _validate_indices and not in_capture:` in a method (SGLang's mamba backend validates its
replay indices only when that check switch is on). Any other binding of the name anywhere in the
module (a local, a loop target, `global`, an import, a definition) leaves it unknown; a
parameter of the same name would shadow it unseen (none in vLLM 0.33 / SGLang 0.5.23).
"""

from __future__ import annotations

import ast
import weakref

from .classinfo import module_statements
from .nodewalk import function_code, nodes_breadth_first

# the nodes read off a store's target or a test (nodewalk.py: cheaper than `ast.walk`)
_ATTRIBUTE = frozenset({ast.Attribute})
_NAME = frozenset({ast.Name})


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _targets(node) -> list:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def _methods(cls: ast.ClassDef):
    return [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _statements(body):
    """Every statement under `body`, nested blocks and definitions included. Stores into
    attributes are statements (an assignment's targets), so walking statements alone finds all
    of them at a fraction of `ast.walk`'s cost: this runs for every class and file of the tree."""
    pending = list(body)
    while pending:
        stmt = pending.pop()
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                pending.extend(inner)
        for handler in getattr(stmt, "handlers", ()):
            pending.extend(handler.body)
        for case in getattr(stmt, "cases", ()):
            pending.extend(case.body)


def class_fields(cls: ast.ClassDef, evaluate, foreign: frozenset) -> dict[str, tuple[bool, str]]:
    """{field: (value, why)} for the fields of `cls` that only ever hold one decided test.
    `evaluate` is branches.Conditions.evaluate; `foreign` the attribute names the file stores on
    receivers other than `self` (those fields may be changed from outside)."""
    values: dict[str, list] = {}
    literals: dict[str, list] = {}  # field -> its stores of `True` / `False` (the statements)
    for method in _methods(cls):
        for node in _statements(method.body):
            for target in _targets(node):
                # tuple targets and augmented stores hold values no single test decides
                for inner in nodes_breadth_first(target, _ATTRIBUTE):
                    name = _self_attr(inner)
                    if name is None:
                        continue
                    plain = inner is target and isinstance(node, (ast.Assign, ast.AnnAssign)) \
                        and getattr(node, "value", None) is not None
                    if plain and type(node.value) is ast.Constant and type(node.value.value) is bool:
                        literals.setdefault(name, []).append((node, method))
                    stored = node.value if plain else None
                    if type(stored) is ast.Name:
                        # `gpu_triton = is_cuda() or is_hip()` then `self.use_triton = gpu_triton`:
                        # a local of the method bound once holds the test it was given
                        stored = _bound_once(method)[0].get(stored.id, stored)
                    values.setdefault(name, []).append(evaluate(stored) if plain else (None, ""))
    fields = {}
    for name, results in values.items():
        if name in foreign:
            continue
        first = results[0]
        if first[0] is None or not first[1] or any(value is not first[0] for value, _ in results):
            continue
        fields[name] = (first[0], f"`self.{name}` is only ever set from a decided test: {first[1]}")
    fields.update(_off_flags(cls, values, literals, evaluate, foreign))
    return fields


# the reasons (branches.Conditions) of an arm that does run, only not in an ordinary step: a
# `True` stored there (`if capturing: self.folds_commit = True`) holds in the steps after it
_RUNS_AT_TIMES = ("CUDA-graph capture", "no ordinary step", "false while serving")


def _off_flags(cls, values: dict, literals: dict, evaluate, foreign: frozenset) -> dict:
    """The fields stored only `True` / `False` literals, every `True` in an arm a CUDA GPU never
    takes (`if self.backend_name in ["CPU_ATTN"]: ... self.post_process = True`), and `False`
    at least once: false while serving on CUDA. Not an arm that runs at other times (CUDA-graph
    capture, a rare event): the value stored there holds afterwards. Read only when some field
    is stored that way."""
    wanted = {}
    methods = []  # the methods holding a `True` store of a candidate, each once
    for name, stores in literals.items():
        if name in foreign or len(stores) != len(values[name]):
            continue
        trues = [(s, m) for s, m in stores if s.value.value is True]
        if trues and len(trues) < len(stores):
            wanted.update((id(s), name) for s, _ in trues)
            methods.extend(m for _, m in trues if m not in methods)
    if not wanted:
        return {}
    found: dict[str, list] = {}
    tests: dict = {}  # id(test) -> its (value, why), evaluated only around a wanted store
    for method in methods:
        _arms(method.body, (), wanted, found, lambda test: tests.get(id(test)) or tests.setdefault(
            id(test), evaluate(test)))
    fields = {}
    for name in set(wanted.values()):
        whys = found.get(name, [])
        if len(whys) == sum(1 for n in wanted.values() if n == name) and all(whys) \
                and not any(mark in why for why in whys for mark in _RUNS_AT_TIMES):
            fields[name] = (False, f"`self.{name}` is set true only where CUDA never runs: {whys[0]}")
    return fields


def _arms(body, around: tuple, wanted: dict, found: dict, evaluate) -> None:
    """Records, for each wanted store under `body`, why its arm never runs on CUDA (or None).
    `around`: the (test, arm is its body) of the `if` / `while` arms the block lies in."""
    for stmt in body:
        name = wanted.get(id(stmt))
        if name is not None:
            found.setdefault(name, []).append(_ruled_out(around, evaluate))
        if isinstance(stmt, (ast.If, ast.While)):
            _arms(stmt.body, around + ((stmt.test, True),), wanted, found, evaluate)
            _arms(stmt.orelse, around + ((stmt.test, False),), wanted, found, evaluate)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _arms(inner, around, wanted, found, evaluate)
        for handler in getattr(stmt, "handlers", ()):
            _arms(handler.body, around, wanted, found, evaluate)
        for case in getattr(stmt, "cases", ()):
            _arms(case.body, around, wanted, found, evaluate)


def _ruled_out(around: tuple, evaluate) -> str | None:
    for test, is_body in around:
        value, why = evaluate(test)
        if why and value is (not is_body):
            return why
    return None


def foreign_stores(tree: ast.Module) -> frozenset:
    """Attribute names the module stores on a receiver other than `self` (`obj.flag = True`)."""
    names = set()
    for node in module_statements(tree):
        for target in _targets(node):
            for inner in nodes_breadth_first(target, _ATTRIBUTE):
                if _self_attr(inner) is None:
                    names.add(inner.attr)
    return frozenset(names)


_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_TESTED = (ast.If, ast.While, ast.Assert, ast.IfExp)
# function node -> its candidates; `branches` and `constargs` both ask, with their own evaluators
_candidates_of: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _tested_locals(function) -> dict[str, ast.expr]:
    """{local: the value it is bound to} for the locals of `function` bound once, by a plain
    assignment, and read by a test (`if`, `while`, `assert`, a conditional expression) or passed
    to a call: only those can matter, and evaluating the others is most of the cost."""
    bound, wanted = _bound_once(function)
    return {name: value for name, value in bound.items() if name in wanted}


def _bound_once(function) -> tuple[dict[str, ast.expr], set]:
    """({local: the value it is bound to} for the locals of `function` bound once, by a plain
    assignment; the names a test reads or a call is passed)."""
    cached = _candidates_of.get(function)
    if cached is not None:
        return cached
    stores: dict[str, list] = {}
    wanted: set[str] = set()
    plain: set = set()  # the targets of plain assignments, counted with their value
    for node in function_code(function):  # in the walk's order: an assignment before its target
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load and node not in plain:
                stores.setdefault(node.id, []).append(None)
        elif kind in _DEFINITION:
            stores.setdefault(getattr(node, "name", ""), []).append(None)
        elif kind in _TESTED:
            wanted.update(n.id for n in nodes_breadth_first(node.test, _NAME))
        elif kind is ast.Call:
            wanted.update(a.id for a in node.args if type(a) is ast.Name)
            wanted.update(k.value.id for k in node.keywords if type(k.value) is ast.Name)
        elif kind is ast.Global or kind is ast.Nonlocal:
            for name in node.names:
                stores.setdefault(name, []).append(None)
        elif kind is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
            stores.setdefault(node.targets[0].id, []).append(node.value)
            plain.add(node.targets[0])
    args = function.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    found = {name: values[0] for name, values in stores.items()
             if name not in params and len(values) == 1 and values[0] is not None}
    _candidates_of[function] = found, wanted
    return found, wanted


def function_locals(function, evaluate) -> dict[str, tuple[bool, str]]:
    """{local: (value, why)} for the locals of `function` bound once, to a decided test."""
    found = {}
    for name, bound in _tested_locals(function).items():
        value, why = evaluate(bound)
        if value is not None and why:
            found[name] = (value, f"`{name}` is set only from a decided test: {why}")
    return found


def module_globals(tree: ast.Module, evaluate) -> dict[str, tuple[bool, str]]:
    """{name: (value, why)} for the names the module binds once, at its top level, to a
    decided test, and nowhere else (module_statements: statements only, no whole-file walk)."""
    bound = {}
    for stmt in tree.body:
        if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name:
            bound[stmt.targets[0].id] = stmt
    if not bound:
        return {}
    others: set[str] = set()
    for stmt in module_statements(tree):
        kind = type(stmt)
        if kind is ast.Global or kind is ast.Nonlocal:
            others.update(stmt.names)
        elif kind in (ast.Import, ast.ImportFrom):
            others.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            others.add(stmt.name)
        else:
            for target in _targets(stmt) + [getattr(stmt, "target", None)] + \
                    [item.optional_vars for item in getattr(stmt, "items", ())]:
                if target is not None and bound.keys():
                    others.update(n.id for n in nodes_breadth_first(target, _NAME) if bound.get(n.id) is not stmt)
    found = {}
    for name, stmt in bound.items():
        if name in others:
            continue
        value, why = evaluate(stmt.value)
        if value is not None and why:
            found[name] = (value, f"`{name}` is set only from a decided test: {why}")
    return found
