"""The rich table printed after a run and by `syncscope report`."""

from __future__ import annotations

from typing import TextIO

from syncscope.report.model import Report, SiteStats
from syncscope.terminal import safe_text
from syncscope.report.model import format_ms as _ms

_MAX_WIDTH = {"function": 32, "region": 20, "source": 48}
_MIN_WIDTH = {"site": 24, "kind": 17, "count": 5, "total ms": 8, "mean ms": 8, "bubble ms": 9, "region": 6}
_NUMERIC = ("count", "total ms", "mean ms", "bubbles", "bubble ms")


def _row(s: SiteStats, with_bubbles: bool) -> list[str]:
    from rich.markup import escape  # source text like `x[mask]` is not markup

    cells = [
        f"{s.path}:{s.line}",
        s.function,
        s.kind,
        str(s.count),
        _ms(s.blocked_ns if s.measured else None),
        _ms(s.mean_blocked_ns),
    ]
    if with_bubbles:
        # GPU idle after the site's syncs (the bubble window): count and total.
        cells += [str(s.bubble_count or 0), _ms(s.bubble_ns or 0)]
    cells += [", ".join(s.regions) or "-", s.source.split("  #")[0]]
    return [escape(safe_text(cell)) for cell in cells]


def _bubble_line(bubbles: dict) -> str:
    """One line on the profiled window: where its GPU idle time went."""
    idle = bubbles.get("idle_ns", {})
    steps = bubbles.get("steps") or 0
    where = f"{steps} steps after {bubbles.get('warmup', 0)} warm-up" if bubbles.get("mode") == "regions" else "from the first sync"
    per_step = f", {(idle.get('sync', 0) + idle.get('launch_bound', 0)) / steps / 1e6:.3f} ms idle per step" if steps else ""
    return (
        f"GPU idle in the window ({where}, {bubbles.get('window_ns', 0) / 1e6:.1f} ms on {len(bubbles.get('devices', []))} device(s)): "
        f"after syncs {_ms(idle.get('sync', 0))} ms in {bubbles.get('bubble_count', 0)} bubbles, "
        f"launch-bound {_ms(idle.get('launch_bound', 0))} ms, region/window edges "
        f"{_ms(idle.get('region_edge', 0) + idle.get('window_edge', 0))} ms (not counted), "
        f"syncscope's own {_ms(bubbles.get('syncscope_ns', 0))} ms{per_step}"
    )


def render(report: Report, file: TextIO | None = None, limit: int = 50) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, stderr=file is None, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # logs and CI: do not squeeze columns to 80
    from rich.markup import escape

    device = escape(safe_text(report.meta.get("device", "?")))
    in_scope, allowed, out_of_scope = report.grouped()
    potential = report.potential()
    title = f"syncscope: {sum(s.count for s in in_scope)} host syncs at {len(in_scope)} sites in scope (device: {device})"
    if device == "sim":
        title += "; blocked time not measured on the simulated device"
    if not report.sites:
        console.print(f"syncscope: no host syncs (device: {device})", style="bold green")
    sampling = report.meta.get("sampling")
    if isinstance(sampling, dict) and sampling.get("mode") == "region" and sampling.get("regions") == 0:
        # Region sampling arms the trap only inside regions: a program that marks none is not watched.
        console.print(
            "syncscope: the monitor sampled nothing: the program entered no region (mark its steps with "
            "syncscope.region, --scope or --module-forward, or sample by time with --sample-by time)",
            style="yellow",
        )
    bubbles = report.meta.get("bubbles")
    columns = ["site", "function", "kind", "count", "total ms", "mean ms"]
    columns += ["bubbles", "bubble ms"] if bubbles else []
    columns += ["region", "source"]
    for heading, group, style in (
        (title, in_scope, "bold red"),
        (
            "potential syncs that did not block this run (pageable non_blocking copies: they wait once "
            "the copy or the queue is large enough; pin the source)",
            potential,
            "yellow",
        ),
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
                justify="right" if name in _NUMERIC else "left",
            )
        # Sorted by cost: the larger of the host's wait and the GPU's idle time after the site.
        for s in sorted(group, key=lambda s: (-s.cost_ns, -s.count))[:limit]:
            table.add_row(*_row(s, bool(bubbles)))
        if len(group) > limit:
            table.caption = f"{len(group) - limit} more sites in the JSON report"
        console.print(table)
    if bubbles:
        console.print(_bubble_line(bubbles), style="bold")
        for note in bubbles.get("notes", []):
            console.print(f"bubble window: {note}", style="dim")
    path = report.meta.get("report_path")
    if path:
        console.print(f"report: {escape(safe_text(path))}", style="dim")
