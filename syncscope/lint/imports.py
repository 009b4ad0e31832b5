"""Per-module import aliases, so `th.cuda.synchronize()` and `from torch import nonzero` resolve
to `torch.cuda.synchronize` / `torch.nonzero` without libcst's (slow) QualifiedNameProvider."""

from __future__ import annotations

import re

import libcst as cst

from .fact_values import STAR  # (re-exported: the exports' key of a module's `import *` sources)


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




def with_star_sources(aliases: dict[str, str], tree, module: str, is_package: bool) -> dict[str, str]:
    """The module's import table for re-exports: `aliases`, and where the module says `from M
    import *` at its top level, a copy with `"*"` -> those modules, space-separated (a name no
    import binds): Program.star_export reads what the module re-exports from them."""
    import ast

    sources = [_absolute(module, node.level, node.module, is_package) for node in tree.body
               if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)]
    return {**aliases, STAR: " ".join(sources)} if sources else aliases


_IMPORT_LINE = re.compile(r"[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?[ \t]*([\w., \t]*)|import[ \t]+([\w., \t]+))")


def imported_names(text: str, module: str, is_package: bool) -> tuple[str, ...]:
    """Every dotted name the module imports anywhere (in a function too: `from .impl import
    Impl` inside a factory), absolute, and the string literals under its own top package that
    name one (`("vllm.models.beam", "Model")` in a registry that `importlib` loads), less those
    only compared (`loaded_strings`): what the module's code may load (importclosure.py keeps
    those that are modules of the tree). A
    line scan, not a walk of the tree: as cheap as a regular expression over the text."""
    names: set[str] = set()
    at = text.find("import")
    while at >= 0:
        found = _IMPORT_LINE.match(text, text.rfind("\n", 0, at) + 1)
        if found is not None:
            source, what, plain = found.groups()
            if plain is not None:
                names.update(n.split()[0] for n in plain.split(",") if n.strip())
            else:
                level = len(source) - len(source.lstrip("."))
                base = _absolute(module, level, source[level:] or None, is_package)
                names.add(base)
                names.update(f"{base}.{n.split()[0]}" for n in what.split(",") if n.strip() and base)
        end = text.find("\n", at)
        at = text.find("import", end) if end >= 0 else -1
    top = module.partition(".")[0]
    if top and (f'"{top}.' in text or f"'{top}." in text):
        names.update(loaded_strings(text, top))
    return tuple(sorted(n for n in names if n))


_COMPARED_AFTER = re.compile(r"\s*(?:==|!=|not\s+in\b|in\b)")


def loaded_strings(text: str, top: str) -> set[str]:
    """The string literals under the top package `top` that name what the code may load: each
    but those whose every occurrence is an operand of a comparison (`if "sglang.multimodal_gen"
    not in sys.modules:`, `name == "pkg.mod"`): a string compared is tested, never imported (the
    test yields a bool). SGLang's NPU start-up tests so whether the diffusion package is loaded,
    and read as an import that made the LLM engine's every module know the diffusion package's."""
    loaded: set[str] = set()
    for found in re.finditer(r"[\"'](" + re.escape(top) + r"(?:\.\w+)+)[\"']", text):
        name = found.group(1)
        before = text[max(0, found.start() - 16):found.start()].rstrip()
        if not (before.endswith(("==", "!=")) or _COMPARED_AFTER.match(text, found.end())):
            loaded.add(name)
    return loaded
