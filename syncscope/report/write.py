"""The one way a report file is written: build it from the events, then write it whole.

`syncscope run` (its flushes, its final report and the report of a run that never started), each
child process, `syncscope.monitor()` and `syncscope oracle` all write through `write_report`, so
every report file is built the same way and is never seen half-written.
"""

from __future__ import annotations

from typing import Any, Iterable

from syncscope.atomic import write_json_atomic
from syncscope.events import HostSyncEvent
from syncscope.report.aggregate import build_report
from syncscope.report.schema import Report


def write_report(path: str, events: Iterable[HostSyncEvent], meta: dict[str, Any], *, bubbles=None, errors: list[dict] | None = None) -> Report:
    """Build the report of `events` with the top-level keys `meta` (report/host.py's
    `run_metadata` plus the run's status) and write it to `path` atomically; returns it.
    `bubbles`: the bubble window's `WindowResult`; `errors`: the hooks' internal errors."""
    report = build_report(list(events), meta, bubbles=bubbles, errors=errors)
    write_json_atomic(path, report.to_json())
    return report
