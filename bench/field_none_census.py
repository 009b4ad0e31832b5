"""Census of default findings that lie in the None arm of a test on a field (issue 24 class 5,
"guards"), and whether the field fact "every construction and every store gives the field a value
that is not None" holds for the field.

For each default (non-cold) finding of a `syncscope lint --output-format json --include-cold`
report, the finding's line and every line of its chain are checked against the None arms of
field tests in the function around them:
- `if X.f is None:` (alone or a conjunct of an `and`): its body;
- `if X.f is not None:`: its `else`, and the rest of the function when the body ends in
  `return`/`raise`;
- `a if X.f is not None else B` / `B if X.f is None else a`: B;
- a local alias `a = X.f` tested the same way (flow-insensitive: any plain `a = X.f` in the
  function).
The receiver's class is not resolved, so fields are grouped by name (an upper bound: a sound rule
needs the class of X too).

For each field name the census then reads the whole tree:
- classes that declare the field in their body (`f: T = default`) and every call of such a class
  by name (`C(...)`, and `cls(...)` / `type(self)(...)` in its own methods): a construction that leaves the field out while its default is None, passes
  `**mapping` or `*args` without it, or passes a value that may be None, keeps the arm live;
- every store `x.f = v` and every `replace(..., f=v)` / `_replace(f=v)` on any receiver: a value
  that may be None keeps the arm live.
"May be None": the literal None, a conditional expression with such an arm, a name, an attribute,
a call (unknown return), `a or b` / `a and b` with such a part. Never None: other literals,
displays and comprehensions, arithmetic, comparisons, f-strings, subscripts with a slice.
A field passing every check is "decided".

Reads source with `ast` only; a quick measure, not part of the linter.
usage: python bench/field_none_census.py TREE_PACKAGE_DIR REPORT.json
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os

_NEVER_NONE = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
               ast.GeneratorExp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr)


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def may_be_none(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, _NEVER_NONE):
        return False
    if isinstance(node, ast.IfExp):
        return may_be_none(node.body) or may_be_none(node.orelse)
    if isinstance(node, ast.Subscript):
        return not isinstance(node.slice, ast.Slice)
    return True  # a name, an attribute, a call, a boolean operation: unknown


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _tested_field(test, aliases: dict):
    """(field, True when the test is true exactly when the field is None) or None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none(test.comparators[0]):
        left = test.left
        field = left.attr if isinstance(left, ast.Attribute) else \
            aliases.get(left.id) if isinstance(left, ast.Name) else None
        if field and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            return field, isinstance(test.ops[0], ast.Is)
    return None


def _span(stmts):
    return stmts[0].lineno, max(s.end_lineno for s in stmts)


def none_arms(function) -> list[tuple[str, int, int]]:
    aliases = {n.targets[0].id: n.value.attr for n in ast.walk(function)
               if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Attribute)}
    arms = []
    for node in ast.walk(function):
        if isinstance(node, ast.If):
            conjuncts = node.test.values if isinstance(node.test, ast.BoolOp) and \
                isinstance(node.test.op, ast.And) else [node.test]
            for test in conjuncts:
                hit = _tested_field(test, aliases)
                if hit and hit[1]:
                    arms.append((hit[0],) + _span(node.body))
            hit = _tested_field(node.test, aliases)
            if hit and not hit[1]:
                if node.orelse:
                    arms.append((hit[0],) + _span(node.orelse))
                if isinstance(node.body[-1], (ast.Return, ast.Raise)):
                    arms.append((hit[0], node.end_lineno + 1, function.end_lineno))
        elif isinstance(node, ast.IfExp):
            hit = _tested_field(node.test, aliases)
            if hit:
                arm = node.body if hit[1] else node.orelse
                arms.append((hit[0], arm.lineno, arm.end_lineno))
    return arms


