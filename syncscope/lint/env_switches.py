"""Lines that run only when an environment switch is on that the tree declares off by default
and never sets, read through the functions that return it and the fields that keep it.

    def pp_spec_stable_rows_enabled() -> bool:          # linear/utils.py
        return envs.SGLANG_ENABLE_PP_SPEC.get()         # `EnvBool(False)` in environ.py

    def init_pp_loop_state(self):                       # scheduler_pp_mixin.py
        self._pp_spec_relay = (pp_spec_stable_rows_enabled() and get_parallel().pp_size > 1 ...)

    def process_batch_result_pp(self, ...):
        if self._pp_spec_relay and "spec_accept_lens" in pp_outputs.tensors:
            ... batch.seq_lens.tolist() ...             # PP + speculative relay only

(SGLang's pipeline-parallel speculative relay.) branches.Conditions decides a switch by its name
(debug and check words) in one file; it cannot tell an opt-in switch from one that is on, nor
follow a call into another module. The facts, about code:
* An environment variable is off by default when the tree declares it with an off default and
  never sets it (switch_devices.py's `switch_facts`: `X = EnvBool(False)`, no `envs.X.set(...)`,
  `os.environ["X"] = ...`).
* A test holds only if a requirement does: an `and` any conjunct of which needs it; a read of
  the variable (`envs.X.get()`, `envs.X`); a call with no arguments of a function named `f` when
  every function of that name in the tree has one statement (a docstring aside), `return <a
  test that needs an off variable>`; `self.F` when every store of `.F` in the tree is in one
  class's methods and each stores a test that needs the same requirement (a store of `.F` on
  any other receiver or in another class, a string key `"F"` given a value or `setattr` leave it
  unknown: optin.py's text reading counts them over the whole tree); a module global or a
  function's local bound once to such a test (env_names.py: `_verify = envs.X.get()`, then
  `check = _verify and ...; if check:`), a global that no file stores from outside.
* The body of an `if` whose test needs an off variable, and the rest of a function after a
  top-level `if not <such a test>:` whose body ends in `return` / `raise`, never run by default:
  cold, as any line callguards.decided_lines returns (their calls count for no caller).
* A field every store of which is the negation of such a test (`self.use_static_waterfill = not
  envs.SGLANG_DISABLE_STATIC_WATERFILL.get()`: an escape hatch, off by default) is true by
  default: the rest of a function after a top-level `if self.F:` whose body ends in `return` /
  `raise`, and the body of `if not self.F:`, need the variable on (SGLang's dynamic waterfill
  plan, with its `.item()`s, runs only where the static one is switched off).

Per file (`env_facts`, kept in `switch_facts`' fourth and fifth places): the switch functions
{qualified name: requirement} and the spans [(start, end, requirements)], each requirement
("env", X) / ("call", name) / ("field", F, R, stores in the file); only spans with one.
"""

from __future__ import annotations

import ast
import re

from .classinfo import module_statements
from .env_names import NameTests
from .nodewalk import nodes_breadth_first
from .text_scans import TextScans

_ATTRIBUTE = frozenset({ast.Attribute})


def _upper(name: str) -> bool:
    return len(name) > 1 and name.isupper() and not name.startswith("_")


def _requirements(node) -> list[tuple]:
    """What `node` needs to be true: ("env", X), ("call", name) or ("self", F), each enough."""
    kind = type(node)
    if kind is ast.BoolOp and isinstance(node.op, ast.And):
        return [r for value in node.values for r in _requirements(value)]
    if kind is ast.Call and not node.args and not node.keywords:
        func = node.func
        if type(func) is ast.Attribute:
            if func.attr == "get" and type(func.value) is ast.Attribute and _upper(func.value.attr):
                return [("env", func.value.attr)]  # SGLang's `envs.X.get()`
            return [("call", func.attr)]
        if type(func) is ast.Name:
            return [("call", func.id)]
        return []
    if kind is ast.Call and type(node.func) is ast.Name:
        return [("args", node.func.id)]  # decided by `_settled`: only the file's own switch functions
    if kind is ast.Constant and (node.value is False or node.value is None):
        return [("never",)]  # `self.use_cls_token = False`: a field stored only this never holds
    if kind is ast.Attribute:
        if type(node.value) is ast.Name and node.value.id == "self":
            return [("self", node.attr)]
        if _upper(node.attr):
            return [("env", node.attr)]  # vLLM's `envs.X`
    if kind is ast.Name:
        return [("name", node.id)]  # a global or a local that may keep a test (env_names.py)
    return []


