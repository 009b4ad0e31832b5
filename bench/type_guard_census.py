"""Census of default findings whose chain passes a callee's type guard (issue 24 class 5).

For each default (non-cold) SYN601/SYN602 finding of a `syncscope lint --output-format json`
report, reads its printed chain: at each call step, whether the line the chain passes through in
the callee lies under a test of a callee parameter's type (`not torch.is_tensor(p)`,
`isinstance(p, torch.Tensor)`, `isinstance(p, (int, float, list, ...))`, negated or not, in an
`if`/`elif` arm or its `else`), and what THIS call passes for that parameter, classified from the
caller's source alone:

* `tensor`: a `torch.<op>(...)` that always returns a tensor, a parameter of the caller annotated
  exactly `torch.Tensor` (never rebound), a subscript or `.contiguous()/.clone()/.to()` of one, a
  local every store of which is one of these;
* `tensor|None`: a parameter annotated `Optional[torch.Tensor]` (or `Tensor | None`);
* `non-tensor`: a literal, a display (`[a]`, `(a, b)`, `{}`), None;
* `field`, `call`, `param`, `local`, `other`: nothing the caller's source decides.

A step whose argument's kind makes the guard false (a tensor where the guard needs a non-tensor,
a non-tensor where it needs a tensor) is ruled out for that call site. The printed chain is the
shortest, so the count is an upper bound on what a per-call-site rule removes. `ast` only; a
quick measure, not part of the linter.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os

from caller_guard_census import function_at, parse  # bench/ is on sys.path when run as a script

TENSOR_OPS = frozenset("tensor as_tensor zeros ones empty full arange cat concat stack zeros_like ones_like "
                       "empty_like full_like from_numpy".split())
NON_TENSOR_TYPES = frozenset("int float complex bool list tuple dict set frozenset str bytes".split())
TENSOR_METHODS = frozenset({"contiguous", "clone", "to", "cuda", "detach"})




def _dotted(node) -> str:
    return ast.unparse(node)


def type_test(test):
    """(param, needs_tensor) of a type test on a bare name; None otherwise."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    node = test.operand if negated else test
    if not (isinstance(node, ast.Call) and len(node.args) >= 1 and isinstance(node.args[0], ast.Name)):
        return None
    func = _dotted(node.func)
    if func in ("torch.is_tensor", "is_tensor") and len(node.args) == 1:
        return node.args[0].id, not negated
    if func == "isinstance" and len(node.args) == 2:
        kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        names = {_dotted(k) for k in kinds}
        if names <= {"torch.Tensor", "Tensor"}:
            return node.args[0].id, not negated
        if names <= NON_TENSOR_TYPES:
            return (node.args[0].id, None) if negated else (node.args[0].id, False)
    return None


def guards_of(function, line: int) -> list:
    """[(param, needs_tensor)] of the type tests the line lies under (arm or else)."""
    out = []

    def walk(body) -> None:
        for stmt in body:
            if not stmt.lineno <= line <= stmt.end_lineno or isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                found = type_test(stmt.test)
                inside = stmt.body[0].lineno <= line <= stmt.body[-1].end_lineno
                if found is not None and found[1] is not None:
                    out.append((found[0], found[1] if inside else None if found[1] is False else not found[1]))
                walk(stmt.body if inside else stmt.orelse)
                return
            for field in ("body", "orelse", "finalbody"):
                walk(getattr(stmt, field, None) or [])
            for handler in getattr(stmt, "handlers", ()) or ():
                walk(handler.body)
            return

    walk(function.body)
    return [g for g in out if g[1] is not None]


def _annotation_kind(annotation) -> str | None:
    if annotation is None:
        return None
    text = ast.unparse(annotation).replace(" ", "")
    if text in ("torch.Tensor", "Tensor"):
        return "tensor"
    if text in ("Optional[torch.Tensor]", "Optional[Tensor]", "torch.Tensor|None", "Tensor|None", "None|torch.Tensor"):
        return "tensor|None"
    return None


