"""Console output of the oracle (rich): the source of each scoped function with its blocked lines
highlighted, and the `--compare` lists. Works from report data (dicts), so a saved report renders
the same."""

from __future__ import annotations

import linecache
import os
from typing import TextIO

from syncscope.oracle.compare import Comparison
from syncscope.terminal import safe_text


def _safe(text: object) -> str:
    """Untrusted text (paths, function names, source lines, device names from a report or a
    repository) for a rich string: control characters escaped, and `[...]` not read as markup."""
    from rich.markup import escape

    return escape(safe_text(text))

STYLES = {"blocked": "bold white on red", "uncertain": "black on yellow", "free": "", None: "dim"}
MARKS = {"blocked": "BLOCKED", "uncertain": "?", "free": "", None: ""}


def _console(file: TextIO | None):
    from rich.console import Console

    return Console(file=file, stderr=file is None, highlight=False, width=160 if file is not None else None)


def _ms(ns: int | None) -> str:
    return "" if ns is None else f"{ns / 1e6:.2f}"


def _function_spans(lines: list[dict], root: str | None) -> list[tuple[str, str, str, list[dict]]]:
    """(path, function, scope, lines) for each measured function, in first-seen order."""
    groups: dict[tuple, list[dict]] = {}
    for line in lines:
        groups.setdefault((line["path"], line["function"], line.get("scope", "")), []).append(line)
    return [(path, function, scope, sorted(ls, key=lambda l: l["line"])) for (path, function, scope), ls in groups.items()]


def _source_lines(path: str, root: str | None, first: int, last: int) -> list[tuple[int, str]]:
    absolute = path if os.path.isabs(path) else os.path.join(root or os.getcwd(), path)
    return [(n, linecache.getline(absolute, n).rstrip("\n")) for n in range(first, last + 1)]


def render_source(lines: list[dict], root: str | None = None, file: TextIO | None = None, context: int = 1) -> None:
    """Each measured function's source, one row per line: verdict, hits, wait (ms, summed over
    hits), ratio, code. Blocked lines in red, uncertain in yellow, lines never run dim."""
    from rich.table import Table
    from rich.text import Text

    console = _console(file)
    for path, function, scope, group in _function_spans(lines, root):
        by_line = {l["line"]: l for l in group}
        first, last = max(1, group[0]["line"] - context), group[-1]["line"] + context
        blocked = sum(l["verdict"] == "blocked" for l in group)
        uncertain = sum(l["verdict"] == "uncertain" for l in group)
        table = Table(
            title=f"{_safe(path)}: {_safe(function)} (scope {_safe(scope)}): {blocked} blocked, {uncertain} uncertain, {len(group)} lines timed",
            title_justify="left",
            box=None,
            pad_edge=False,
            show_header=True,
            header_style="bold",
        )
        for name, justify, width in (("line", "right", 4), ("verdict", "left", 7), ("hits", "right", 4), ("wait ms", "right", 7), ("ratio", "right", 5)):
            table.add_column(name, justify=justify, no_wrap=True, min_width=width)
        table.add_column("source", no_wrap=True, overflow="ellipsis")
        for number, text in _source_lines(path, root, first, last):
            entry = by_line.get(number)
            verdict = entry["verdict"] if entry else None
            style = STYLES[verdict]
            if entry:
                table.add_row(
                    str(number),
                    MARKS[verdict],
                    f"{entry['blocked_hits']}/{entry['hits']}" if entry["blocked_hits"] else str(entry["hits"]),
                    _ms(entry["wait_ns"]),
                    f"{entry['ratio']:.2f}",
                    Text(safe_text(text), style=style),
                    style=style if verdict in ("blocked", "uncertain") else None,
                )
            else:
                table.add_row(str(number), "", "", "", "", Text(safe_text(text), style="dim"), style="dim")
        console.print(table)
        console.print()


def render_summary(section: dict, report_path: str | None, file: TextIO | None = None) -> None:
    console = _console(file)
    lines = section.get("lines", [])
    counts = {v: sum(l["verdict"] == v for l in lines) for v in ("blocked", "uncertain", "free")}
    cal = section.get("calibration") or {}
    cost = section.get("cost") or {}
    console.print(
        f"[bold]syncscope oracle[/]: {counts['blocked']} blocked, {counts['uncertain']} uncertain, "
        f"{counts['free']} free lines; sleep {_ms(cal.get('sleep_ns'))} ms = {cal.get('cycles')} cycles on {_safe(cal.get('device'))}; "
        f"repeat {_safe(section.get('repeat'))}, tracer {_safe(section.get('tracer'))}; "
        f"{cost.get('line_hits', 0)} traced line runs in {cost.get('wall_s', 0):.2f} s"
    )
    if counts["uncertain"]:
        console.print(
            "uncertain lines waited for part of the queue, or their host time varied between passes: "
            "rerun with a larger --repeat (or --sleep-ms) to settle them",
            style="yellow",
        )
    if report_path:
        console.print(f"report: {_safe(report_path)}", style="dim")


def render_comparison(comparison: Comparison, hook_path: str, file: TextIO | None = None) -> None:
    from rich.table import Table

    console = _console(file)

    def ref(line: dict) -> str:
        return _safe(f"{line['path']}:{line['line']}")

    table = Table(title=f"hook blind spots: lines the oracle found blocked that {_safe(hook_path)} does not report", title_style="bold red", title_justify="left")
    for name in ("line", "function", "ratio", "source"):
        table.add_column(name, no_wrap=name != "source")
    for line in comparison.blind_spots:
        table.add_row(ref(line), _safe(line["function"]), f"{line['ratio']:.2f}", _safe(line.get("source", "")))
    console.print(table if comparison.blind_spots else f"[green]no hook blind spots[/]: every line the oracle found blocked is in {_safe(hook_path)}")

    reverse = comparison.hook_only + comparison.hook_uncertain
    if reverse:
        table = Table(title="hook reports on lines that did not block behind the oracle's queue", title_style="bold yellow", title_justify="left")
        for name in ("line", "oracle", "hook kinds", "source"):
            table.add_column(name, no_wrap=name != "source")
        for line, sites in reverse:
            table.add_row(ref(line), _safe(line["verdict"]), _safe(", ".join(sorted({s.kind for s in sites}))), _safe(line.get("source", "")))
        console.print(table)
    else:
        console.print("[green]no hook report on a line the oracle found free[/]")
    console.print(
        f"agreed (blocked and reported): {len(comparison.agreed)} lines; "
        f"hook sites outside the traced functions: {len(comparison.outside)}",
        style="dim",
    )
