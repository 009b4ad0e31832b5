"""A value that is None only when a configuration test is false: the caller's argument cannot
take a callee's branch that needs both.

vLLM's `set_forward_context` coordinates the data-parallel ranks (a sync) only

    if num_tokens_across_dp is None and vllm_config.parallel_config.data_parallel_size > 1:

and the per-step callers pass a count that is None only on one rank:

    def _determine_batch_execution_and_padding(self, num_tokens):
        should_ubatch, num_tokens_across_dp = False, None
        if self.vllm_config.parallel_config.data_parallel_size > 1:
            should_ubatch, num_tokens_across_dp, mode = coordinate_batch_across_dp(...)
        return mode, num_tokens, num_tokens_across_dp

    def coordinate_batch_across_dp(..., parallel_config, ...):
        if parallel_config.data_parallel_size == 1:
            return False, None, cudagraph_mode
        ...
        return should_ubatch, torch.full(...), cudagraph_mode     # never None

The fact: a callee's block tested `p is None and C` (C a comparison of an attribute path with a
literal) is not taken by a call whose argument for `p` is None only where C is false. Where an
argument comes from (per file, `file_none_config`): a local's every store (flow-insensitive,
each with the configuration tests known on its path), a tuple element of a call's result, an
element of the tuples a function returns. A store of None counts when the tests on its path
imply `not C`: an enclosing `if` (its body: each conjunct of an `and`; its `else`: a single
comparison, negated), or a later `if C2:` in the same block whose body stores the name again
at its top level, before the use (no `break`/`continue` between, not inside a `try`): the None
reaches the use only where C2 is false. Never None: a literal other than None, a display, a
`torch` factory, a call of a tree function annotated to return a type without None. Anything
else (a parameter, an attribute, an unknown call) decides nothing. Two configuration tests are
of the same setting when one attribute path after its receiver is a suffix of the other
(`self.vllm_config.parallel_config.data_parallel_size` and `parallel_config.data_parallel_size`);
the literals then decide whether one's range lies outside the other's (`== 1` against `> 1`).

Everything recorded is plain tuples and dicts (pickled into the lint cache).
"""

from __future__ import annotations

import ast

from .constargs import _APPLY, _FLIP, _OPS, _literal, UNKNOWN
from .nodewalk import function_code, own_nodes, every_node
from .vocabulary import TORCH_FACTORIES

MAX_DEPTH = 6  # name and call hops followed; deeper decides nothing
NONNONE = ("nonnone",)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_JUMPS = frozenset({ast.Break, ast.Continue})
_STORING = frozenset({ast.Name, ast.NamedExpr, ast.ExceptHandler})
_WANTED = frozenset({ast.If, ast.Return, ast.Assign, ast.Call})
_NEVER_NONE = (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
               ast.GeneratorExp, ast.BinOp, ast.Compare, ast.JoinedStr)


