"""Static x runtime: which lint findings a run confirmed, and which runtime syncs no rule caught.

A finding is confirmed when a runtime site of a compatible kind has the finding's line in its
stack: the innermost frame for a direct sync (`.item()` on that line), an outer frame for a sync
inside a helper the line calls (SYN601/SYN602 report the call site), or the root line of a
whole-program finding's chain. A finding with a chain is confirmed only by the sync its chain
ends at, never by another sync the same call leads to. Confirmed findings rank first, by
the time the host was blocked there, then by events: they are real and measured, fix them first.
Runtime sites that no finding points at are the linter's blind spots.

Standard library only: `syncscope lint --confirm REPORT` must not import torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Generic, Iterable, Mapping, TypeVar

from syncscope.lint.catalog import ANY_RULE_KINDS, DEFAULT_RULE_KINDS
from syncscope.lint.findings_json import lint_site
from syncscope.report.schema import Report, SiteStats, load_report
from syncscope.site import Site

F = TypeVar("F")


@dataclass(frozen=True)
class Confirmed(Generic[F]):
    finding: F
    runtime: tuple[SiteStats, ...]  # the runtime sites that confirm it

    @property
    def events(self) -> int:
        return sum(s.count for s in self.runtime)

    @property
    def blocked_ns(self) -> int:
        return sum(s.blocked_ns for s in self.runtime)


@dataclass(frozen=True)
class Confirmation(Generic[F]):
    confirmed: tuple[Confirmed[F], ...]  # ranked: most blocked time first, then most events
    unconfirmed: tuple[F, ...]  # findings no run reached, in their original order
    uncaught: tuple[SiteStats, ...]  # runtime sites no finding points at (blocked time first)

    def ranked(self) -> list[F]:
        """All findings, the confirmed ones first."""
        return [c.finding for c in self.confirmed] + list(self.unconfirmed)


def _site_of(finding: Any) -> Site:
    if isinstance(finding, Site):
        return finding
    site = getattr(finding, "site", None)
    if isinstance(site, Site):
        return site
    if isinstance(finding, dict):  # one object of `syncscope lint --output-format json`
        return lint_site(finding)
    raise TypeError(f"cannot tell where finding {finding!r} is: give a Site, an object with .site, or a lint JSON dict")


def _chain_root(finding: Any) -> tuple[str, int] | None:
    """(path, line) where a SYN601/SYN602 finding's chain of calls ends, if it has one."""
    chain = finding.get("chain") if isinstance(finding, dict) else getattr(finding, "chain", None)
    if not chain:
        return None
    last = chain[-1]
    path, line = (last["path"], last["line"]) if isinstance(last, dict) else (last[0], last[1])
    return _norm(str(path)), int(line)


def _norm(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def _rebase(path: str, report_root: str | None, lint_root: str | None) -> str:
    """A runtime path (relative to the run's project root) relative to the linted root instead."""
    if not lint_root or not report_root or os.path.isabs(path) or path.startswith("<"):
        return _norm(path)
    absolute = os.path.join(report_root, path)
    rel = os.path.relpath(absolute, lint_root)
    return _norm(absolute if rel.startswith("..") else rel)


def _compatible(rule: str, kind: str, rule_kinds: Mapping[str, frozenset[str] | None]) -> bool:
    kinds = rule_kinds.get(rule)
    return kinds is None or kind in kinds or kind in ANY_RULE_KINDS


def confirm(
    findings: Iterable[F],
    report: Report | str,
    *,
    lint_root: str | None = None,
    include_out_of_scope: bool = False,
    rule_kinds: Mapping[str, frozenset[str] | None] = DEFAULT_RULE_KINDS,
) -> Confirmation[F]:
    """Match lint `findings` (syncscope.lint Findings, `Site`s, or lint JSON dicts) with the sites
    of a runtime `report` (a `Report` or the path of one). `lint_root` is the directory lint paths
    are relative to, when it differs from the run's project root. Allowed syncs, and (unless
    `include_out_of_scope`) syncs outside the regions in scope, neither confirm nor count as
    uncaught."""
    if isinstance(report, str):
        report = load_report(report)
    report_root = report.meta.get("project_root")
    runtime = [s for s in report.sites if not s.allowed and (s.in_scope or include_out_of_scope)]
    # Every (path, line) a runtime site's stack passes through -> the sites (innermost first).
    by_line: dict[tuple[str, int], list[tuple[int, SiteStats]]] = {}
    innermost: dict[int, tuple[str, int]] = {}  # id(site) -> where it synced
    for stats in runtime:
        frames = stats.stack or [{"path": stats.path, "line": stats.line}]
        for depth, frame in enumerate(frames):
            key = (_rebase(str(frame.get("path", "")), report_root, lint_root), int(frame.get("line", 0)))
            by_line.setdefault(key, []).append((depth, stats))
            innermost.setdefault(id(stats), key)

    confirmed, unconfirmed, caught = [], [], set()
    for finding in findings:
        site = _site_of(finding)
        candidates = list(by_line.get((_norm(site.path), site.line), []))
        root = _chain_root(finding)
        if root is not None:
            # a whole-program finding (SYN601/SYN602): the runtime sync at the chain's root
            # line confirms it even where the run kept no stack through the call site
            candidates += [(depth, stats) for depth, stats in by_line.get(root, []) if depth == 0]
        matches = [
            stats
            for depth, stats in sorted(candidates, key=lambda m: m[0])
            if _compatible(site.kind, stats.kind, rule_kinds)
            # A chain names the one sync it reaches: another sync the call also leads to (its
            # stack passes through the call site too) is not this finding's, and stays
            # "uncaught" unless a finding of its own points at it (issue 28).
            and (root is None or innermost[id(stats)] == root)
        ]
        if matches:
            runtime_sites = tuple({id(s): s for s in matches}.values())  # each once, innermost first
            confirmed.append(Confirmed(finding, runtime_sites))
            caught.update(id(s) for s in runtime_sites)
        else:
            unconfirmed.append(finding)
    confirmed.sort(key=lambda c: (-c.blocked_ns, -c.events))
    uncaught = sorted((s for s in runtime if id(s) not in caught), key=lambda s: (-s.blocked_ns, -s.count, s.path, s.line))
    return Confirmation(tuple(confirmed), tuple(unconfirmed), tuple(uncaught))


def render_text(result: Confirmation, describe=None) -> str:
    """A plain summary: confirmed findings (with their runtime evidence), then the runtime sites
    no rule caught. `describe(finding) -> str` names a finding (default: path:line code)."""

    def name(finding) -> str:
        if describe is not None:
            return describe(finding)
        site = _site_of(finding)
        return f"{site.path}:{site.line}: {site.kind}"

    def evidence(c: Confirmed) -> str:
        ms = f", host blocked {c.blocked_ns / 1e6:.3f} ms" if c.blocked_ns else ""
        kinds = ", ".join(sorted({s.kind for s in c.runtime}))
        return f"confirmed by the run: {c.events} event(s) ({kinds}){ms}"

    lines = [f"{len(result.confirmed)} finding(s) confirmed by the run, {len(result.unconfirmed)} not reached by it"]
    for c in result.confirmed:
        lines.append(f"  {name(c.finding)}  [{evidence(c)}]")
    if result.uncaught:
        lines.append(f"{len(result.uncaught)} runtime sync site(s) no rule caught:")
        for s in result.uncaught:
            ms = f", {s.blocked_ns / 1e6:.3f} ms" if s.measured else ""
            lines.append(f"  {s.path}:{s.line}: {s.kind} in {s.function} ({s.count} event(s){ms}): {s.source}")
    return "\n".join(lines)
