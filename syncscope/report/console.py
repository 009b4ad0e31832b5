"""The rich table printed after a run and by `syncscope report`."""

from __future__ import annotations

from typing import TextIO

from syncscope.report.model import Report, SiteStats
from syncscope.terminal import safe_text
from syncscope.report.model import format_ms as _ms

_MAX_WIDTH = {"function": 32, "region": 20, "source": 48}
_MIN_WIDTH = {"site": 24, "kind": 17, "count": 5, "total ms": 8, "mean ms": 8, "region": 6}


def _row(s: SiteStats) -> list[str]:
    from rich.markup import escape  # source text like `x[mask]` is not markup

    return [escape(safe_text(cell)) for cell in (
        f"{s.path}:{s.line}",
        s.function,
        s.kind,
        str(s.count),
        _ms(s.blocked_ns if s.measured else None),
        _ms(s.mean_blocked_ns),
        ", ".join(s.regions) or "-",
        s.source.split("  #")[0],
    )]


def render(report: Report, file: TextIO | None = None, limit: int = 50) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, stderr=file is None, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # logs and CI: do not squeeze columns to 80
    from rich.markup import escape

    device = escape(safe_text(report.meta.get("device", "?")))
    in_scope, allowed, out_of_scope = report.grouped()
    title = f"syncscope: {sum(s.count for s in in_scope)} host syncs at {len(in_scope)} sites in scope (device: {device})"
    if device == "sim":
        title += "; blocked time not measured on the simulated device"
    if not report.sites:
        console.print(f"syncscope: no host syncs (device: {device})", style="bold green")
    columns = ["site", "function", "kind", "count", "total ms", "mean ms", "region", "source"]
    for heading, group, style in (
        (title, in_scope, "bold red"),
        ("allowed syncs", allowed, "yellow"),
        ("outside the regions in scope (kept apart)", out_of_scope, "dim"),
    ):
        if not group:
            continue
        table = Table(title=heading, title_style=style, show_lines=False, expand=False)
        for name in columns:
            # One line per site: long cells are cut with an ellipsis (the JSON report has them whole).
            table.add_column(
                name,
                no_wrap=name != "site",
                overflow="fold" if name == "site" else "ellipsis",  # never cut a site's line number
                max_width=_MAX_WIDTH.get(name),
                min_width=_MIN_WIDTH.get(name),
                justify="right" if name in ("count", "total ms", "mean ms") else "left",
            )
        for s in group[:limit]:
            table.add_row(*_row(s))
        if len(group) > limit:
            table.caption = f"{len(group) - limit} more sites in the JSON report"
        console.print(table)
    path = report.meta.get("report_path")
    if path:
        console.print(f"report: {escape(safe_text(path))}", style="dim")
