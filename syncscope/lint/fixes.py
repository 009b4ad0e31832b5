"""`--fix`: re-analyze the files that have fixable findings, keeping the tree, and apply the
rules' replacements with one transformer pass per file. Only fixes for findings that survived
selection and suppression are applied; unsafe ones only with `--unsafe-fixes`."""

from __future__ import annotations

import difflib

import libcst as cst

from .engine import analyze_for_fix
from .worker import place


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        replacement = self.replacements.get(id(original_node))
        return replacement if replacement is not None else updated_node


def fix_file(path: str, rel: str, wanted: set[tuple[str, int]], config, unsafe: bool) -> tuple[str, str, int] | None:
    """(old text, new text, fixes applied) for one file, or None if nothing applies.
    `wanted` holds (code, line) of the findings to fix."""
    result, analyzer = analyze_for_fix(path, config)
    if analyzer is None:
        return None
    old = analyzer.module.code
    lines = old.splitlines()
    replacements: dict[int, cst.CSTNode] = {}
    for raw in analyzer.findings:
        if raw.fix is None or (raw.fix.applicability == "unsafe" and not unsafe):
            continue
        line = place(raw, analyzer.spans, lines, analyzer.module)[0]
        if (raw.code, line) not in wanted:
            continue
        built = raw.fix.build()  # one (target, replacement), or a list of them
        for target, replacement in built if isinstance(built, list) else [built]:
            replacements.setdefault(id(target), replacement)
    if not replacements:
        return None
    new_module = analyzer.module.visit(_Replace(replacements))
    new = new_module.code
    if new == old:
        return None
    return old, new, len(replacements)


def unified_diff(rel: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}"))