def kind(function, node, depth: int = 0) -> str:
    params = {a.arg: a.annotation for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
    if isinstance(node, ast.Constant) or isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp)):
        return "non-tensor"
    if isinstance(node, ast.Call):
        func = _dotted(node.func)
        if func.startswith("torch.") and func[6:] in TENSOR_OPS:
            return "tensor"
        if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
            inner = kind(function, node.func.value, depth + 1)
            return inner if inner == "tensor" else "call"
        return "call"
    if isinstance(node, ast.Subscript):
        inner = kind(function, node.value, depth + 1)
        return "tensor" if inner == "tensor" else "other"
    if isinstance(node, ast.Attribute):
        return "field"
    if isinstance(node, ast.Name):
        stores = [sub for sub in ast.walk(function) if isinstance(sub, ast.Name) and sub.id == node.id
                  and isinstance(sub.ctx, (ast.Store, ast.Del))]
        if node.id in params:
            if stores:
                return "param"
            return _annotation_kind(params[node.id]) or "param"
        values = []
        for sub in ast.walk(function):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) \
                    and sub.targets[0].id == node.id:
                values.append(sub.value)
        if depth > 4 or not values or len(values) != len(stores):
            return "local"
        kinds = {kind(function, v, depth + 1) for v in values}
        return kinds.pop() if len(kinds) == 1 else "local"
    return "other"


def argument(function, line: int, callee, param: str):
    """The expression the call on `line` to `callee` passes for `param` (None: not found)."""
    names = [a.arg for a in callee.args.posonlyargs + callee.args.args]
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= node.end_lineno):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != callee.name:
            continue
        for keyword in node.keywords:
            if keyword.arg == param:
                return keyword.value
        shift = 1 if names and names[0] in ("self", "cls") and isinstance(node.func, ast.Attribute) else 0
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            if position + shift < len(names) and names[position + shift] == param:
                return arg
    return None


def across(root_dir: str, finding: dict) -> list:
    chain = finding.get("chain") or []
    hits = []
    for i in range(len(chain) - 1):
        step, nxt = chain[i], chain[i + 1]
        tree, callee_tree = parse(os.path.join(root_dir, step["path"])), parse(os.path.join(root_dir, nxt["path"]))
        function = tree and function_at(tree, step["line"])
        callee = callee_tree and function_at(callee_tree, nxt["line"])
        if function is None or callee is None:
            continue
        for param, needs_tensor in guards_of(callee, nxt["line"]):
            arg = argument(function, step["line"], callee, param)
            what = kind(function, arg) if arg is not None else "not found"
            ruled = (what == "tensor" and not needs_tensor) or (what == "non-tensor" and needs_tensor)
            hits.append((f"{step['path']}:{step['line']}", f"{nxt['path']}:{nxt['line']}", param,
                         "needs tensor" if needs_tensor else "needs non-tensor",
                         ast.unparse(arg) if arg is not None else None, what, ruled))
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report")
    parser.add_argument("root")
    args = parser.parse_args()
    with open(args.report, encoding="utf-8") as handle:
        findings = [f for f in json.load(handle) if f.get("category") != "cold" and f["code"] in ("SYN601", "SYN602")]
    through, ruled = 0, 0
    kinds = collections.Counter()
    for finding in findings:
        hits = across(args.root, finding)
        if not hits:
            continue
        through += 1
        ruled += any(hit[-1] for hit in hits)
        for hit in hits:
            kinds[hit[5]] += 1
            print(f"{finding['code']} {finding['path']}:{finding['line']} | {hit}")
    print(f"{len(findings)} default SYN601/602; {through} pass a type guard on their printed chain; "
          f"{ruled} have a step the call's argument rules out; argument kinds: {dict(kinds)}")


if __name__ == "__main__":
    main()
