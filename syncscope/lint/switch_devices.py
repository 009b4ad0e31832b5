"""Devices a switch picks: a field built on a local device that is the host under the default
configuration.

    device = "cpu"
    if is_npu():
        device = "npu"
    elif envs.SGLANG_MOONCAKE_CUSTOM_MEM_POOL.get() == "INTRA_NODE_NVLINK":
        device = "cuda"
    self.cached_tokens = torch.zeros((size, 16), device=device)

(SGLang's PD-disaggregation `MetadataBuffers`.) The local `device` is bound only to device
literals; the arm that picks another platform never runs on a CUDA GPU (branches.Conditions), and
the arm that picks the GPU runs only when an environment switch is on. When the tree declares that
variable with an off default (`SGLANG_MOONCAKE_CUSTOM_MEM_POOL = EnvStr(None)`, a declaration
call of `[switches] env-declarations`) and never sets it itself (`envs.X.set(...)`,
`envs.X.override(...)`, `os.environ["X"] = ...`, `os.environ.setdefault("X", ...)`), the field is
host data under the default configuration, like any field built with `device="cpu"`. So is a
field built on `self.other.device` of such a field (`self.kv_checksum = torch.zeros(...,
device=self.bootstrap_room.device)`).

Conservative: any other binding of the local (a parameter, a loop target, an unpacking, a value
that is no device literal, `+=`), or an arm under any other test (`if cond:` on data, a config
parameter, an `else` of an environment test) that picks a device, leaves the local unresolved, and
the field keeps what classinfo.class_hints says of it. Each file records its fields and the
variables they wait on, and the environment variables it declares off and sets
(`switch_facts`); the run decides over the whole tree (`switch_field_hints`).

Everything recorded is plain tuples: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import fnmatch
import re

from . import provenance as P
from .nodewalk import every_node

_SETS = (
    re.compile(r"\b([A-Z][A-Z0-9_]+)\s*\.\s*(?:set|override)\s*\("),  # `envs.X.set(True)`
    re.compile(r"""environ\s*\[\s*["']([A-Z][A-Z0-9_]+)["']\s*\]\s*="""),  # `os.environ["X"] = "1"`
    re.compile(r"""(?:setdefault|putenv)\s*\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
)
# what each of `_SETS` needs in the text
_SETS_NEED = (re.compile(r"\.\s*(?:set|override)\s*\(").search, lambda text: "environ" in text,
              lambda text: "setdefault" in text or "putenv" in text)
_DECLARED = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*=[ \t]*([A-Za-z_][\w.]*)\(", re.MULTILINE)
_OFF_LITERALS = (None, False, 0, "")
# a local given the host's device (`device = "cpu"`, `dev = torch.device("cpu")`): the files
# `_fields` reads (a local no such line binds is never the host here)
_HOST_LOCAL = re.compile(r"""^[ \t]*(?:self\.)?[A-Za-z_]\w*[ \t]*=[ \t]*(?:torch\.device\()?["']cpu""", re.MULTILINE)


def switch_facts(tree: ast.Module, text: str, library) -> tuple:
    """(fields, declared off, set, switch functions, switched spans): {"Class.attr":
    (environment variables)} of the fields built on a local device that is the host unless those
    switches are on; the environment variables this file declares with an off default; those it
    sets; and env_switches.env_facts' two tables."""
    patterns = library.env_declarations
    declared = tuple(sorted(_declared_off(tree, text, patterns))) if patterns and "(" in text else ()
    changed = tuple(sorted({m.group(1) for pattern in _sets_in(text) for m in pattern.finditer(text)}))
    fields = _fields(tree, library) if _HOST_LOCAL.search(text) else {}
    from .env_switches import env_facts

    functions, spans = env_facts(tree, text)
    return fields, declared, changed, functions, spans


def _sets_in(text: str) -> tuple:
    """The `_SETS` patterns that can match `text`: each needs words most files lack, found by a
    cheaper search first (the first pattern tried at every capital letter cost ~1% of a run)."""
    return tuple(pattern for pattern, needs in zip(_SETS, _SETS_NEED) if needs(text))


def switch_field_hints(results: dict) -> dict[str, int]:
    """"Class.attr" -> HOST for the fields every switch of which the tree declares off and never
    sets: the default configuration keeps them on the host."""
    off: set[str] = set()
    changed: set[str] = set()
    waiting: list[dict] = []
    for result in results.values():
        facts = getattr(result, "switch_facts", None) or ({}, (), ())
        waiting.append(facts[0])
        off.update(facts[1])
        changed.update(facts[2])
    off -= changed
    return {key: P.HOST for fields in waiting for key, switches in fields.items() if set(switches) <= off}


def _declared_off(tree: ast.Module, text: str, patterns) -> set[str]:
    """`SGLANG_X = EnvStr(None)` / `EnvBool(False)` in a module or class body: the upper-case
    name is an environment variable whose default leaves it off."""
    if not any(fnmatch.fnmatchcase(m.group(2).rsplit(".", 1)[-1], p) for m in _DECLARED.finditer(text)
               for p in patterns):
        return set()
    found = set()
    bodies = [tree.body] + [node.body for node in every_node(tree) if isinstance(node, ast.ClassDef)]
    for body in bodies:
        for stmt in body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id.isupper() and isinstance(stmt.value, ast.Call)):
                continue
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            default = stmt.value.args[0] if stmt.value.args else \
                next((k.value for k in stmt.value.keywords if k.arg == "default"), None)
            if isinstance(default, ast.Constant) and default.value in _OFF_LITERALS and default.value is not True:
                found.add(stmt.targets[0].id)
    return found


def _fields(tree: ast.Module, library) -> dict[str, tuple]:
    from .branches import Conditions
    from .classinfo import _classes, _from_value, _is_self_attribute, assignments

    conditions = Conditions(library)
    found: dict[str, tuple] = {}
    for cls in _classes(tree):
        waits: dict[str, set[str]] = {}  # attr -> switches, for fields built on a switched local
        other: set[str] = set()  # attrs also given something not known to be host data
        through: dict[str, str] = {}  # attr -> the field whose `.device` it is built on
        naming: set[str] = set()  # device fields bound in arms: "attr.device" names their device
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            places = None  # the method's device locals and fields bound in its arms
            for target, value, _ in assignments(method):
                if not _is_self_attribute(target) or value is None:
                    continue
                if places is None:
                    places = device_locals(method, conditions, library)
                if "self." + target.attr in places:  # `self.dev = "cpu"` in one arm, a GPU in an arm ruled out
                    waits.setdefault(target.attr, set()).update(places["self." + target.attr])
                    naming.add(target.attr)
                    continue
                if isinstance(value, ast.Constant):
                    continue
                device = _device_keyword(value)
                if isinstance(device, ast.Name) and device.id in places:
                    waits.setdefault(target.attr, set()).update(places[device.id])
                elif isinstance(device, ast.Attribute) and device.attr == "device" and _is_self_attribute(device.value):
                    through[target.attr] = device.value.attr
                elif _is_self_attribute(device):  # `device=self.dev`, a device field
                    through[target.attr] = device.attr
                elif _from_value(value) != P.HOST:
                    other.add(target.attr)
        for attr, source in through.items():
            if source in waits and attr not in other:
                waits.setdefault(attr, set()).update(waits[source])
        found.update({f"{cls.name}.{attr}": tuple(sorted(s)) for attr, s in waits.items() if attr not in other})
        found.update({f"{cls.name}.{attr}.device": found[f"{cls.name}.{attr}"] for attr in naming
                      if f"{cls.name}.{attr}" in found})
    return found


def _device_keyword(value) -> ast.AST | None:
    """The `device=` of a torch call (`torch.zeros(..., device=d)`, `torch.full(...)`)."""
    if not isinstance(value, ast.Call):
        return None
    root = value.func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not (isinstance(root, ast.Name) and root.id == "torch"):
        return None
    return next((k.value for k in value.keywords if k.arg == "device"), None)


def device_locals(function, conditions, library) -> dict[str, frozenset]:
    """Locals of `function` that hold the host's device under the default configuration: name ->
    the environment switches that must stay off (empty: the host on CUDA whatever is set). Fields
    the method binds the same way come as "self.attr"."""
    bindings: dict[str, list] = {}  # name -> [(value, tests that hold where it is bound, top index)]
    spoiled: set[str] = set()
    asserted: dict[str, tuple] = {}  # ast.dump(E) -> (truth, top index) of a top-level `assert [not] E`
    args = function.args
    spoiled.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))

    def spoil(node) -> None:  # every name a statement's own parts (not its blocks) bind
        for sub in every_node(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                spoiled.add(sub.id)
            elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, (ast.Store, ast.Del)) \
                    and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                spoiled.add("self." + sub.attr)
            elif isinstance(sub, ast.alias):
                spoiled.add((sub.asname or sub.name).split(".")[0])
            elif isinstance(sub, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)):
                spoiled.add(getattr(sub, "name", None) or getattr(sub, "rest", None) or "")

    def walk(body: list, held: tuple, top: int | None = None) -> None:
        for index, stmt in enumerate(body):
            at = index if top is None else top
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
            if isinstance(target, ast.Name):
                bindings.setdefault(target.id, []).append((stmt.value, held, at))
                spoil(stmt.value)  # a walrus inside
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                bindings.setdefault("self." + target.attr, []).append((stmt.value, held, at))
                spoil(stmt.value)
            elif isinstance(stmt, ast.If):
                spoil(stmt.test)
                walk(stmt.body, held + ((stmt.test, True),), at)
                walk(stmt.orelse, held + ((stmt.test, False),), at)
            elif isinstance(stmt, ast.Assert) and top is None:
                spoil(stmt.test)
                test, truth = stmt.test, True
                while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    test, truth = test.operand, not truth
                asserted[ast.dump(test)] = (truth, index)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                spoiled.add(stmt.name)
            else:
                blocks = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
                blocks += [h.body for h in getattr(stmt, "handlers", ())] + [c.body for c in getattr(stmt, "cases", ())]
                if not blocks:
                    spoil(stmt)
                    continue
                for field in ("target", "test", "iter", "items", "subject"):
                    part = getattr(stmt, field, None)
                    for piece in part if isinstance(part, list) else [part] if part is not None else []:
                        spoil(piece)
                for handler in getattr(stmt, "handlers", ()):
                    if handler.name:
                        spoiled.add(handler.name)
                for case in getattr(stmt, "cases", ()):
                    spoil(case.pattern)
                for block in blocks:
                    walk(block, held, at)

    walk(function.body, ())
    # a local bound once, at the top level, stands for its value in a test (`if use_gpu:`)
    single = {name: bound[0] for name, bound in bindings.items()
              if name not in spoiled and len(bound) == 1 and not bound[0][1] and "." not in name}
    whole = function.name == "__init__"  # an assertion anywhere in it: no object exists otherwise
    found: dict[str, frozenset] = {}
    for name, bound in bindings.items():
        if name in spoiled:
            continue
        switches: set[str] = set()
        hosted = False  # a local bound only in arms that never run is no device at all
        for value, held, at in bound:
            place = _literal_device(value)
            if place == P.HOST:
                hosted = True
                continue
            # any other value (a literal or not) only in an arm the default configuration rules out
            facts = {key: truth for key, (truth, index) in asserted.items() if whole or index < at}
            known = _Known({n: v for n, (v, _, i) in single.items() if i < at}, facts)
            ruled = _ruled_out(held, conditions, library, known)
            if ruled is None:
                break
            switches.update(ruled)
        else:
            if hosted:
                found[name] = frozenset(switches)
    return found


