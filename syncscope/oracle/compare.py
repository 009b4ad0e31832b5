"""`--compare REPORT`: the oracle's verdicts against a hook-based report (`syncscope run`).

Only lines the oracle traced can be compared. A hook site is matched to a traced line through its
stack: its own line when that line was traced, else the innermost caller frame that was (a sync in
a helper called from a scoped function belongs to the calling line, as the oracle sees it). Hook
sites with no frame on a traced line are counted as outside the oracle's view. Standard library
only; works on saved reports too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from syncscope.report.schema import Report, SiteStats


def _absolute(path: str, root: str | None) -> str:
    if not os.path.isabs(path):
        path = os.path.join(root or os.getcwd(), path)
    return os.path.realpath(path)


@dataclass
class Comparison:
    blind_spots: list[dict] = field(default_factory=list)  # oracle blocked, no hook site
    agreed: list[tuple[dict, list[SiteStats]]] = field(default_factory=list)  # blocked and hooked
    hook_only: list[tuple[dict, list[SiteStats]]] = field(default_factory=list)  # hooked, oracle free
    hook_uncertain: list[tuple[dict, list[SiteStats]]] = field(default_factory=list)  # hooked, oracle uncertain
    outside: list[SiteStats] = field(default_factory=list)  # hook sites on no traced line

    def to_json(self) -> dict:
        def line_ref(line: dict) -> dict:
            return {k: line[k] for k in ("path", "line", "function", "source", "verdict", "ratio") if k in line}

        def hooked(pairs: list[tuple[dict, list[SiteStats]]]) -> list[dict]:
            return [
                {**line_ref(l), "hook_sites": [{"path": s.path, "line": s.line, "kind": s.kind, "count": s.count} for s in sites]}
                for l, sites in pairs
            ]

        return {
            "blind_spots": [line_ref(l) for l in self.blind_spots],
            "agreed": hooked(self.agreed),
            "hook_only": hooked(self.hook_only),
            "hook_uncertain": hooked(self.hook_uncertain),
            "outside_oracle": len(self.outside),
        }


def compare(lines: list[dict], oracle_root: str | None, hook: Report) -> Comparison:
    """`lines`: the oracle's per-line entries (`oracle.lines` of its report)."""
    hook_root = hook.meta.get("project_root")
    traced = {}
    for line in lines:
        traced[(_absolute(line["path"], oracle_root), int(line["line"]))] = line
    hooked: dict[tuple, list[SiteStats]] = {}
    result = Comparison()
    for site in hook.sites:
        frames = [(site.path, site.line)] + [(f.get("path", ""), f.get("line", 0)) for f in site.stack]
        match = None
        for path, number in frames:
            key = (_absolute(path, hook_root), int(number))
            if key in traced:
                match = key
                break
        if match is None:
            result.outside.append(site)
        else:
            hooked.setdefault(match, []).append(site)
    for key, line in traced.items():
        sites = hooked.get(key)
        verdict = line.get("verdict")
        if verdict == "blocked":
            if sites:
                result.agreed.append((line, sites))
            else:
                result.blind_spots.append(line)
        elif sites and verdict == "free":
            result.hook_only.append((line, sites))
        elif sites:
            result.hook_uncertain.append((line, sites))
    return result
