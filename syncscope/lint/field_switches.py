"""Switches a constructor keeps: a field set from a constructor parameter that every construction
turns on by default, and the lines of the class that run only when it is off.

    def _should_enable_lazy_compaction() -> bool:
        return not envs.SGLANG_DISABLE_LAZY_COMPACTION.get()   # `EnvBool(False)`: on by default

    pool = make_pool(..., lazy_compaction=_should_enable_lazy_compaction())

    class Allocator:
        def __init__(self, ..., lazy_compaction: bool = False):
            self.lazy_compaction = lazy_compaction

        def free(self, index):
            if self.lazy_compaction:
                self._free_lazy(index)
                return
            ...                                   # the eager path: runs only when it is off

(SGLang's unified-memory-pool allocators, where the factory functions and the composite
allocators pass the switch on by keyword or in their own `**kwargs`.) The eager path does not
run in the default configuration, like a branch under a switch that is off (flagguards.py is the
same fact the other way round: a parameter no call turns on).

The facts, about code:
* A field `F` of class `A` holds its constructor's parameter `P` when `A.__init__` stores
  `self.F = P` and nothing else in `A`'s family (its bases and subclasses in the tree) stores
  `self.F`, no function of the tree stores `.F` on another receiver, and no method of the family
  builds its own class (`cls(...)`: a construction no name shows).
* A parameter is on by default when the tree calls its function and every call passes it (by
  keyword or place) `True`, `not <X>` / `not <X>.get()` of an environment variable the tree
  declares with an off default and never sets (switch_devices.py), a call of a function all of
  whose returns are such a value, the caller's own parameter that is on by default, or leaves it
  in the caller's own `**kwargs` passed on unchanged (the caller does nothing else with them)
  when that caller's parameter is on by default. A call with other `*args` / `**mapping`, a
  call leaving it out, any other value: not on. A function nothing in the tree calls may be
  called from outside: not on. The calls into a method include those resolved to a method it
  overrides and those by name on a receiver of unknown class; the calls into an `__init__`, the
  constructions of each class that runs it (name_uses.py's `C(...)` lines, the call on the line
  whose text starts with the name; a class also handed on as a value, or built at module level,
  leaves it undecided; a mention only as a base does not: that file is read again, last).
* In a method `M` of class `K` (with `A` among `K`'s bases or `K` itself), the lines that run
  only when `self.F` is off: the body of `if not self.F [and ...]:`, the `else` of `if self.F:`,
  and the rest of the block after `if self.F [or ...]:` whose body ends in `return` / `raise`.
  A construction that a subclass `D` of `K` makes through its own `__init__` does not count when
  `D` overrides `M` and its `M` does not call `K.M` (SGLang's float allocator turns the switch off
  for itself and frees its own way).

What a file records is one flat tuple (FileFields.table), held from the analysis through the
pass: a dict per class and per call, with every `self.F` store of every class, cost ~5 MB of
peak memory on whole vLLM. So the table keeps the constructor's stores only (`self.F = P` in
`__init__`), and the values calls pass that flagguards does not read; the other stores of a
family are read again from its files in the pass, for the fields decided on only.
"""

from __future__ import annotations

import ast
import re

from .field_switch_reads import FamilyStores, PassesRead, sections
from .name_uses import each_use, mentions
from .nodewalk import nodes_breadth_first
from .source_texts import source_text

TRUE = "true"  # a literal True passed
_CLASSES = frozenset({ast.ClassDef})


def _env_name(node) -> str | None:
    """`envs.X.get()` / `envs.X` with `X` an upper-case name: the environment variable X."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get":
        node = node.func.value
    if isinstance(node, ast.Attribute) and node.attr.isupper() and "_" in node.attr:
        return node.attr
    return None


def value_kind(node):
    """What an argument or a returned value is, as far as being on by default goes: TRUE,
    ("notenv", X), ("call", line, column) of a call with no arguments, or None."""
    if isinstance(node, ast.Constant) and node.value is True:
        return TRUE
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        name = _env_name(node.operand)
        return ("notenv", name) if name else None
    if isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Name):
        return ("call", node.lineno, node.col_offset + 1)
    return None


def _self_field(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _off_test(test) -> str | None:
    """`not self.F` / `not self.F and ...`: the field whose being off the body needs."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            found = _self_field(part.operand)
            if found:
                return found
    return None


