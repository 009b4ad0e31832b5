"""Census of default findings a caller's decided test could rule out (issue 24 class 5).

For each default (non-cold) finding of a `syncscope lint --output-format json` report, reads its
chain: at each call step, the tests the caller has decided on the call's line (an earlier
`if T: raise/return/continue/break` in an enclosing block, or the call inside `if T:` / `if not
T:` / the else of `if T:`), where T is a method call with no arguments, a comparison, or an
attribute, on an attribute chain that starts at a parameter (or `self`); and, in each function
further down the chain whose parameter receives that same object unchanged (the caller's name
passed as an argument, or `self` for a `self.` call), the tests decided the other way on the
line the chain passes through. A finding whose chain has such a pair is counted: ruling the
pair out removes that chain (the finding goes only if no other chain of the callee syncs).

`--nested` counts instead the findings whose line lies under the same test both ways in its own
function (`if T:` ... `if T: ... else: <line>`).

Reads source with `ast` only; a quick measure, not part of the linter.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os

from syncscope.lint.ast_annotations import dotted

EXITS = (ast.Raise, ast.Return, ast.Continue, ast.Break)


@functools.lru_cache(None)
def parse(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None


def function_at(tree, line: int):
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def chain_of(node):
    """`a.b.c` as ("a", "b", "c"); None when it does not start at a name."""
    name = dotted(node)
    return tuple(name.split(".")) if name else None


def atoms(test) -> list:
    """[(root, key, value when the test is true)] of the test's simple parts."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return [(root, key, not value) for root, key, value in atoms(test.operand)]
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        chain = chain_of(test.func)
        if chain and len(chain) >= 2:
            return [(chain[0], chain[1:] + ("()",), True)]
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        chain = chain_of(test.left)
        if chain and len(chain) >= 2:
            return [(chain[0], chain[1:] + (type(test.ops[0]).__name__, ast.unparse(test.comparators[0])), True)]
    if isinstance(test, ast.Attribute):
        chain = chain_of(test)
        if chain and len(chain) >= 2:
            return [(chain[0], chain[1:], True)]
    return []


def _parts(test, value: bool) -> list:
    """The atoms a test being `value` fixes (`a and b` true fixes both, `a or b` false too)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if value else ast.Or):
        return [atom for part in test.values for atom in _parts(part, value)]
    return [(root, key, truth == value) for root, key, truth in atoms(test)]


def decided(function, line: int) -> list:
    """[(root, key, value)] of the tests decided on `line` of `function`."""
    out = []

    def walk(body) -> None:
        for index, stmt in enumerate(body):
            if not stmt.lineno <= line <= stmt.end_lineno:
                continue
            for before in body[:index]:
                if isinstance(before, ast.If) and before.body and isinstance(before.body[-1], EXITS) \
                        and not before.orelse:
                    out.extend(_parts(before.test, False))
            if isinstance(stmt, ast.If):
                if stmt.body and stmt.body[0].lineno <= line <= stmt.body[-1].end_lineno:
                    out.extend(_parts(stmt.test, True))
                    walk(stmt.body)
                elif stmt.orelse and stmt.orelse[0].lineno <= line:
                    out.extend(_parts(stmt.test, False))
                    walk(stmt.orelse)
                return
            for field in ("body", "orelse", "finalbody", "handlers"):
                for sub in getattr(stmt, field, None) or ():
                    if sub.lineno <= line <= sub.end_lineno:
                        walk(sub.body if isinstance(sub, ast.ExceptHandler) else getattr(stmt, field))
                        return
            return

    walk(function.body)
    return out


def receiver(function, line: int, callee: str, root: str):
    """The callee's parameter that receives `root` at the call on `line` (None: not passed)."""
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= node.end_lineno):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != callee.rsplit(".", 1)[-1]:
            continue
        if root == "self" and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "self":
            return ("self", None)
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Name) and arg.id == root:
                return ("position", position + (1 if isinstance(node.func, ast.Attribute) else 0))
        for keyword in node.keywords:
            if isinstance(keyword.value, ast.Name) and keyword.value.id == root:
                return ("keyword", keyword.arg)
    return None


def parameter(function, how) -> str | None:
    names = [a.arg for a in function.args.posonlyargs + function.args.args]
    if how[0] == "self":
        return names[0] if names else None
    if how[0] == "position":
        # a bound method call skips `self`; a plain function call does not
        index = how[1] if names and names[0] in ("self", "cls") else how[1] - 1
        return names[index] if 0 <= index < len(names) else None
    return how[1]


def across(root_dir: str, finding: dict):
    chain = finding.get("chain") or []
    for i in range(len(chain) - 1):
        step, nxt = chain[i], chain[i + 1]
        tree = parse(os.path.join(root_dir, step["path"]))
        function = tree and function_at(tree, step["line"])
        if function is None:
            continue
        params = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
        for root, key, value in decided(function, step["line"]):
            if root not in params:
                continue
            how = receiver(function, step["line"], nxt["function"], root)
            callee_tree = how and parse(os.path.join(root_dir, nxt["path"]))
            callee = callee_tree and function_at(callee_tree, nxt["line"])
            if callee is None:
                continue
            name = parameter(callee, how)
            if any(r == name and k == key and v != value for r, k, v in decided(callee, nxt["line"])):
                return (step["path"], step["line"], nxt["path"], nxt["line"], root, key, value)
    return None


def nested(root_dir: str, finding: dict):
    tree = parse(os.path.join(root_dir, finding["path"]))
    function = tree and function_at(tree, finding["line"])
    if function is None:
        return None
    seen = {}
    for root, key, value in decided(function, finding["line"]):
        if seen.get((root, key), value) != value:
            return (root, key)
        seen[(root, key)] = value
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="lint JSON report (--output-format json)")
    parser.add_argument("root", help="directory the report's paths are relative to")
    parser.add_argument("--nested", action="store_true", help="count lines under the same test both ways")
    args = parser.parse_args()
    with open(args.report, encoding="utf-8") as handle:
        findings = [f for f in json.load(handle) if not f.get("cold")]
    count = 0
    for finding in findings:
        hit = nested(args.root, finding) if args.nested else across(args.root, finding)
        if hit:
            count += 1
            print(f"{finding['path']}:{finding['line']} {finding['code']} {hit}")
    print(f"{count} of {len(findings)} default findings")


if __name__ == "__main__":
    main()
