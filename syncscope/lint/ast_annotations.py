"""How the `ast` walk (facts.py) reads names, decorators and annotations: the dotted name of an
expression, a return annotation of Python scalars, where a value of an annotated type lives, the
class an alternative constructor makes. The libcst walk reads the same words from vocabulary.py."""

from __future__ import annotations

import ast

from syncscope.with_blocks import dotted  # the dotted name of an expression, shared with the trap

from .vocabulary import SCALAR_TYPES, annotation_place


def decorator_names(node) -> list[str]:
    out = []
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call):
            decorator = decorator.func
        out.append((dotted(decorator) or "").lower())
    return out


def scalar_annotation(node) -> bool:
    """A return annotation of Python scalars only (`float`, `int | None`, `Optional[bool]`, a
    string annotation of one): what such a function returns is never a tensor. Containers are
    not (`tuple[int, torch.Tensor]` holds tensors)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(node, ast.Constant) and node.value is None:
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        members = [node.left, node.right]
    elif isinstance(node, ast.Subscript) and last_name(node.value) in ("Optional", "Union"):
        members = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    else:
        return last_name(node) in SCALAR_TYPES
    members = [m for m in members if not (isinstance(m, ast.Constant) and m.value is None)]
    return bool(members) and all(scalar_annotation(m) for m in members)


def last_name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def annotation_where(node) -> int | None:
    """Where a value of this annotated type lives (vocabulary.annotation_place)."""
    return annotation_place(node, annotation_shape)[0]


def annotation_shape(node) -> tuple:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "name", "None"
        if not isinstance(node.value, str):
            return "", None
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return "", None
    if isinstance(node, (ast.Name, ast.Attribute)):
        return "name", dotted(node) or ""
    if isinstance(node, ast.Subscript):
        return "generic", dotted(node.value) or "", node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return "union", None, [node.left, node.right]
    return "", None


def factory_class(made: str | None) -> str | None:
    """`Cls.from_server_args(...)`, `Cls._from_config(...)`: an alternative constructor makes a `Cls` (or
    a subclass, whose inherited methods the class's own lookup still finds): SGLang's
    `self.dllm_algorithm = DllmAlgorithm.from_server_args(server_args)`, whose `run` the per-step
    worker calls. Any other name is returned as it is."""
    if made is None or "." not in made:
        return made
    owner, method = made.rsplit(".", 1)
    # `create*` is left out: factories (`EventPublisherFactory.create`) return other classes, and
    # `DecodeStagingHandler.create` typed that way reached its per-request release path's stream
    # synchronize from the decode queue (SGLang 0.5.20 disaggregation/decode.py:2452)
    # `_from_config` too: Hugging Face's private alternative constructor (`Tower._from_config(cfg)`)
    if owner.rsplit(".", 1)[-1][:1].isupper() and method.lstrip("_").startswith("from_"):
        return owner
    return made


def annotated_one(node) -> bool:
    """A return annotation that names one type (besides None): not absent, not a union."""
    return node is not None and not unioned(node)


def unioned(node) -> bool:
    """`A | B`, `Union[A, B]`: an annotation of more than one type besides None (a receiver typed
    by it could be either, so it names no one class)."""
    members = union_members(node)
    return members is None or len(members) > 1


def union_members(node) -> list | None:
    """The types an annotation names besides None: `Union[A, B]`, `A | B | None` -> [A, B];
    `Optional[A]` -> [Optional[A]] (one type); None for a string annotation that does not parse."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    parts: list = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.BitOr):
            pending += [current.left, current.right]
        elif isinstance(current, ast.Subscript) and (dotted(current.value) or "").rsplit(".", 1)[-1] == "Union":
            pending += current.slice.elts if isinstance(current.slice, ast.Tuple) else [current.slice]
        elif not (isinstance(current, ast.Constant) and current.value is None) and dotted(current) != "None":
            parts.append(current)
    return parts


def given_class(scope, value) -> str | None:
    """The class `self.x = value` gives a field (facts.py's `given`): that of a parameter annotated
    with one class; None for anything else. A union (`Union[A, B]`) names none: the field may hold
    either, so its calls stay unlimited (receivers.py). SGLang's `HiSparseCoordinator` keeps
    `token_to_kv_pool_allocator: Union[HiSparseTokenToKVPoolAllocator,
    DeepSeekV4HiSparseTokenToKVPoolAllocator]`, and the first alone hid the second's methods."""
    facts, args = scope.facts, getattr(scope.node, "args", None)
    if not isinstance(value, ast.Name) or args is None or value.id not in facts["params"] + facts["kwonly"]:
        return None
    annotation = next((a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg == value.id), None)
    return None if annotation is not None and unioned(annotation) else scope.types.get(value.id)
