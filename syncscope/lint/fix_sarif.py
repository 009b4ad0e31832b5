"""SARIF `fix` objects for the findings that have a fix: each fix built on its own, as the
smallest text replacement (a deleted region and the text inserted there), so a SARIF viewer
can offer it one finding at a time. Only `--output-format sarif` pays for this: the files with
fixable findings are parsed again with libcst, once each."""

from __future__ import annotations

from .engine import analyze_for_fix
from .fixes import _Replace
from .worker import place


def sarif_fixes(findings, abs_paths: dict[str, str], config) -> dict[tuple[str, str, int], list[dict]]:
    """(path, code, line) -> the SARIF `fixes` list of that finding."""
    wanted: dict[str, set[tuple[str, int]]] = {}
    for f in findings:
        if f.fix in ("safe", "unsafe"):
            wanted.setdefault(f.site.path, set()).add((f.code, f.site.line))
    out: dict[tuple[str, str, int], list[dict]] = {}
    for rel, keys in wanted.items():
        try:
            _, analyzer = analyze_for_fix(abs_paths.get(rel, rel), config)
        except OSError:
            continue
        if analyzer is None:
            continue
        old = analyzer.module.code
        lines = old.splitlines()
        for raw in analyzer.findings:
            if raw.fix is None:
                continue
            line = place(raw, analyzer.spans, lines, analyzer.module)[0]
            if (raw.code, line) not in keys or (rel, raw.code, line) in out:
                continue
            built = raw.fix.build()
            pairs = built if isinstance(built, list) else [built]
            new = analyzer.module.visit(_Replace({id(t): r for t, r in pairs})).code
            if new == old:
                continue
            out[(rel, raw.code, line)] = [{
                "description": {"text": raw.fix.title},
                "artifactChanges": [{
                    "artifactLocation": {"uri": rel, "uriBaseId": "%SRCROOT%"},
                    "replacements": [_replacement(old, new)],
                }],
                "properties": {"applicability": raw.fix.applicability},
            }]
    return out


def _replacement(old: str, new: str) -> dict:
    """The one region where `old` and `new` differ, and what `new` has there."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    start_line, start_column = _line_column(old, start)
    end_line, end_column = _line_column(old, end_old)
    return {
        "deletedRegion": {"startLine": start_line, "startColumn": start_column,
                          "endLine": end_line, "endColumn": end_column},
        "insertedContent": {"text": new[start:end_new]},
    }


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (unicode code points) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


class WithFixes:
    """A finding as the SARIF writer sees it, with its `fixes`."""

    def __init__(self, finding, fixes: list[dict] | None) -> None:
        self._finding = finding
        self.fixes = fixes

    def __getattr__(self, name):
        return getattr(self._finding, name)
