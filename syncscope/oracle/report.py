"""The oracle's results as a syncscope report (same schema as `syncscope run`'s).

Sites are the *blocked* lines, kind `blocked_line`, one event per blocked hit with the wait
measured behind the oracle's queue as `blocked_ns` (that says the line waits; how long it waits in
the real program depends on what the real queue holds). Every traced line, whatever its verdict,
is kept under the top-level key `oracle.lines`, so reports, baselines and the gate read oracle
reports like any other, and `--compare` can be redone from a saved one. Standard library only.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from syncscope.oracle.verdict import BLOCKED, LineResult, Thresholds
from syncscope.report.aggregate import build_report
from syncscope.report.schema import Report
from syncscope.events import Frame, HostSyncEvent
from syncscope.site import relative_path

BLOCKED_LINE = "blocked_line"
ORACLE_API = "oracle"


def line_events(results: list[LineResult], root: str) -> list[HostSyncEvent]:
    events = []
    thread = threading.current_thread().name
    pid = os.getpid()
    for result in results:
        frame = Frame(relative_path(result.filename, root), result.line, result.function)
        for hit in result.hits:
            if hit.verdict != BLOCKED:
                continue
            events.append(
                HostSyncEvent(
                    kind=BLOCKED_LINE,
                    api=ORACLE_API,
                    site=frame,
                    source=result.source,
                    stack=(frame,),
                    thread=thread,
                    pid=pid,
                    region=result.label,
                    in_scope=True,
                    blocked_ns=hit.wait_ns,
                    detector="oracle",
                    extra={"ratio": hit.ratio, "ahead_ns": hit.ahead_ns},
                )
            )
    return events


def oracle_section(results: list[LineResult], root: str, *, calibration: dict | None, thresholds: Thresholds, settings: dict, cost: dict) -> dict:
    return {
        "calibration": calibration,
        "thresholds": thresholds.to_json(),
        **settings,
        "cost": cost,
        "lines": [r.to_json(relative_path(r.filename, root)) for r in results],
    }


def build_oracle_report(results: list[LineResult], meta: dict[str, Any], root: str, section: dict) -> Report:
    return build_report(line_events(results, root), {**meta, "oracle": section})


def oracle_lines(report: Report) -> list[dict]:
    """The per-line table of a saved oracle report ([] for a report of `syncscope run`)."""
    section = report.meta.get("oracle")
    if not isinstance(section, dict):
        return []
    return list(section.get("lines", []))
