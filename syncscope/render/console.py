"""The rich table printed after a run and by `syncscope report`."""

from __future__ import annotations

from typing import TextIO

from syncscope.report.schema import Report, SiteStats
from syncscope.terminal import safe_text
from syncscope.report.schema import format_ms as _ms

_MAX_WIDTH = {"function": 32, "region": 20, "source": 48}
_MIN_WIDTH = {"site": 24, "kind": 17, "count": 5, "total ms": 8, "mean ms": 8, "bubble ms": 9, "region": 6}
_NUMERIC = ("count", "total ms", "mean ms", "bubbles", "bubble ms")


_MAX_SITE = 60


def _site_cell(s: SiteStats) -> str:
    """`path:line` on one row: a long path (a file outside the working directory is shown
    absolute) loses its start, never the file name or the line number (issue 28)."""
    cell = f"{s.path}:{s.line}"
    return cell if len(cell) <= _MAX_SITE else "…" + cell[-(_MAX_SITE - 1):]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _sampling_words(sampling: dict) -> str:
    """What a monitor run's counts are a sample of: `in 0.5 s sampled of 120 s`, `in 8 of 400 regions`."""
    if sampling.get("mode") == "region":
        return f"in {sampling.get('sampled_regions', 0)} of {sampling.get('regions', 0)} regions sampled"
    return f"in {sampling.get('sampled_s', 0):g} s sampled of {sampling.get('monitored_s', 0):g} s"


def _sampled_nothing(sampling: dict) -> bool:
    return not sampling.get("sampled_regions") and not sampling.get("sampled_s")


def _row(s: SiteStats, with_bubbles: bool, timed: bool = True) -> list[str]:
    from rich.markup import escape  # source text like `x[mask]` is not markup

    cells = [_site_cell(s), s.function, s.kind, str(s.count)]
    if timed:
        cells += [_ms(s.blocked_ns if s.measured else None), _ms(s.mean_blocked_ns)]
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
    sampling = report.meta.get("sampling")
    sampling = sampling if isinstance(sampling, dict) else None
    counted = f"{_plural(sum(s.count for s in in_scope), 'host sync')} at {_plural(len(in_scope), 'site')} in scope"
    if sampling is not None:  # monitor: the counts are those of the sampled regions or slices only
        counted = f"{counted}, {_sampling_words(sampling)} (sampled counts, not totals)"
    title = f"syncscope: {counted} (device: {device})"
    if device == "sim":
        title += "; blocked time not measured on the simulated device"
    end = _end_line(report.meta, bool(report.sites))
    if end:  # a run that did not complete: what it saw is not all there was
        console.print(end, style="yellow")
    if not report.sites and end:
        pass  # never the all-clear for a run that did not complete
    elif not report.sites:
        if sampling is not None and _sampled_nothing(sampling):
            # Nothing watched is not nothing found: never the green all-clear (issue 28).
            console.print(f"syncscope: the monitor sampled nothing ({_sampling_words(sampling)}): no syncs seen, none ruled out "
                          f"(device: {device})", style="yellow")
        elif sampling is not None:
            console.print(f"syncscope: no host syncs {_sampling_words(sampling)} (device: {device})", style="green")
        else:
            console.print(f"syncscope: no host syncs (device: {device})", style="bold green")
    if sampling is not None and sampling.get("mode") == "region" and sampling.get("regions") == 0:
        # Region sampling arms the trap only inside regions: a program that marks none is not watched.
        console.print(
            "syncscope: the monitor sampled nothing: the program entered no region (mark its steps with "
            "syncscope.region, --scope or --module-forward, or sample by time with --sample-by time)",
            style="yellow",
        )
    bubbles = report.meta.get("bubbles")
    # The simulated device measures no time: its columns could only say n/m (the title says so once).
    timed = device != "sim"
    columns = ["site", "function", "kind", "count"] + (["total ms", "mean ms"] if timed else [])
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
        shown = sorted(group, key=lambda s: (-s.cost_ns, -s.count))[:limit]
        # The site column is as wide as its longest cell (at most _MAX_SITE): never shrunk to fit.
        site_width = max([_MIN_WIDTH["site"]] + [len(_site_cell(s)) for s in shown])
        for name in columns:
            # One line per site: long cells are cut with an ellipsis (the JSON report has them whole).
            table.add_column(
                "sampled" if name == "count" and sampling is not None else name,
                no_wrap=True,  # one row per site: _site_cell keeps a site's line number whole
                overflow="ellipsis",
                max_width=_MAX_WIDTH.get(name),
                min_width=site_width if name == "site" else _MIN_WIDTH.get(name),
                justify="right" if name in _NUMERIC else "left",
            )
        # Sorted by cost: the larger of the host's wait and the GPU's idle time after the site.
        for s in shown:
            table.add_row(*_row(s, bool(bubbles), timed))
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


def _end_line(meta: dict, has_sites: bool) -> str | None:
    """A run that did not complete says so above its table (report/status.py)."""
    from syncscope.report.status import describe, of_report

    if "status" not in meta:  # a report built without one (the gate reads that as never started)
        return None
    end = of_report(meta)
    if end.completed:
        return None
    from rich.markup import escape

    seen = ": the sites shown are what it saw before that" if has_sites else ": it saw no sync"
    return f"syncscope: the run {escape(safe_text(describe(end)))}{seen}"