def config_test(node) -> tuple | None:
    """(attribute path after the receiver, op, literal) of `x.a.b OP literal`, else None."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    name = _OPS.get(type(op))
    if name is None:
        return None
    flipped = False
    if not isinstance(left, ast.Attribute):
        left, right, flipped = right, left, True
    value = _literal(right)
    if value is UNKNOWN or value is None or isinstance(value, (str, bool)):
        return None
    path = []
    while isinstance(left, ast.Attribute):
        path.append(left.attr)
        left = left.value
    if not path or not isinstance(left, ast.Name):
        return None
    return (tuple(reversed(path)), _FLIP[name] if flipped else name, value)


def _conjuncts(test) -> list:
    return list(test.values) if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def _path_tests(test, taken: bool) -> tuple:
    """The configuration tests known true on the branch of `if test:` (`taken`) or its else."""
    if taken:
        return tuple((key, True) for key in map(config_test, _conjuncts(test)) if key is not None)
    key = config_test(test)
    return ((key, False),) if key is not None else ()


def _same_setting(a: tuple, b: tuple) -> bool:
    short, long = sorted((a, b), key=len)
    return long[len(long) - len(short):] == short


def implies_not(tests, key: tuple) -> bool:
    """Do the known tests ((path, op, literal), truth) rule out `key`?"""
    path, op, value = key
    for (other_path, other_op, other_value), truth in tests:
        if not _same_setting(path, other_path):
            continue
        points = {value, other_value, value - 1, value + 1, other_value - 1, other_value + 1,
                  value - 0.5, value + 0.5, other_value - 0.5, other_value + 0.5, -10 ** 9, 10 ** 9}
        try:
            if all(not _APPLY[op](x, value) for x in points if _APPLY[other_op](x, other_value) == truth):
                return True
        except TypeError:
            continue
    return False


def _stores(node, name: str) -> bool:
    """Does the statement store into `name` at its top (an assignment's target)?"""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    for target in targets:
        items = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if any(isinstance(item, ast.Name) and item.id == name for item in items):
            return True
    return False


def _jumps(stmts) -> bool:
    return bool(own_nodes(stmts, _JUMPS))


class _Function:
    """The stores of one function's locals, each with the tests on its path."""

    def __init__(self, node, factories: frozenset) -> None:
        self.node = node
        self.factories = factories
        self.stores: dict[str, list] = {}  # name -> [(value summary, tests, block, index, in try)]
        self.params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        for extra in (node.args.vararg, node.args.kwarg):
            if extra is not None:
                self.params.add(extra.arg)
        self.unknown: set[str] = set(self.params)
        self.return_tests: dict[int, tuple] = {}  # id of a `return` -> the tests on its path
        self._names: dict[tuple, tuple | None] = {}
        self._walk(node.body, (), False)

    def _walk(self, block: list, tests: tuple, in_try: bool) -> None:
        for index, stmt in enumerate(block):
            if isinstance(stmt, _NESTED):
                self.unknown.add(getattr(stmt, "name", ""))
                continue
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                self.unknown.update(stmt.names)
            if isinstance(stmt, ast.Return):
                self.return_tests[id(stmt)] = tests
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self._unknown_stores([stmt.value])
                for target in targets:
                    self._assign(target, stmt.value, tests, block, index, in_try)
            else:
                self._unknown_stores(_header(stmt))
            if type(stmt).__name__ == "Match":  # names a pattern captures
                self.unknown.update(n for sub in every_node(stmt) for n in (getattr(sub, "name", None),
                                    getattr(sub, "rest", None)) if isinstance(n, str))
            if isinstance(stmt, ast.If):
                self._walk(stmt.body, tests + _path_tests(stmt.test, True), in_try)
                self._walk(stmt.orelse, tests + _path_tests(stmt.test, False), in_try)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    # a `with` may swallow an exception raised before the store that replaces a None
                    self._walk(inner, tests, in_try or isinstance(stmt, (ast.Try, ast.With, ast.AsyncWith)))
            for handler in getattr(stmt, "handlers", ()) or ():
                self._walk(handler.body, tests, True)
            for case in getattr(stmt, "cases", ()) or ():
                self._walk(case.body, tests, in_try)

    def _unknown_stores(self, nodes) -> None:
        """Names stored other than by a plain assignment: a loop's target, `with ... as`,
        `except ... as`, `x += 1`, `(x := ...)`, `del x`: what they hold is not followed."""
        for sub in own_nodes(nodes, _STORING):
            if isinstance(sub, ast.ExceptHandler):
                if sub.name:
                    self.unknown.add(sub.name)
            elif isinstance(sub, ast.NamedExpr):
                self.unknown.add(sub.target.id)
            elif isinstance(sub.ctx, (ast.Store, ast.Del)):
                self.unknown.add(sub.id)

    def _assign(self, target, value, tests, block, index, in_try) -> None:
        if isinstance(target, ast.Name):
            self.stores.setdefault(target.id, []).append((("expr", value), tests, block, index, in_try))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                for sub in every_node(target):
                    if isinstance(sub, ast.Name):
                        self.unknown.add(sub.id)
                return
            for position, element in enumerate(target.elts):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    self._assign(element, value.elts[position], tests, block, index, in_try)
                elif isinstance(element, ast.Name):
                    part = ("element", value, position) if isinstance(value, ast.Call) else ("unknown",)
                    self.stores.setdefault(element.id, []).append((part, tests, block, index, in_try))
                else:
                    for sub in every_node(element):
                        if isinstance(sub, ast.Name):
                            self.unknown.add(sub.id)
        else:
            for sub in every_node(target):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    self.unknown.add(sub.id)

    def _killed(self, name: str, block: list, index: int, in_try: bool, line: int) -> tuple:
        """Tests known false where the store at block[index] still reaches `line`: a later
        `if C:` in the block, ending before `line`, that stores the name again at its top."""
        if in_try:
            return ()
        found = ()
        for later in range(index + 1, len(block)):
            stmt = block[later]
            if (getattr(stmt, "end_lineno", None) or stmt.lineno) >= line:
                break
            if later > index + 1 and _jumps(block[later - 1:later]):
                break  # a `break`/`continue` since the store may skip this and every later `if`
            if isinstance(stmt, ast.If):
                key = config_test(stmt.test)
                if key is None:
                    continue
                for position, inner in enumerate(stmt.body):
                    if _stores(inner, name) and not _jumps(stmt.body[:position]):
                        found += ((key, False),)
                        break
        return found

    def name(self, name: str, line: int, depth: int = 0):
        """The summary of what `name` may hold at `line`: a tuple of sources, or None."""
        if name in self.unknown or name not in self.stores or depth > MAX_DEPTH:
            return None
        key = (name, line)
        if key not in self._names:
            self._names[key] = None  # a cycle through the name decides nothing
            self._names[key] = self._name(name, line, depth)
        return self._names[key]

    def _name(self, name: str, line: int, depth: int):
        sources = []
        for part, tests, block, index, in_try in self.stores[name]:
            if part[0] == "unknown":
                return None
            if part[0] == "element":
                sources.append(("call", part[1].lineno, part[1].col_offset + 1, part[2]))
                continue
            value = part[1]
            if isinstance(value, ast.Constant) and value.value is None:
                sources.append(("none", tests + self._killed(name, block, index, in_try, line)))
                continue
            summary = self.expr(value, line, depth + 1)
            if summary is None:
                return None
            sources.extend(summary)
        return tuple(sorted(set(sources), key=repr))

    def element(self, stmt, index: int):
        """The summary of a `return` tuple's element: a None there is None on the return's path."""
        node = stmt.value.elts[index]
        if isinstance(node, ast.Constant) and node.value is None:
            return (("none", self.return_tests.get(id(stmt), ())),)
        return self.expr(node, stmt.lineno)

    def expr(self, node, line: int, depth: int = 0):
        if isinstance(node, ast.Constant):
            return None if node.value is None else (NONNONE,)
        if isinstance(node, _NEVER_NONE):
            return (NONNONE,)
        if isinstance(node, ast.Name):
            return self.name(node.id, line, depth)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in self.factories and \
                    isinstance(func.value, ast.Name) and func.value.id == "torch":
                return (NONNONE,)
            return (("call", node.lineno, node.col_offset + 1, -1),)
        return None


def _header(stmt) -> list:
    """The parts of a statement outside its blocks (all of a simple statement)."""
    if isinstance(stmt, ast.If):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, ast.While):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return list(stmt.handlers)
    return [stmt]  # a simple statement, or a `match` whole


