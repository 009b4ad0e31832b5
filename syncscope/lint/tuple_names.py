"""Tuples a function returns by name: `result = (cos, sin, index); ...; return result`.

facts.py records where each member of a tuple literal bound to a plain name lives, as it does for
`return a, b`, and a `return result` then gives those members (`tuple_returns`): a caller
unpacking the call (`cos, sin, index = helper(x)`) gets each member's own place
(wholeprogram.Solver.tuple_returns), not one place for the whole result.

A call that spreads such a name (`inputs = (kwargs.get("pixel_values"), kwargs.get("grid_thw"));
self._process(*inputs)`) passes its members by position, each with its own place
(`positional_args`), as if they were written out: the callee's parameters are then fed like any
others (wholeprogram.Solver.host_fed), not given up as passed through `*args`.

A memo read returned beside it gives the same tuple: in

    if key in self._memo:
        return self._memo[key]
    ...
    self._memo[key] = result
    return result

the dict holds only what the function stores in it, a name the function also returns, so the
early `return self._memo[key]` is counted as that return (`memo_returns`; any other store into
that field in the function, of another value, and it is not).
"""

from __future__ import annotations

import ast

from . import provenance as P
from .ast_annotations import dotted
from .fact_values import NAMED_LIST


def members(value) -> tuple | None:
    """The member nodes of a tuple literal with no `*` member, else None."""
    if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts):
        return tuple(value.elts)
    return None


def _own_nodes(body):
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def returned(scope, value) -> tuple | None:
    """The facts of each member of a returned tuple: `return a, b` or `return result`."""
    if isinstance(value, ast.Tuple):
        return tuple(scope.eval(e) for e in value.elts)
    return scope.tuples.get(value.id) if isinstance(value, ast.Name) else None


def note_memo_returns(facts: dict, node, tuples: dict) -> None:
    if facts["tuple_returns"] and (count := memo_returns(node, set(tuples))):
        facts["memo_returns"] = count


def memo_returns(node, tuple_names: set[str]) -> int:
    """How many `return self.F[k]` of the function read a dict field that it fills only with a
    tuple it also returns by name (`tuple_names`)."""
    stored: dict[str, set] = {}  # field -> what is stored into it: names, or None for anything else
    returned_reads, returned_names = [], set()
    for sub in _own_nodes(node.body):
        if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Subscript):
            returned_reads.append(dotted(sub.value.value))
        elif isinstance(sub, ast.Return) and isinstance(sub.value, ast.Name):
            returned_names.add(sub.value.id)
        elif isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Subscript) and (dotted(target.value) or "").startswith("self."):
                    stored.setdefault(dotted(target.value), set()).add(
                        sub.value.id if isinstance(sub.value, ast.Name) else None)
    good = {f for f, names in stored.items()
            if None not in names and names <= (tuple_names & returned_names)}
    return sum(1 for read in returned_reads if read in good)


def unpack(scope, target, parts: tuple | None, members_of: tuple = ()) -> bool:
    """`t, h = int(t), int(h)`: each target bound to its own member's fact; `result = (a, b)`:
    the name keeps the members' facts (for `return result`). False when neither applies."""
    if parts is None:
        return False
    if isinstance(target, ast.Name):
        scope.bind(target, (P.PY, None, None), None)
        scope.tuples[target.id] = parts
        return True
    if not isinstance(target, (ast.Tuple, ast.List)) or not len(target.elts) == len(parts) == len(members_of) \
            or any(isinstance(e, ast.Starred) for e in target.elts):
        return False
    for element, fact, member in zip(target.elts, parts, members_of):
        # a plain read (`pending, self.group = self.group, None`) keeps no fact: a container
        # field's Python-value fact says nothing of the tensors it holds. Host memory stays
        # host (`ids, lp = result.next_token_ids, result.logprobs` after a copy to the host)
        host = fact[0] == P.HOST and fact[1] is None and fact[2] != NAMED_LIST
        plain = isinstance(member, (ast.Name, ast.Attribute, ast.Subscript)) and not host
        scope.bind(element, (P.UNKNOWN, None, None) if plain else fact, None)
    return True


def positional_args(scope, args) -> list:
    """(position, None, fact) of a call's positional arguments, `*name` of a tuple literal
    spread into its members. A `*` of anything else leaves the positions as written (the
    call is then one with `*args`, whose unnamed parameters the whole-program pass gives up)."""
    starred = [a for a in args if isinstance(a, ast.Starred)]
    if not starred or not all(isinstance(a.value, ast.Name) and a.value.id in scope.tuples for a in starred):
        return [(i, None, scope.eval(a)) for i, a in enumerate(args) if not isinstance(a, ast.Starred)]
    spread = [scope.tuples[a.value.id] if isinstance(a, ast.Starred) else None for a in args]
    out: list = []
    for a, parts in zip(args, spread):
        for fact in parts if parts is not None else (scope.eval(a),):
            out.append((len(out), None, fact))
    return out