def _false_requirements(node) -> list[tuple]:
    """What `node` needs to be false: `self.F` a field stored only negated tests
    (("notself", F)), `not X` what X needs to be true; each enough."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":
        return [("notself", node.attr)]
    if type(node) is ast.UnaryOp and type(node.op) is ast.Not:
        return _requirements(node.operand)
    return []


def _stored_requirements(value) -> tuple:
    """The requirements a stored value carries: a test's, or a negated test's marked ("not", ...)."""
    if type(value) is ast.UnaryOp and type(value.op) is ast.Not:
        return tuple(("not",) + r for r in _requirements(value.operand) if r[0] != "self" and r[0] != "name")
    return tuple(r for r in _requirements(value) if r[0] != "self" and r[0] != "name")


def _switch_function(function) -> tuple | None:
    body = function.body
    if body and type(body[0]) is ast.Expr and type(body[0].value) is ast.Constant:
        body = body[1:]  # the docstring
    if len(body) == 1 and type(body[0]) is ast.Return and body[0].value is not None:
        found = [r for r in _requirements(body[0].value) if r[0] not in ("self", "args", "name")]
        if found:
            return tuple(found)
    return None


def _computed_store(call) -> bool:
    """`setattr(self, name, value)` with a computed name, `self.__dict__.update(...)`."""
    if type(call) is not ast.Call:
        return False
    func = call.func
    if type(func) is ast.Name and func.id == "setattr":
        return len(call.args) < 2 or type(call.args[1]) is not ast.Constant
    return type(func) is ast.Attribute and type(func.value) is ast.Attribute and func.value.attr == "__dict__"


def _self_attr(node) -> str | None:
    return node.attr if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self" \
        else None


def env_facts(tree: ast.Module, text: str) -> tuple:
    """(switch functions {name: requirements}, spans [(start, end, requirements)]): one pass over
    the module's statements (classinfo.module_statements, which other facts walk too)."""
    functions: dict[str, tuple] = {}
    tests: list = []  # (start, end, requirements) of `if` bodies and of the rest after `if not ...: return`
    stores: dict[str, list] = {}  # field -> [(line, requirements)] of `self.F = ...`
    foreign: set[str] = set()  # fields stored on another receiver
    computed: list[int] = []  # lines of stores of computed names
    classes: list = []
    maybe_computed = "setattr" in text or "__dict__" in text
    for stmt in module_statements(tree):
        kind = type(stmt)
        if kind is ast.If:
            test = stmt.test
            found = _requirements(test) or (
                [r for r in _false_requirements(test.operand) if r[0] == "notself"]
                if type(test) is ast.UnaryOp and type(test.op) is ast.Not else [])
            if found:
                tests.append((stmt.body[0].lineno, stmt.body[-1].end_lineno, found))
        elif kind is ast.Assign or kind is ast.AnnAssign or kind is ast.AugAssign:
            for target in (stmt.targets if kind is ast.Assign else (stmt.target,)):
                kind_of = type(target)
                if kind_of is ast.Attribute:
                    if (name := _self_attr(target)) is None:
                        foreign.add(target.attr)  # `a.F = ...`
                        continue
                    plain = kind is not ast.AugAssign and stmt.value is not None
                    found = _stored_requirements(stmt.value) if plain else ()
                    stores.setdefault(name, []).append((stmt.lineno, found))
                    continue
                if kind_of is not ast.Tuple and kind_of is not ast.List and kind_of is not ast.Starred:
                    continue  # a name, a subscript (`a.F[i] = ...` stores no field)
                for inner in nodes_breadth_first(target, _ATTRIBUTE):  # `self.x, self.F = ...`
                    if (name := _self_attr(inner)) is not None:
                        stores.setdefault(name, []).append((stmt.lineno, ()))
                    else:
                        foreign.add(inner.attr)
        elif kind is ast.Expr:
            if maybe_computed and _computed_store(stmt.value):
                computed.append(stmt.lineno)
        elif kind is ast.ClassDef:
            classes.append(stmt)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            if (found := _switch_function(stmt)) is not None:
                functions[stmt.name] = found
            body = stmt.body
            for k in range(len(body) - 1):
                test = body[k]
                if type(test) is ast.If and not test.orelse and type(test.body[-1]) in (ast.Return, ast.Raise):
                    # the rest runs only where the test is false
                    found = _false_requirements(test.test)
                    if found:
                        tests.append((body[k + 1].lineno, stmt.end_lineno, found))
    if not tests:
        return functions, ()
    if any(r[0] == "name" for _, _, found in tests for r in found):
        names = NameTests(tree, _requirements)
        tests = [(start, end, resolved) for start, end, found in tests
                 if (resolved := names.resolve(found, start))]
    held: dict[tuple, tuple] = {}

    def field(cls, name: str) -> tuple:
        key = (cls.lineno, name)
        if key not in held:
            settled = [(line, _settled(found, functions)) for line, found in stores.get(name, ())]
            held[key] = _held(cls, name, settled, name in foreign, computed, classes, text)
        return held[key]

    spans = []
    for start, end, found in tests:
        needs = []
        for r in _settled(found, functions):
            if r[0] != "self" and r[0] != "notself":
                needs.append(r)
            elif (cls := _class_of(start, classes)) is not None:
                # `self.F` needs F's stored tests to hold; `not self.F` (F stored only negated
                # tests) needs them to hold un-negated
                negated = r[0] == "notself"
                needs.extend(_polar(held, negated) for held in field(cls, r[1])
                             if all(x[0] == "not" for x in held[2]) == negated)
        if needs:
            spans.append((start, end, tuple(needs)))
    return functions, tuple(spans)