def _never_none_annotation(node) -> bool:
    if node is None:
        return False
    words = set()
    for sub in every_node(node):
        if isinstance(sub, ast.Name):
            words.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            words.add(sub.attr)
        elif isinstance(sub, ast.Constant):
            words.add("None" if sub.value is None else "?" if not isinstance(sub.value, str) else
                      "None" if any(w in sub.value for w in _MAYBE_NONE) else sub.value)
    return not words & _MAYBE_NONE


_MAYBE_NONE = frozenset({"None", "Optional", "Any", "object", "Union", "Generator", "Iterator"})


def file_none_config(tree: ast.Module, module: str | None) -> dict:
    """{"guards": {function: [(start, end, parameter, test)]} of the blocks tested `p is None and
    C`; "returns": {function: (element summaries)} of functions all of whose returns are tuples
    of one length, or "nonnone" for one annotated to return a type without None;
    "args": {(line, column): {position or keyword: summary}} of calls passing a local known
    by its stores}."""
    guards: dict = {}
    returns: dict = {}
    args: dict = {}

    def function(node, qualname: str) -> None:
        if _never_none_annotation(node.returns):
            returns[qualname] = "nonnone"
        facts = None
        own = [sub for sub in function_code(node) if type(sub) in _WANTED]
        for sub in own:
            if isinstance(sub, ast.If) and isinstance(sub.test, ast.BoolOp) and isinstance(sub.test.op, ast.And):
                none = [c.left.id for c in sub.test.values if isinstance(c, ast.Compare) and len(c.ops) == 1
                        and isinstance(c.ops[0], ast.Is) and isinstance(c.left, ast.Name)
                        and isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None]
                keys = [k for k in map(config_test, sub.test.values) if k is not None]
                if none and keys:
                    end = getattr(sub.body[-1], "end_lineno", None) or sub.body[-1].lineno
                    guards.setdefault(qualname, []).extend(
                        (sub.body[0].lineno, end, param, key) for param in none for key in keys)
        rets = [sub for sub in own if isinstance(sub, ast.Return)]
        if rets and all(isinstance(r.value, ast.Tuple) for r in rets) and len({len(r.value.elts) for r in rets}) == 1 \
                and qualname not in returns:
            facts = facts or _Function(node, TORCH_FACTORIES)
            elements = tuple(_merge([facts.element(r, i) for r in rets])
                             for i in range(len(rets[0].value.elts)))
            if any(e is not None for e in elements):
                returns[qualname] = elements
        # only a local stored None or a call's tuple element can be None only on one side of a test
        candidates = {target.id for sub in own if isinstance(sub, ast.Assign)
                      for target in _names_of(sub) if _none_or_element(sub, target)}
        for sub in own if candidates else ():
            if not isinstance(sub, ast.Call):
                continue
            pairs = [(i, a) for i, a in enumerate(sub.args) if isinstance(a, ast.Name) and a.id in candidates]
            pairs += [(k.arg, k.value) for k in sub.keywords
                      if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id in candidates]
            found = {}
            for at, arg in pairs:
                facts = facts or _Function(node, TORCH_FACTORIES)
                summary = facts.name(arg.id, sub.lineno)
                if summary is not None and any(s[0] == "none" or (s[0] == "call" and s[3] >= 0) for s in summary):
                    found[at] = summary
            if found:
                args[(sub.lineno, sub.col_offset + 1)] = found

    def walk(body, prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{prefix}{stmt.name}.")
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function(stmt, f"{module}.{prefix}{stmt.name}" if module else f"{prefix}{stmt.name}")

    walk(tree.body, "")
    return {"guards": guards, "returns": returns, "args": args} if guards or returns or args else {}


def _names_of(stmt) -> list:
    return [n for t in stmt.targets for n in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
            if isinstance(n, ast.Name)]


def _none_or_element(stmt, name) -> bool:
    value = stmt.value
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(isinstance(e, ast.Constant) and e.value is None for e in value.elts)
    return isinstance(value, ast.Call) and any(isinstance(t, (ast.Tuple, ast.List)) for t in stmt.targets)


def _merge(parts: list):
    if any(p is None for p in parts):
        return None
    return tuple(sorted({s for p in parts for s in p}, key=repr))


class NoneConfig:
    """The whole-program view: does a call's argument rule out a callee's `p is None and C`?"""

    def __init__(self, program, results: dict, edges: dict) -> None:
        self.program = program
        self.guards: dict = {}
        self.returns: dict = {}
        self.args: dict = {}  # path -> {(line, column): {at: summary}}
        for path, result in results.items():
            table = getattr(result, "none_config", None) or {}
            self.guards.update(table.get("guards", {}))
            self.returns.update(table.get("returns", {}))
            if table.get("args"):
                self.args[path] = table["args"]
        self.edges = edges
        self._targets: dict | None = None
        self._memo: dict = {}

    def ruled_out(self, path: str, call, target: str, shift: int, start: int, end: int, params: dict,
                  reads: set) -> str | None:
        """Why the call cannot take `target`'s block (start, end), whose compiled test `reads`
        these parameters as the caller passed them (constargs.py), or None."""
        items = [item for item in self.guards.get(target, ())
                 if item[0] == start and item[1] == end and item[2] in reads]
        if not items:
            return None
        passed = self.args.get(path, {}).get((call.line, call.column))
        if not passed:
            return None
        for _, _, param, key in items:
            position = params.get(param, (None,))[0]
            summary = passed.get(param)
            if summary is None and position is not None:
                summary = next((s for at, s in passed.items() if isinstance(at, int) and at + shift == position), None)
            if summary is not None and self._none_only_not(summary, key, path, 0):
                short = target.rsplit(".", 1)[-1]
                return (f"`{param}` is None only where `{'.'.join(key[0])}` is not {_SYMBOL[key[1]]} {key[2]!r}: "
                        f"the branch of `{short}` that syncs (line {start}) cannot run")
        return None

    def _none_only_not(self, summary: tuple, key: tuple, path: str, depth: int) -> bool:
        # no depth cut here: `_returns_ok` remembers each answer, and a cut would remember a
        # function's answer as it was first asked, deep or not; a cycle decides nothing there
        for source in summary:
            if source[0] == "nonnone":
                continue
            if source[0] == "none":
                if not implies_not(source[1], key):
                    return False
                continue
            _, line, column, index = source
            targets = self._callees(path, line, column)
            if not targets:
                return False
            for callee, callee_path in targets:
                if not self._returns_ok(callee, callee_path, index, key, depth + 1):
                    return False
        return True

    def _returns_ok(self, callee: str, callee_path: str, index: int, key: tuple, depth: int) -> bool:
        memo = (callee, index, key)
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = False  # a cycle decides nothing
        facts = self.returns.get(callee)
        if facts == "nonnone":
            answer = index == -1
        elif isinstance(facts, tuple) and 0 <= index < len(facts) and facts[index] is not None:
            answer = self._none_only_not(facts[index], key, callee_path, depth)
        else:
            answer = False
        self._memo[memo] = answer
        return answer

    def _callees(self, path: str, line: int, column: int) -> list:
        """[(target, its path)] of the resolved call at (line, column) of `path`."""
        if self._targets is None:
            # tuples, not sets: one per call in the tree (a set each, with its key: ~16 MB on whole vLLM)
            self._targets = {}
            for caller, out in self.edges.items():
                where = self.program.path_of.get(caller)
                for call, target, _ in out:
                    at = (where, call.line, call.column)
                    found = self._targets.get(at, ())
                    if target not in found:
                        self._targets[at] = found + (target,)
        return [(t, self.program.path_of.get(t)) for t in sorted(self._targets.get((path, line, column), ()))]


_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