def _on_test(test) -> str | None:
    """`self.F` / `self.F or ...`: the field that, on, makes the test true."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    return next((f for f in map(_self_field, parts) if f), None)


def _builds_own_class(func) -> bool:
    """`cls(...)`, `type(self)(...)`, `self.__class__(...)`: a method building its own class."""
    if isinstance(func, ast.Name):
        return func.id == "cls"
    if isinstance(func, ast.Call):
        return isinstance(func.func, ast.Name) and func.func.id == "type"
    return isinstance(func, ast.Attribute) and func.attr == "__class__"


def _end(stmt) -> int:
    return getattr(stmt, "end_lineno", None) or stmt.lineno


class FileFields:
    """One file's facts. `table()` is one flat tuple: the sizes of six parts, then the parts
    (sections() splits them): guards (method, start, end, field for each), inits (class, field,
    parameter for each `self.F = P` of an `__init__`, the class's only store of F in the file),
    others (fields stored on another receiver, and the classes a method of which builds its own
    class: `cls(...)`), returns (function, kind for each), kwargs (functions that only pass
    their `**kwargs` on), passes (line, column, keyword or position, kind for each value a call
    passes that value_kind tells); () when there is none. `stores` (class -> {field: parameter,
    or "" for any other store}) is not kept: the pass reads it from a file again."""

    def __init__(self) -> None:
        self.guards: list = []
        self.stores: dict[str, dict] = {}
        self.others: set[str] = set()
        self.returns: dict[str, object] = {}
        self.kwargs: set[str] = set()
        self.passes: list = []
        self.claimed: set = set()  # the calls' places already recorded (flagguards.file_flags)

    def function(self, node, qualname: str, cls: str | None, nodes: list) -> None:
        """`nodes`: the function's If, Call, Name, Return and assignment nodes (nested ones too)."""
        var_kw = node.args.kwarg.arg if node.args.kwarg else None
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        returns, nested, kw_uses, kw_forwards = [], False, 0, 0
        for sub in nodes:
            kind = type(sub)
            if kind is ast.Return:
                returns.append(sub)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda) and sub is not node:
                nested = True
            elif kind is ast.Name:
                if sub.id == var_kw:
                    kw_uses += 1
            elif kind is ast.Call:
                if cls is not None and _builds_own_class(sub.func):
                    self.others.add(cls)  # `cls(...)`: constructions name_uses cannot see
                if var_kw is not None:
                    kw_forwards += sum(1 for k in sub.keywords if k.arg is None and isinstance(k.value, ast.Name)
                                       and k.value.id == var_kw)
            elif kind in (ast.Assign, ast.AnnAssign, ast.AugAssign):
                self._store(sub, node, cls, params)
            elif kind is ast.If and cls is not None:
                self._guard(sub, node, qualname)
        if var_kw is not None and kw_uses == kw_forwards:
            self.kwargs.add(qualname)
        if returns and not nested:
            kinds = {value_kind(r.value) if r.value is not None else None for r in returns}
            if len(kinds) == 1 and None not in kinds:
                self.returns[qualname] = kinds.pop()

    def call(self, call: ast.Call, recorded: bool) -> bool:
        """Record the values `call` passes that value_kind tells (a call with no arguments: by
        keyword only); whether it is the first call at its place with anything to record
        (`recorded`: flagguards has something; one call per place, the first, is read)."""
        place = (call.lineno, call.col_offset + 1)
        if place in self.claimed:
            return False
        found = [(position, kind) for position, arg in enumerate(call.args) if not isinstance(arg, ast.Starred)
                 and (kind := value_kind(arg)) is not None and not (isinstance(kind, tuple) and kind[0] == "call")]
        found += [(k.arg, kind) for k in call.keywords if k.arg is not None and (kind := value_kind(k.value)) is not None]
        for key, kind in found:
            self.passes += (*place, key, kind)
        if found or recorded:
            self.claimed.add(place)
            return True
        return False

    def _store(self, stmt, function, cls: str | None, params: set) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for item in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
                if not isinstance(item, ast.Attribute):
                    continue
                name = _self_field(item)
                if name is None or cls is None:
                    self.others.add(item.attr)
                    continue
                fields = self.stores.setdefault(cls, {})
                param = ""
                if function.name == "__init__" and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                        and item is target and isinstance(stmt.value, ast.Name) and stmt.value.id in params:
                    param = stmt.value.id
                fields[name] = param if fields.get(name, param) == param else ""

    def _guard(self, stmt: ast.If, function, qualname: str) -> None:
        off = _off_test(stmt.test)
        if off and stmt.body:
            self.guards += (qualname, stmt.body[0].lineno, _end(stmt.body[-1]), off)
        on = _on_test(stmt.test)
        if not on:
            return
        if stmt.orelse and not isinstance(stmt.test, ast.BoolOp):
            self.guards += (qualname, stmt.orelse[0].lineno, _end(stmt.orelse[-1]), on)
        elif not stmt.orelse and stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
            rest = _rest_of_block(function, stmt)
            if rest:
                self.guards += (qualname, rest[0].lineno, _end(rest[-1]), on)

    def table(self) -> tuple:
        if not (self.guards or self.stores or self.others or self.returns or self.kwargs or self.passes):
            return ()
        inits = [x for cls, fields in self.stores.items() for name, param in fields.items() if param
                 for x in (cls, name, param)]
        parts = (self.guards, inits, sorted(self.others), [x for item in self.returns.items() for x in item],
                 sorted(self.kwargs), self.passes)
        return (*map(len, parts), *(x for part in parts for x in part))