class Tree:
    def __init__(self, package_dir: str):
        self.base = os.path.dirname(os.path.abspath(package_dir))
        self.modules: dict[str, ast.Module] = {}
        for folder, _, files in os.walk(package_dir):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    try:
                        self.modules[os.path.relpath(path, self.base)] = ast.parse(open(path).read())
                    except (SyntaxError, UnicodeDecodeError):
                        pass
        self.declared = collections.defaultdict(list)   # field -> [(class, default may be None, position, rel:line)]
        self.calls = collections.defaultdict(list)      # callee name -> [(rel, call)]
        self.stores = collections.defaultdict(list)     # field -> [(rel:line, value)]
        self._arms = {}
        for rel, tree in self.modules.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    fields = [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                    for place, stmt in enumerate(fields):
                        none_default = stmt.value is not None and may_be_none(stmt.value)
                        self.declared[stmt.target.id].append(
                            (node.name, stmt.value is None, none_default, place, f"{rel}:{stmt.lineno}"))
                    # `cls(...)` / `type(self)(...)` in the class's own methods build it too
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.Call) and (
                                isinstance(inner.func, ast.Name) and inner.func.id == "cls" or
                                isinstance(inner.func, ast.Call) and _callee(inner.func) == "type"):
                            self.calls[node.name].append((rel, inner))
                elif isinstance(node, ast.Call):
                    callee = _callee(node)
                    if callee:
                        self.calls[callee].append((rel, node))
                    if callee in ("replace", "_replace"):
                        for kw in node.keywords:
                            if kw.arg:
                                self.stores[kw.arg].append((f"{rel}:{node.lineno} replace", kw.value))
                elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute):
                            self.stores[target.attr].append((f"{rel}:{node.lineno}", node.value))

    def arms_at(self, rel: str, line: int) -> set:
        if rel not in self._arms:
            tree = self.modules.get(rel)
            self._arms[rel] = [arm for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                               for arm in none_arms(fn)] if tree else []
        return {field for field, lo, hi in self._arms[rel] if lo <= line <= hi}

    def blockers(self, field: str) -> list[str]:
        out = []
        for rel_line, value in self.stores[field]:
            if may_be_none(value):
                out.append(f"store {ast.unparse(value)[:50]!r} at {rel_line}")
        for cls, required, none_default, place, where in self.declared[field]:
            for rel, call in self.calls[cls]:
                given = {kw.arg: kw.value for kw in call.keywords if kw.arg}
                starred = any(kw.arg is None for kw in call.keywords) or \
                    any(isinstance(a, ast.Starred) for a in call.args)
                at = f"{cls}(...) at {rel}:{call.lineno}"
                if field in given:
                    if may_be_none(given[field]):
                        out.append(f"{at} passes {ast.unparse(given[field])[:50]!r}")
                elif place < len(call.args) and not starred:
                    if may_be_none(call.args[place]):
                        out.append(f"{at} passes {ast.unparse(call.args[place])[:50]!r} by place")
                elif starred:
                    out.append(f"{at} passes *args/**mapping")
                elif none_default:
                    out.append(f"{at} leaves it out (default None, {where})")
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("report")
    args = parser.parse_args()
    tree = Tree(args.tree)
    findings = [f for f in json.load(open(args.report)) if f.get("category") != "cold"]
    by_field = collections.defaultdict(list)
    for finding in findings:
        places = [(finding["path"], finding["line"])] + [(s["path"], s["line"]) for s in finding.get("chain") or []]
        for field in set().union(*(tree.arms_at(p, l) for p, l in places)):
            by_field[field].append(f"{finding['code']} {finding['path']}:{finding['line']}")
    under = {x for found in by_field.values() for x in found}
    print(f"default findings {len(findings)}; under a field None arm {len(under)}; fields {len(by_field)}")
    decided = 0
    for field, found in sorted(by_field.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        blocks = tree.blockers(field)
        if not blocks:
            decided += len(found)
        print(f"{field}: {len(found)} findings; {'DECIDED' if not blocks else f'{len(blocks)} blockers, e.g. ' + blocks[0]}")
        for line in found[:3]:
            print("    " + line)
    print(f"findings under a decided field's arm (fields by name, an upper bound): {decided}")


if __name__ == "__main__":
    main()
