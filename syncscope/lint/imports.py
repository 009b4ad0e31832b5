"""Per-module import aliases, so `th.cuda.synchronize()` and `from torch import nonzero` resolve
to `torch.cuda.synchronize` / `torch.nonzero` without libcst's (slow) QualifiedNameProvider."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names, None for anything else (calls, subscripts...)."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _absolute(module: str, level: int, target: str | None, is_package: bool) -> str:
    """Resolve `from ..x import y` against the importing module's dotted name."""
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    drop = level - 1 if is_package else level
    base = parts[: len(parts) - drop] if drop <= len(parts) else []
    if target:
        base = base + [target]
    return ".".join(base)


def record_import(node: cst.Import | cst.ImportFrom, aliases: dict[str, str], module: str, is_package: bool) -> None:
    """Add what an import statement binds to `aliases` (local name -> qualified name)."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            name = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                aliases[alias.asname.name.value] = name
            else:
                # `import torch.nn.functional` binds `torch`
                root = name.split(".")[0]
                aliases[root] = root
        return
    if isinstance(node.names, cst.ImportStar):
        return
    level = len(node.relative)
    target = dotted(node.module) if node.module is not None else None
    source = _absolute(module, level, target, is_package)
    for alias in node.names:
        if not isinstance(alias.name, cst.Name):
            continue
        local = alias.name.value
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        aliases[local] = f"{source}.{alias.name.value}" if source else alias.name.value


def aliases_from_ast(tree, module: str, is_package: bool) -> dict[str, str]:
    """The same table as record_import builds, from Python's `ast` of the whole module: the
    module-level imports, including those under `if TYPE_CHECKING:` and `try:`."""
    import ast

    aliases: dict[str, str] = {}
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node.level, node.module, is_package)
            for alias in node.names:
                if alias.name == "*":
                    continue
                aliases[alias.asname or alias.name] = f"{source}.{alias.name}" if source else alias.name
        elif isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            pending.extend(node.body)
            pending.extend(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                pending.extend(handler.body)
            pending.extend(getattr(node, "finalbody", []))
    return aliases
