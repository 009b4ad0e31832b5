"""Source excerpts for the HTML report: the enclosing function of each line a page points at.

A report records one stripped source line per site; the page shows the whole function around it,
read from the files under the report's project root when they are still there. Functions are
found with `ast` (standard library: `syncscope report` never imports torch or libcst). A line
whose text no longer matches what the run recorded is flagged, so a page made after an edit does
not pass off today's code as the code that ran.

Standard library only.
"""

from __future__ import annotations

import ast
import os
import tokenize
from dataclasses import dataclass, field

WHOLE_FUNCTION_LINES = 150  # longer functions are shown as windows around the lines that matter
CONTEXT_LINES = 8  # lines kept either side of a marked line in a window
MAX_TOTAL_LINES = 60_000  # past this, excerpts fall back to the single recorded line


@dataclass
class _File:
    lines: list[str]
    functions: list[tuple[int, int, str]]  # (first line incl. decorators, last line, name), any order


@dataclass
class Excerpt:
    """Lines of one function (or a window of a module), keyed by (path, first, last)."""

    path: str  # as the report names it
    resolved: str
    function: str
    first: int
    last: int
    marked: set[int] = field(default_factory=set)

    def to_json(self, text_of) -> dict:
        whole = self.last - self.first + 1 <= WHOLE_FUNCTION_LINES
        keep = range(self.first, self.last + 1) if whole else sorted(
            {n for m in self.marked for n in range(m - CONTEXT_LINES, m + CONTEXT_LINES + 1) if self.first <= n <= self.last}
        )
        return {"path": self.path, "function": self.function, "lines": [[n, text_of(n)] for n in keep]}


class SourceIndex:
    """Reads each file once; maps (path, line) to the excerpt that shows it."""

    def __init__(self):
        self._files: dict[str, _File | None] = {}
        self._excerpts: dict[tuple[str, int, int], Excerpt] = {}
        self._index: dict[tuple[str, int, int], int] = {}
        self._order: list[tuple[str, int, int]] = []

    @staticmethod
    def _resolve(path: str, root: str | None) -> str | None:
        if not path or path.startswith("<"):
            return None
        if os.path.isabs(path):
            return os.path.normpath(path)
        return os.path.normpath(os.path.join(root, path)) if root else None

    def _file(self, resolved: str | None) -> _File | None:
        if resolved is None:
            return None
        if resolved in self._files:
            return self._files[resolved]
        loaded = None
        if os.path.isfile(resolved):
            try:
                with tokenize.open(resolved) as fh:  # honours a coding cookie, as Python does
                    text = fh.read()
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                text = None
            if text is not None:
                try:
                    functions = _functions(text)
                except (SyntaxError, ValueError, RecursionError):  # not Python today: windows only
                    functions = []
                loaded = _File(text.splitlines(), functions)
        self._files[resolved] = loaded
        return loaded

    def line_text(self, path: str, line: int, root: str | None) -> str | None:
        f = self._file(self._resolve(path, root))
        if f is None or not 0 < line <= len(f.lines):
            return None
        return f.lines[line - 1]

    def excerpt_for(self, path: str, line: int, root: str | None) -> int | None:
        """The index of the excerpt showing `path:line` (`path` relative to `root` unless
        absolute; registered on first use), or None when the file cannot be read here."""
        resolved = self._resolve(path, root)
        f = self._file(resolved)
        if f is None or not 0 < line <= len(f.lines):
            return None
        enclosing = [fn for fn in f.functions if fn[0] <= line <= fn[1]]
        if enclosing:
            first, last, name = max(enclosing, key=lambda fn: fn[0])  # the innermost
        else:  # module level: a window
            first, last, name = max(1, line - CONTEXT_LINES), min(len(f.lines), line + CONTEXT_LINES), "<module>"
        key = (resolved, first, last)
        excerpt = self._excerpts.get(key)
        if excerpt is None:
            excerpt = self._excerpts[key] = Excerpt(path, resolved, name, first, last)
            self._index[key] = len(self._order)
            self._order.append(key)
        excerpt.marked.add(line)
        return self._index[key]

    def to_json(self) -> list[dict]:
        """Every registered excerpt, in index order. Once `MAX_TOTAL_LINES` are spent, the rest
        hold only their marked lines (the page still shows the line, without its function)."""
        out, spent = [], 0
        for key in self._order:
            excerpt = self._excerpts[key]
            f = self._files[excerpt.resolved]
            data = excerpt.to_json(lambda n, lines=f.lines: lines[n - 1] if 0 < n <= len(lines) else "")
            if spent + len(data["lines"]) > MAX_TOTAL_LINES:
                data["lines"] = [[n, f.lines[n - 1]] for n in sorted(excerpt.marked)]
                data["cut"] = True
            spent += len(data["lines"])
            out.append(data)
        return out


def _functions(text: str) -> list[tuple[int, int, str]]:
    """(first line with decorators, last line, qualified name) of every function in `text`."""
    tree = ast.parse(text)
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                found.append((first, child.end_lineno or child.lineno, prefix + child.name))
                visit(child, prefix + child.name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found