def _literal_device(value) -> int | None:
    from .vocabulary import literal_device_place

    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "device" \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "torch" and len(value.args) == 1:
        value = value.args[0]  # `torch.device("cpu")`
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return literal_device_place(value.value)
    return None


class _Known:
    """What a function states around its arms: locals bound once before (name -> value) and the
    values its assertions fix (ast.dump -> truth)."""

    def __init__(self, values: dict, asserted: dict):
        self.values = values
        self.asserted = asserted


def _ruled_out(held: tuple, conditions, library, known: _Known) -> frozenset | None:
    """The switches that must be on for the arm to run (empty: it never runs on CUDA, or only
    where an assertion fails), or None when nothing rules it out under the default configuration."""
    for test, holds in held:
        value, _ = conditions.evaluate(test)
        if value is not None and value != holds:
            return frozenset()  # `if is_npu():` on a CUDA GPU
    for test, holds in held:
        needs = _needs(test, holds, library, known, 0)
        if needs is not None:
            return needs
    return None


def _needs(test, holds: bool, library, known: _Known, depth: int) -> frozenset | None:
    """The environment switches that must be on for `test` to come out `holds`: an `or` that must
    hold needs some part on, so every part must be ruled out (an `and` that must fail likewise);
    a part the function asserts the other way needs nothing (it never comes out so); a local bound
    once stands for its value. None: the default configuration does not rule it out."""
    if depth > 4:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _needs(test.operand, not holds, library, known, depth + 1)
    truth = known.asserted.get(ast.dump(test))
    if truth is not None and truth != holds:
        return frozenset()
    if isinstance(test, ast.Name) and test.id in known.values:
        return _needs(known.values[test.id], holds, library, known, depth + 1)
    if isinstance(test, ast.BoolOp):
        parts = [_needs(v, holds, library, known, depth + 1) for v in test.values]
        if isinstance(test.op, ast.Or) == holds:  # every part must be ruled out
            return None if any(p is None for p in parts) else frozenset().union(*parts)
        return next((p for p in parts if p is not None), None)
    if holds:
        switch = _env_switch(test, library)
        return None if switch is None else frozenset((switch,))
    return None