def _polar(held: tuple, negated: bool) -> tuple:
    """A field requirement as a test of the field needs it: its stores' requirements, un-negated
    and with a sixth element "off" when the test needs the field false (env_switch_lines says so)."""
    if not negated:
        return held
    return (held[0], held[1], tuple(x[1:] for x in held[2]), held[3], held[4], "off")


def _settled(found, functions: dict) -> tuple:
    """The requirements `found`, a call with arguments (`_use_online(ratio)`) kept as a call of
    the switch function only when this file defines a switch function of that name: its test is an
    `and` that an off variable makes false whatever the arguments are (the run still asks that
    every function of that name in the tree is such a switch, `env_switch_lines`)."""
    return tuple(("call", r[1]) if r[0] == "args" else r for r in found
                 if r[0] != "args" or r[1] in functions)


def _class_of(line: int, classes: list):
    """The innermost class whose lines hold `line`."""
    found = None
    for cls in classes:
        if cls.lineno <= line <= cls.end_lineno and (found is None or cls.lineno > found.lineno):
            found = cls
    return found


def _held(cls, name: str, stores: list, foreign: bool, computed: list, classes: list, text: str) -> tuple:
    """(("field", F, requirements, stores),) when every store of `.F` in the file is `self.F =
    <a test with one same requirement>` in `cls`'s own methods; else ()."""
    if foreign or not stores or any(cls.lineno <= line <= cls.end_lineno for line in computed):
        return ()
    first = stores[0][1]
    if not first or any(found != first or _class_of(line, classes) is not cls for line, found in stores):
        return ()
    written = len(re.findall(r"\." + name + r"\s*(?:=(?!=)|[-+*/|&]=)", text))  # optin.py counts the tree's so
    return (("field", name, first, len(stores), cls.name),) if written == len(stores) else ()


def switch_fields(results: dict) -> frozenset:
    """The field names some span's requirement reads (`self.F`): the only names whose stores
    `env_switch_lines` counts over the tree."""
    return frozenset(r[1] for result in results.values()
                     if len(facts := getattr(result, "switch_facts", None) or ()) >= 5
                     for _, _, needs in facts[4] for r in needs if r[0] == "field" or r[0] == "global")


