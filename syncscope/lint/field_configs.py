"""Multimodal field configs a model inherits from another module (issue 24, "host data taken for
device data").

A vLLM model declares which of its multimodal fields the runner leaves on the CPU in its
processor's `_get_mm_fields_config` (`image_grid_thw=MultiModalFieldConfig.batched("image",
keep_on_cpu=True)`); `classinfo.keep_on_cpu_fields` reads that per module. Many models reuse
another model's processor instead of declaring their own: Qwen3-Omni subclasses
`Qwen2_5OmniThinkerMultiModalProcessor` (qwen2_5_omni_thinker.py), Nemotron-VL registers
`BaseInternVLMultiModalProcessor[...]` (internvl.py). Their fields are just as host-only, but
the declaration is in the other file, which the per-file walk never sees.

So each file records, cheaply and syntactically, what it declares and which classes it builds on
(`file_field_configs`); once every file is read, the run works out which modules use a processor
class of another module (`inherited_fields`) and walks those few files once more with the
inherited names as host-only keys (engine.py). A cold run reads the configs ahead of the
analysis (`configs_ahead`: an `ast` parse of the files that name a processor or field config,
432 of vLLM's) and gives each inheriting file its fields on its first walk: the second walk of
vLLM's 61 inheriting model files was a tenth of a cold run's time. A name the module itself
declares with a field config that is not kept on the CPU stays its own: an override wins.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FIELDS_METHOD = "_get_mm_fields_config"


@dataclass(frozen=True)
class FieldConfigs:
    kept: frozenset[str]  # fields this module declares `keep_on_cpu=True`
    plain: frozenset[str]  # fields this module declares without it (an override of an inherited one)
    processors: frozenset[str]  # qualified classes that define `_get_mm_fields_config`, and field-config factories
    bases: tuple  # ((qualified class, (qualified base, ...)), ...) for this module's classes
    imported: frozenset[str]  # qualified names this module imports from elsewhere


def file_field_configs(tree, module: str, aliases: dict[str, str], text: str) -> FieldConfigs | None:
    """What this module tells about field configs; None when it can take part in none (no
    processor, no field config: most files, which then cost one substring test)."""
    if "Processor" not in text and "FieldConfig" not in text:
        return None
    from .classinfo import declared_fields, keep_on_cpu_fields

    kept = keep_on_cpu_fields(tree, refills=False) if "keep_on_cpu" in text else frozenset()
    plain = declared_fields(tree, _field_config)
    processors: set[str] = set()
    bases: list[tuple[str, tuple[str, ...]]] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and kept \
                and keep_on_cpu_fields(stmt, refills=False):
            # a field-config factory (`def _create_field_factory(merge): ... return dict(
            # image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True))`): a
            # processor of another module that calls it declares those fields as its own
            processors.add(f"{module}.{stmt.name}")
        if not isinstance(stmt, ast.ClassDef):
            continue
        qualified = f"{module}.{stmt.name}"
        if any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == FIELDS_METHOD
               for item in stmt.body):
            processors.add(qualified)
        named = tuple(b for b in (_qualified(base, module, aliases, tree) for base in stmt.bases) if b)
        if named:
            bases.append((qualified, named))
    imported = frozenset(v for v in aliases.values() if not v.startswith(module + "."))
    return FieldConfigs(kept, frozenset(plain - kept), frozenset(processors), tuple(bases), imported)


def configs_ahead(text: str, module: str, is_package: bool) -> FieldConfigs | None:
    """`file_field_configs` of a file not analyzed yet: the engine works out before the
    analysis which modules inherit fields, so those are walked once, with them, instead of
    twice. Only a forecast: the engine still compares it with what the analysis found, and
    walks again any file it got wrong."""
    from .imports import aliases_from_ast

    try:
        tree = ast.parse(text)
    except Exception:  # invalid: the analysis reports it, with no configs either
        return None
    return file_field_configs(tree, module, aliases_from_ast(tree, module, is_package), text)


def _field_config(value) -> bool:
    """`MultiModalFieldConfig.batched(...)` and its kin (`.flat_from_sizes`, `.shared`)."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    owner = value.func.value
    return isinstance(owner, ast.Name) and owner.id.endswith("FieldConfig")


def _qualified(node, module: str, aliases: dict[str, str], tree) -> str | None:
    if isinstance(node, ast.Subscript):  # `BaseMultiModalProcessor[_I]`
        node = node.value
    if isinstance(node, ast.Name):
        if node.id in aliases:
            return aliases[node.id]
        return f"{module}.{node.id}"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
        return f"{aliases[node.value.id]}.{node.attr}"
    return None


def inherited_fields(configs: dict[str, FieldConfigs]) -> dict[str, frozenset[str]]:
    """Module -> the host-only fields it takes over from another module's processor: the
    `keep_on_cpu` fields of every module whose processor class (one defining
    `_get_mm_fields_config`, or a subclass of one, in any module) it imports, at any depth
    (a processor built on a processor of a third module brings that module's fields too),
    less the fields it declares itself without `keep_on_cpu`."""
    processors: dict[str, str] = {}  # qualified processor class -> the module declaring its fields
    for module, facts in configs.items():
        for cls in facts.processors:
            processors[cls] = module
    subclass_of = {cls: bases for facts in configs.values() for cls, bases in facts.bases}
    changed = True
    while changed:  # a subclass of a processor is a processor of its base's fields
        changed = False
        for cls, bases in subclass_of.items():
            if cls in processors:
                continue
            for base in bases:
                if base in processors:
                    processors[cls] = processors[base]
                    changed = True
                    break
    # module -> the modules whose fields it takes: those of the processors it imports or subclasses
    sources: dict[str, set[str]] = {}
    for module, facts in configs.items():
        used = set(facts.imported) | {b for _, bases in facts.bases for b in bases}
        for name in used:
            origin = processors.get(name)
            if origin is not None and origin != module:
                sources.setdefault(module, set()).add(origin)
    result: dict[str, frozenset[str]] = {}
    for module in sources:
        seen, stack, fields = {module}, list(sources[module]), set()
        while stack:
            origin = stack.pop()
            if origin in seen:
                continue
            seen.add(origin)
            fields |= configs[origin].kept
            stack.extend(sources.get(origin, ()))
        facts = configs[module]
        fields -= facts.plain | facts.kept
        if fields:
            result[module] = frozenset(fields)
    return result