def _env_switch(test, library) -> str | None:
    """The environment variable a test needs on: `envs.X.get() == "MODE"`, `envs.X in ("a",
    "b")`, `envs.X.get()`, `os.environ.get("X") == "1"`, or one part of an `and` being such."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((s for s in (_env_switch(v, library) for v in test.values) if s is not None), None)
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.In)):
            return None
        right = test.comparators[0]
        values = right.elts if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
            else [right]
        if not values or not all(isinstance(v, ast.Constant) and v.value not in _OFF_LITERALS
                                 and str(v.value).lower() not in ("false", "off", "no", "0") for v in values):
            return None
        return _env_read(test.left, library)
    return _env_read(test, library)


def _env_read(node, library) -> str | None:
    """The variable an expression reads: `envs.X.get()`, `envs.X`, `os.environ.get("X")` (with
    no default, or an off one)."""
    from .ast_annotations import dotted

    if isinstance(node, ast.Call):
        name = dotted(node.func) or ""
        if any(name == r or name.endswith("." + r) for r in library.env_readers):
            first = node.args[0] if node.args else None
            default = node.args[1] if len(node.args) > 1 else \
                next((k.value for k in node.keywords if k.arg == "default"), None)
            if default is not None and not (isinstance(default, ast.Constant) and default.value in _OFF_LITERALS):
                return None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.isupper():
                return first.value
            return None
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and not node.args and not node.keywords:
            node = node.func.value  # SGLang's `envs.X.get()`
        else:
            return None
    if isinstance(node, ast.Attribute) and node.attr.isupper() and len(node.attr) > 1:
        return node.attr  # `envs.X`: a switch only if the tree declares `X` off (switch_field_hints)
    return None
