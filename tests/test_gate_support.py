"""Helpers shared by the baseline, gate and combine tests: runtime reports and lint output built
from real source text, so fingerprints are computed exactly as in a real run."""

from __future__ import annotations

import ast
import json
import os

from syncscope.report.aggregate import build_report
from syncscope.events import Frame, HostSyncEvent


def sync_lines(source: str, needle: str = ".item()") -> list[tuple[int, str, str]]:
    """(line, enclosing Class.function, stripped text) of every line containing `needle`."""
    tree = ast.parse(source)
    owner: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, child.end_lineno + 1):
                    owner[line] = name
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return [
        (number, owner.get(number, "<module>"), text.strip())
        for number, text in enumerate(source.splitlines(), 1)
        if needle in text
    ]


def runtime_report(source: str, path: str = "model.py", counts: dict[int, int] | None = None, pid: int = 1000,
                   host: str = "hostA", rank: int | None = None, in_scope: bool = True) -> dict:
    """The JSON report a run of `source` would write, one `item` event per sync line (or
    `counts[line]` events)."""
    events = []
    ts = 0
    for line, function, text in sync_lines(source):
        for _ in range((counts or {}).get(line, 1)):
            ts += 1000
            frame = Frame(path, line, function)
            events.append(
                HostSyncEvent(
                    kind="item", api="Tensor.item", site=frame, source=text, stack=(frame, Frame("main.py", 3, "<module>")),
                    thread="MainThread", pid=pid, region=None, in_scope=in_scope, blocked_ns=500, ts_ns=ts,
                )
            )
    meta = {"tool": {"name": "syncscope", "version": "0.1.0"}, "created": "2026-11-22T00:00:00+00:00",
            "device": "sim", "host": host, "pid": pid, "rank": rank, "project_root": "/proj",
            "status": "completed", "ending": "ok", "exit_code": 0, "error": None}  # a run that completed (issue 28)
    return build_report(events, meta).to_json()


def lint_output(source: str, path: str = "model.py") -> list[dict]:
    return [
        {"code": "SYN401", "path": path, "line": line, "column": 1, "function": function, "source": text,
         "message": "`.item()` reads a device value on the host"}
        for line, function, text in sync_lines(source)
    ]


def write(tmp_path, name: str, data) -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path
