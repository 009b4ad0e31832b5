"""A field filled with a field of what a call returns: its class is the one declared there.

    class GraphCapture(msgspec.Struct):
        runner: Optional[BaseRunner]

    def capture_prefill_graph(...) -> GraphCapture: ...

    class ModelRunner:
        def init_prefill_cuda_graph(self):
            capture = capture_prefill_graph(model_runner=self)
            self.prefill_cuda_graph_runner = capture.runner

        def _forward_raw(self, forward_batch):
            ret = self.prefill_cuda_graph_runner.execute(forward_batch, **kwargs)

(SGLang 0.5.23.) The field's store names no class, so the call went by name to every `execute`
the model runner's imports can meet, and those meet the diffusion package's pipeline executors
(an import closure of 2,718 of the tree's 4,006 modules): the LLM engine's step reached the
diffusion offload managers. Yet the object is whatever `capture.runner` holds, and that field
is declared `BaseRunner` in the class the function is annotated to return: the call runs a
`BaseRunner`'s `execute` (one of its family's, the base's being abstract: stubs.py).

The fact, about code: `self.f = local.a.b` (one or more hops), where the function binds `local`
once, by `local = g(...)`, types `f` as `g`'s result's `a`'s `b`: recorded as the string
`"<g>().a.b"` among the class's `fields` (facts.py), resolved over the whole program by
`Program.field_class` (`read_class` here): `g` a class (its construction) or a function whose
return annotation names one class, then each hop through the declared field classes. It is the
same trust as an annotated field's or a typed parameter's, one store further: where a hop does
not resolve (an undeclared field, a union return, a library class) the field stays untyped.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .nodewalk import every_node

READ_OFF = "()."  # `"<callee>().a.b"`: field `a`'s `b` of what calling the callee returns


def read_field(scope, value: ast.Attribute) -> str | None:
    """`"<callee>().a.b"` for `local.a.b` with `local` bound once in the function, to `callee(...)`
    (its qualified name as this file resolves it); None for anything else."""
    hops: list[str] = []
    node = value
    while isinstance(node, ast.Attribute):
        hops.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id == "self" or scope.node is None:
        return None
    bindings = [stmt for stmt in every_node(scope.node) if _binds(stmt, node.id)]
    assigned = [stmt for stmt in every_node(scope.node) if isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1 and stmt.targets[0] in bindings and isinstance(stmt.value, ast.Call)]
    if len(bindings) != 1 or len(assigned) != 1:
        return None  # a parameter, a loop variable, an unpacking, bound twice, or no call's result
    callee = dotted(assigned[0].value.func)
    qualified = scope.file.resolve_name(callee, scope.local_defs) if callee else None
    return f"{qualified}{READ_OFF}{'.'.join(reversed(hops))}" if qualified else None


def _binds(stmt, name: str) -> bool:
    """Whether `stmt` binds `name` (any binding form: an assignment, a loop, `with ... as`, an
    import, a parameter, a nested definition)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == name
    if isinstance(stmt, ast.arg):
        return stmt.arg == name
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in stmt.names)
    return isinstance(stmt, ast.Name) and stmt.id == name and isinstance(stmt.ctx, (ast.Store, ast.Del))


def read_class(program, given: str, depth: int = 0) -> str | None:
    """The class a `"<callee>().a.b"` field holds: the callee's class (a construction) or the one
    class its return annotation names, then each hop's declared class; None where one is not
    known (or the reading goes round: a field read off a call that returns its own class)."""
    head, _, rest = given.partition(READ_OFF)
    if depth > 4:
        return None
    cls = program.chase(head, True)
    if cls is None:
        function = program.chase(head)
        facts = program.functions.get(function) if function is not None else None
        cls = program.chase(facts.get("returns_class"), True) if facts is not None else None
    for hop in rest.split("."):
        if cls is None:
            return None
        cls = program.field_class(cls, hop, depth + 1)
    return cls