def _rest_of_block(function, stmt) -> list:
    """The statements after `stmt` in the block that holds it (not in a nested definition)."""
    pending = [function.body]
    while pending:
        body = pending.pop()
        for index, item in enumerate(body):
            if item is stmt:
                return body[index + 1:]
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(item, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    pending.append(inner)
            for handler in getattr(item, "handlers", ()) or ():
                pending.append(handler.body)
            for case in getattr(item, "cases", ()) or ():
                pending.append(case.body)
    return []


def field_lines(program, edges: dict, results: dict, calls_into: dict, passed, add_callers, stores_of,
                sources=None) -> dict[str, list]:
    """{path: [(start, end, why)]}: the lines of methods that run only when a field is off that
    every construction turns on by default. `calls_into`: function -> [(caller, call, shift)]
    (flagguards.flag_lines); `add_callers(functions)` adds to it the calls by name that may land
    in those functions; `passed(table, caller, call, name, index)`: (star, what the call passes
    for the parameter or None, forwards the caller's `**kwargs`), `table` a PassesRead;
    `stores_of(path)`: FileFields.stores of a file read again (only the families of fields
    every construction turns on are: the per-file table keeps the constructor's stores only)."""
    guards: dict[str, list] = {}
    inits: dict[str, dict] = {}
    others: set[str] = set()
    returns: dict[str, object] = {}
    clean: set[str] = set()
    declared: set[str] = set()
    changed: set[str] = set()
    for result in results.values():
        facts = getattr(result, "switch_facts", None) or ({}, (), ())
        declared.update(facts[1])
        changed.update(facts[2])
        table = getattr(result, "field_switches", None)
        if not table:
            continue
        found, stored, other, returned, kwargs, _ = sections(table)
        for at in range(0, len(found), 4):
            guards.setdefault(found[at], []).append(found[at + 1:at + 4])
        for at in range(0, len(stored), 3):
            mine = inits.setdefault(stored[at], {})
            mine[stored[at + 1]] = stored[at + 2] if mine.get(stored[at + 1], stored[at + 2]) == stored[at + 2] else ""
        others.update(other)
        returns.update(zip(returned[::2], returned[1::2]))
        clean.update(kwargs)
    if not guards:
        return {}
    table_read = PassesRead(results)
    family_stores = FamilyStores(program, results, stores_of)
    off_env = declared - changed

    def on_value(kind, caller: str, depth: int) -> bool:
        if kind == TRUE:
            return True
        if not isinstance(kind, tuple) or depth > 8:
            return False
        if kind[0] == "notenv":
            return kind[1] in off_env
        if kind[0] == "call":
            targets = {t for call, t, _ in edges.get(caller, ()) if (call.line, call.column) == (kind[1], kind[2])}
            return len(targets) == 1 and (target := targets.pop()) in returns and on_value(returns[target], target, depth + 1)
        return False

    memo: dict[tuple, bool] = {}
    asked: set[str] = set()  # the functions whose callers were read

    def param_on(function: str, name: str, position: int | None, exempt: frozenset, depth: int = 0) -> bool:
        """Whether every call into `function` passes `name` a value on by default."""
        key = (function, name, exempt)
        if key in memo:
            return memo[key]
        memo[key] = False  # a cycle of calls that only pass it round: not decided on
        asked.add(function)
        callers = [c for c in calls_into.get(function, ()) if c[0] not in exempt]
        owner, _, short = function.rpartition(".")
        if owner in program.classes and short != "__init__":  # `self.m(...)` in a base lands here too
            callers += [c for base in program.mro(owner)[1:] for c in calls_into.get(f"{base}.{short}", ())
                        if c[0] not in exempt]
        built = ctors.get(function)
        if built is None:
            built = ctors[function] = built_by(function) if short == "__init__" else []
        result = (bool(callers) or bool(built)) and depth <= 32 and None not in built

        def gives(caller: str, star: bool, kind, forwards: bool) -> bool:
            if kind is not None:
                if isinstance(kind, tuple) and kind[0] == "fwd":
                    return param_on(caller, kind[1], _position(program, caller, kind[1]), exempt, depth + 1)
                return on_value(kind, caller, 0)
            # `f(x, **kwargs)` of the caller's own `**kwargs`, which it only passes on
            return not star and forwards and caller in clean and param_on(caller, name, None, exempt, depth + 1)

        for caller, call, shift in callers if result else ():
            if not gives(caller, *passed(table_read, caller, call, name, None if position is None else position - shift)):
                result = False
                break
        # the constructions, those in files to read again last (a class also named as a base there)
        for entry in sorted(built, key=lambda e: e[0] == READ) if result else ():
            if entry[0] == READ and optimistic:
                continue
            for caller, path, line, built_name in (reread(entry[1], entry[2]) if entry[0] == READ else (entry,)):
                if caller is None or not gives(caller, *passed_at(path, line, built_name, name, position)):
                    result = False
                    break
            if not result:
                break
        memo[key] = result
        return result

    ctors: dict[str, list] = {}
    index: dict[str, list] = {}  # short class name -> [(path, lines or None)] (name_uses)
    spans: dict[str, list] = {}
    reread_memo: dict[tuple, list] = {}

    def built_by(init: str) -> list:
        if not index:
            _index_uses(results, sources, index)
        return _constructions(program, init, index, lambda path, line: _caller(program, results, spans, path, line))

    def reread(path: str, short: str) -> list:
        """The constructions of `short` in a file that also names it otherwise, read again."""
        key = (path, short)
        if key not in reread_memo:
            uses = _uses_read(path, {short}, sources) or (short, None)
            lines = next((found for name, found in each_use(uses) if name == short), [])
            reread_memo[key] = [(None, path, 0, short)] if lines is None else \
                [(_caller(program, results, spans, path, line), path, line, short) for line in lines]
        return reread_memo[key]

    texts: dict[str, list] = {}

    def passed_at(path: str, line: int, short: str, name: str, position: int | None) -> tuple:
        """What the construction of `short` on `line` passes for `name`: the call recorded on that
        line (flagguards' passes) whose text starts with the class's name; none recorded: nothing
        read as on."""
        found = [(column, record) for (at, column), record in table_read.get(path).items() if at == line]
        if found:
            if path not in texts:
                text = source_text(path, sources)
                texts[path] = text.splitlines() if text is not None else []
            row = texts[path][line - 1] if line <= len(texts[path]) else ""
            found = [record for column, record in found if re.match(r"[\w.]*\b" + re.escape(short) + r"\s*\(",
                                                                    row[column - 1:])]
        if len(found) != 1:
            return False, None, False
        star, items, forwards = found[0]
        kind = items.get(name, items.get(position - 1) if position is not None else None)
        return star, kind, forwards

    # first without the files to read again (taken as on), then those decided so, reading them
    added: set[str] = set()
    optimistic = True
    wanted = [(qualname, name) for qualname, items in guards.items() for _, _, name in items
              if qualname in program.functions and qualname.rpartition(".")[0] in program.classes]
    for _ in range(16):  # until the calls by name into every function read are counted
        decided: dict[tuple, str | None] = {}
        for qualname, name in wanted:
            if (qualname, name) not in decided:
                cls, _, method = qualname.rpartition(".")
                decided[(qualname, name)] = _decide(program, edges, inits, others, qualname, cls, method, name,
                                                    param_on)
        memo.clear()
        if asked - added:
            add_callers(asked - added)
            added |= asked
        elif optimistic:
            optimistic = False
            wanted = [key for key, why in decided.items() if why]
        else:
            break
    else:
        return {}
    # last, for the fields decided only: no other store in the family (its files read again)
    decided = {key: why for key, why in decided.items()
               if why and _holder(program, family_stores(key[0].rpartition(".")[0]), others,
                                  key[0].rpartition(".")[0], key[1]) == why[1]}
    found: dict[str, list] = {}
    for qualname, items in guards.items():
        for start, end, name in items:
            why = decided.get((qualname, name))
            if why:
                why = why[0]
                found.setdefault(program.path_of[qualname], []).append((start, end, why))
    return found


def _holder(program, stores, others, cls: str, name: str) -> str | None:
    """The one class of `cls`'s family that stores `self.name`, from its constructor's parameter
    (`stores`: class -> {field: parameter, or "" for any other store}); with the constructor's
    stores only (`inits`), the one class of `cls`'s bases that does."""
    family = program._family(cls)
    if name in others or any(k in others for k in family):
        return None
    holders = [k for k in family if name in stores.get(k, {})]
    if len(holders) != 1 or holders[0] not in program.mro(cls) or not stores[holders[0]][name]:
        return None
    return holders[0]


READ = "read"  # a construction list's entry: a file to read again


def _index_uses(results: dict, sources, index: dict) -> None:
    """Fill `index` (short class name -> [(path, lines, or None where the file may hand the
    class on)]) from every file's name_uses; a non-empty file without them, read again."""
    for path, result in results.items():
        uses = getattr(result, "name_uses", None)
        if uses is None:
            if not (result.functions or result.classes):  # an empty file
                continue
            uses = _uses_read(path, None, sources)
            if uses is None:
                index.setdefault("", []).append((path, None))  # what it may hand on is not known
                continue
        for short, lines in each_use(uses):
            index.setdefault(short, []).append((path, lines))


def _caller(program, results: dict, spans: dict, path: str, line: int) -> str | None:
    """The innermost function of `path` whose lines hold `line` (None: module level)."""
    found = spans.get(path)
    if found is None:
        found = spans[path] = sorted((end - start, start, end, f) for f, (start, end) in
                                     (getattr(results[path], "spans", None) or {}).items())
    caller = next((f for _, start, end, f in found if start <= line <= end), None)
    return caller if caller in program.functions else None


def _constructions(program, init: str, index: dict, caller_at) -> list:
    """[(caller, path, line)] of the constructions in the tree of the classes whose `__init__`
    is `init`; (READ, path, short name) for a file that also names such a class otherwise (read
    again, last: perhaps only as a base); a None: a file whose names are not known."""
    holder = init.rpartition(".")[0]
    if holder not in program.classes:
        return []
    found: list = [None] if "" in index else []
    for sub in program._family(holder):
        if next((f"{k}.__init__" for k in program.mro(sub) if f"{k}.__init__" in program.functions), None) != init:
            continue
        short = sub.rsplit(".", 1)[-1]
        for path, lines in index.get(short, ()):
            if lines is None:
                found.append((READ, path, short))
            else:
                found.extend((caller_at(path, line), path, line, short) for line in lines)
    return found


def _uses_read(path: str, shorts: set | None, sources) -> tuple | None:
    """name_uses.uses_in of a file read again, where a class named as a base is no hand-on
    (its subclasses are in the program); None when the file cannot be read or parsed."""
    text = source_text(path, sources)
    try:
        tree = ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        tree = None
    if tree is None:
        return None
    bases = {base.lineno for node in nodes_breadth_first(tree, _CLASSES) for base in node.bases}
    failing, lines = set(), {}
    for short, kind, line in mentions(tree, shorts):
        if kind is False and line not in bases:
            failing.add(short)
        elif kind:
            lines.setdefault(short, []).append(line)
    built = [item for short in sorted(lines.keys() - failing) for item in (short, *lines[short])]
    return (*sorted(failing), None, *built)


def _decide(program, edges, inits, others, qualname, cls, method, name, param_on) -> tuple | None:
    """(why, the class holding the field) when every construction turns the field on, from the
    constructor's stores (`inits`) of `cls`'s bases; field_lines then reads the family's other
    stores."""
    holder = _holder(program, {k: inits[k] for k in program.mro(cls) if k in inits}, others, cls, name)
    if holder is None:
        return None
    param, init = inits[holder][name], f"{holder}.__init__"
    if init not in program.functions:
        return None
    exempt = set()
    for sub in program._family(cls) - {cls}:
        mro = program.mro(sub)
        if cls not in mro:
            continue
        own = next((f"{k}.{method}" for k in mro if f"{k}.{method}" in program.functions), None)
        if own is not None and own != qualname and all(t != qualname for _, t, _ in edges.get(own, ())):
            exempt.add(f"{sub}.__init__")
    if not param_on(init, param, _position(program, init, param), frozenset(exempt)):
        return None
    short = holder.rsplit(".", 1)[-1]
    return f"runs only when `self.{name}` is off, and every construction of `{short}` turns it on by default (`{param}`)", \
        holder


def _position(program, function: str, name: str) -> int | None:
    params = program.functions[function]["params"]
    return params.index(name) if name in params else None
