"""Markdown summaries for `$GITHUB_STEP_SUMMARY` and pull-request comments.

GitHub renders GFM tables; we escape `|` and backticks in source text so a line of code never
breaks the table. Summaries stay short (the top sites, a count of the rest): a PR comment that
scrolls for pages gets ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscope.report.schema import format_ms as _ms
from syncscope.terminal import safe_text

if TYPE_CHECKING:
    from syncscope.ci.baseline import Observation
    from syncscope.ci.gate import GateResult
    from syncscope.report.schema import Report

MAX_ROWS = 25


def _cell(text: object) -> str:
    cell = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("`", "'")
    return safe_text(cell)  # other control characters shown escaped (the summary may be printed)


def _code(text: str, limit: int = 80) -> str:
    text = _cell(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"`{text}`" if text else ""


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_report(report: "Report", limit: int = MAX_ROWS) -> str:
    """A runtime report: headline numbers, then the in-scope sites by blocked time."""
    in_scope, allowed, out_of_scope = report.grouped()
    events = sum(s.count for s in in_scope)
    device = report.meta.get("device", "?")
    lines = [f"## syncscope: {events} host sync(s) at {len(in_scope)} site(s) in scope", ""]
    measured = any(s.measured for s in in_scope)
    blocked = sum(s.blocked_ns for s in in_scope)
    facts = [f"device `{_cell(device)}`"]
    if measured:
        facts.append(f"host blocked {_ms(blocked)} ms in total")
    if report.meta.get("combined_from"):
        facts.append(f"{len(report.meta['combined_from'])} processes combined")
    potential = report.potential()
    if potential:
        facts.append(f"{sum(s.count for s in potential)} potential (pageable non_blocking copies that did not block)")
    if allowed:
        facts.append(f"{sum(s.count for s in allowed)} allowed")
    if out_of_scope:
        facts.append(f"{sum(s.count for s in out_of_scope)} outside the regions in scope")
    lines += [", ".join(facts) + ".", ""]
    if in_scope:
        rows = [
            [
                f"`{_cell(s.path)}:{s.line}`",
                _cell(s.function),
                _cell(s.kind),
                str(s.count),
                _ms(s.blocked_ns if s.measured else None),
                _code(s.source),
            ]
            for s in in_scope[:limit]
        ]
        lines += _table(["site", "function", "kind", "count", "blocked ms", "source"], rows)
        if len(in_scope) > limit:
            lines += ["", f"… and {len(in_scope) - limit} more site(s) in the JSON report."]
    else:
        lines.append("No host syncs in scope. :white_check_mark:")
    return "\n".join(lines) + "\n"


def render_gate(result: "GateResult", observation: "Observation", baseline_path: str, limit: int = MAX_ROWS) -> str:
    """The gate's verdict: new sites first (they fail the build), then fixed ones."""
    mark = ":white_check_mark: passed" if result.passed else ":x: failed"
    lines = [
        f"## syncscope gate {mark}",
        "",
        f"{len(observation.sites)} site(s) in `{_cell(observation.path)}`: {len(result.accepted)} accepted by "
        f"`{_cell(baseline_path)}`, **{len(result.new)} new**, {len(result.over_budget)} over budget, "
        f"{len(result.fixed)} fixed.",
        "",
    ]
    if result.new:
        lines += ["### New sync sites", ""]
        rows = [
            [f"`{_cell(o.site.path)}:{o.site.line}`", _cell(o.site.function), _cell(o.site.kind), str(o.count), _code(o.site.source)]
            for o in result.new[:limit]
        ]
        lines += _table(["site", "function", "kind", "count", "source"], rows)
        if len(result.new) > limit:
            lines.append(f"\n… and {len(result.new) - limit} more.")
        lines.append("")
    if result.over_budget:
        lines += ["### Over their per-step budget", ""]
        rows = [
            [f"`{_cell(b.observed.site.path)}:{b.observed.site.line}`", _cell(b.observed.site.kind), f"{b.per_step:.3g}", f"{b.entry.max_per_step:g}"]
            for b in result.over_budget
        ]
        lines += _table(["site", "kind", "per step", "budget"], rows) + [""]
    if result.fixed:
        lines += [f"<details><summary>{len(result.fixed)} baseline site(s) no longer seen</summary>", ""]
        rows = [[f"`{_cell(e.path)}:{e.line}`", _cell(e.function), _cell(e.kind), _code(e.source)] for e in result.fixed[:limit]]
        lines += _table(["site", "function", "kind", "source"], rows) + ["", "</details>", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
