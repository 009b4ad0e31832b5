"""Line numbers without libcst's PositionProvider.

PositionProvider re-generates the whole module's code while recording every node's position; on
vLLM that costs several times the parse itself (anchors.md section 3). Python's own `ast` parser
is ~10x faster than libcst's and gives every statement its line span. Both parsers see the same
statements in the same pre-order, so the analyzer counts statements as it walks the libcst tree
and looks the span up here by index. Inside a statement, a finding is placed by searching the
source lines of that span for the flagged text, which only costs anything for flagged nodes.
"""

from __future__ import annotations

import ast


def last_line(node: ast.AST) -> int:
    """A node's last line (`end_lineno`; its first line where a node made by hand has none)."""
    return getattr(node, "end_lineno", None) or node.lineno


def spans_of(body: list[ast.stmt]) -> list[tuple[int, int, int]]:
    """(first line, last line, subtree size) of every statement of `body` and everything nested
    in it, in pre-order. (Where `ast` cannot parse what libcst could, worker.py falls back to
    positions from libcst.)"""
    spans: list[tuple[int, int, int]] = []

    def visit_body(body: list[ast.stmt]) -> None:
        for stmt in body:
            index = len(spans)
            spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno, 0))
            for child in _child_bodies(stmt):
                visit_body(child)
            spans[index] = (spans[index][0], spans[index][1], len(spans) - index)

    visit_body(body)
    return spans


def _child_bodies(stmt: ast.stmt):
    """Nested statement lists in source order (the same order libcst keeps them in)."""
    for name in ("body", "orelse", "handlers", "finalbody", "cases"):
        value = getattr(stmt, name, None)
        if not value:
            continue
        if name == "handlers":
            for handler in value:
                yield handler.body
        elif name == "cases":
            for case in value:
                yield case.body
        elif name == "orelse" and isinstance(stmt, ast.If):
            yield value  # an `elif` is a nested If here and in libcst alike
        else:
            yield value


def locate(lines: list[str], start: int, end: int, anchors: list[str]) -> tuple[int, int]:
    """(line, 1-based column) of the first anchor text found within lines start..end, trying
    the anchors in order, each from where the previous one was found; the statement start
    if nothing matches."""
    line_index = start - 1
    column = -1
    last = min(end, len(lines))
    for anchor in anchors:
        if not anchor:
            continue
        for i in range(line_index, last):
            col = lines[i].find(anchor, column + 1 if i == line_index and column >= 0 else 0)
            if col >= 0:
                line_index, column = i, col
                break
    if column < 0:
        text = lines[start - 1] if 0 < start <= len(lines) else ""
        column = len(text) - len(text.lstrip())
    return line_index + 1, column + 1