def env_switch_lines(program, results: dict, stores: dict, texts: TextScans) -> dict[str, list]:
    """{path: [(start, end, why)]}: the lines that run only when an environment switch is on that
    the tree declares off by default and never sets, or a field only ever stored a literal False
    or None is true. `stores`: optin.off_switches' counts of the whole tree's text ("counts":
    name -> `.F =` stores, "own": those on `self`, "keyed": names given a value as a string key or
    by `setattr`; empty when not every file was read: no field is decided)."""
    store_counts, own, keyed = stores.get("counts"), stores.get("own") or {}, stores.get("keyed", frozenset())
    off: set[str] = set()
    changed: set[str] = set()
    functions: dict[str, list] = {}
    for result in results.values():
        facts = getattr(result, "switch_facts", None) or ()
        if len(facts) < 5:
            continue
        off.update(facts[1])
        changed.update(facts[2])
        for name, found in facts[3].items():
            functions.setdefault(name, []).append(found)
    off -= changed
    all_names = _function_names(results) if functions else {}
    families = _Families(program)
    tail = ": an environment switch the tree declares off by default and never sets"

    def needs_off(r, depth: int = 0) -> str | None:
        """How requirement `r` (an environment variable, a call) needs an off variable, or None."""
        if r[0] == "env":
            return f"`{r[1]}`" if r[1] in off else None
        if r[0] == "global" and depth < 4:
            # a module global bound once to a test (env_names.py), that no file stores from outside
            if store_counts is None or store_counts.get(r[1], 0) or r[1] in keyed:
                return None
            inner = next((w for x in r[2] if (w := needs_off(x, depth + 1))), None)
            return f"`{r[1]}` (bound once to a test that needs {inner})" if inner else None
        if r[0] == "call" and depth < 4:
            found = functions.get(r[1])
            if not found or len(found) != all_names.get(r[1], 0):
                return None  # a function of that name that is no switch's
            inner = [next((w for x in f if (w := needs_off(x, depth + 1))), None) for f in found]
            return f"`{r[1]}()` (it returns {inner[0]})" if all(inner) else None
        return None

    def why(r, path: str) -> str | None:
        if r[0] != "field":
            inner = needs_off(r)
            return f"runs only when {inner} is on{tail}" if inner else None
        if store_counts is None or r[1] in keyed:
            return None  # given by key
        if store_counts.get(r[1], 0) != r[3] and not (
                store_counts.get(r[1], 0) == own.get(r[1], 0)
                and _family_stores_none(families, results, path, r[4], r[1], texts)):
            return None  # stored in another file by another receiver, or by the class's family
        if r[2] == (("never",),):
            return f"runs only when `self.{r[1]}` is true, and every store of it in the tree is a literal False or None"
        inner = next((w for x in r[2] if (w := needs_off(x))), None)
        if inner and len(r) > 5:  # a field stored only negated tests, tested false
            return f"runs only when `self.{r[1]}` is off, set only to the negation of a test that needs {inner}{tail}"
        return f"runs only when `self.{r[1]}` is on, set only from a test that needs {inner}{tail}" if inner else None

    found: dict[str, list] = {}
    for path, result in results.items():
        facts = getattr(result, "switch_facts", None) or ()
        for start, end, needs in (facts[4] if len(facts) >= 5 else ()):
            reason = next((w for r in needs if (w := why(r, path))), None)
            if reason:
                found.setdefault(path, []).append((start, end, reason))
    return found


class _Families:
    """The tree's class families (each class with its bases and subclasses, transitively),
    indexed once per run: a class's subclasses are not searched for over every class per field."""

    def __init__(self, program) -> None:
        self.program = program
        self.bases = {q: tuple(info.get("bases", ())) for q, info in program.classes.items()}
        self.subclasses: dict[str, list[str]] = {}
        for qualname, bases in self.bases.items():
            for base in bases:
                self.subclasses.setdefault(base, []).append(qualname)
        self.answers: dict[tuple, bool] = {}

    def family(self, start: str) -> set[str]:
        found = {start}
        pending = [start]
        while pending:  # bases, then subclasses, of every member
            current = pending.pop()
            for other in (*self.bases.get(current, ()), *self.subclasses.get(current, ())):
                if other in self.bases and other not in found:
                    found.add(other)
                    pending.append(other)
        return found


def _family_stores_none(families: _Families, results: dict, path: str, name: str, field: str, texts: TextScans) -> bool:
    """Whether no class of `name`'s family (its bases and subclasses in the tree, `name` defined
    at the top of the file at `path`) stores `self.<field>` outside that file: the other stores
    on `self` are then in other classes' objects."""
    key = (path, name, field)
    if key not in families.answers:
        families.answers[key] = _family_stores_none_now(families, results, path, name, field, texts)
    return families.answers[key]


def _family_stores_none_now(families: _Families, results: dict, path: str, name: str, field: str, texts: TextScans) -> bool:
    module = getattr(results[path], "module", None)
    start = f"{module}.{name}"
    if module is None or start not in families.program.classes:
        return False
    family = families.family(start)
    written = re.compile(r"\bself\." + field + r"\s*(?:=(?!=)|[-+*/|&]=)")
    others = sorted(p for p, result in results.items() if p != path
                    and not family.isdisjoint(getattr(result, "classes", None) or ()))
    found = texts.answers("stores-on-self", field, others, lambda text: bool(written.search(text)))
    return found is not None and not any(found.values())


def _function_names(results: dict) -> dict[str, int]:
    """Short name -> how many functions and methods of the tree have it."""
    counts: dict[str, int] = {}
    for result in results.values():
        for qualname in (getattr(result, "functions", None) or {}):
            short = qualname.rpartition(".")[2]
            counts[short] = counts.get(short, 0) + 1
    return counts
