"""How a run ended: the one place that says what a report's `status`, `ending`, `exit_code` and
`error` are (docs/report-schema.md). Standard library only: the gate reads it without torch.

`status` is what a reader decides on (the gate refuses anything but `completed`):

* `completed`  the program ran to its end and exited 0 (`sys.exit(0)` and `os._exit(0)` too);
* `failed`     it raised, or exited non-zero, or a `--scope` it was given matched nothing;
* `killed`     a signal ended it (SIGINT, SIGTERM, SIGHUP, SIGQUIT);
* `never_started`  syncscope could not start it (no such script or module, a bad option): the
  report holds nothing, and says so instead of leaving an older report in place;
* `running`    a flush written while it ran: on disk at the end, the process died where no
  handler runs (SIGKILL, the OOM killer, a native abort); read as `killed`.

`ending` keeps the detail: `ok`, `exit`, `exception`, `interrupted`, `terminated`, `os._exit`,
`never_started`, `running`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

COMPLETED = "completed"
FAILED = "failed"
KILLED = "killed"
NEVER_STARTED = "never_started"
RUNNING = "running"
STATUSES = (COMPLETED, FAILED, KILLED, NEVER_STARTED, RUNNING)
# Worst last: `combine` carries the worst status of its inputs. A report still `running` on disk
# is a killed process; one that never started checked nothing at all.
_SEVERITY = {COMPLETED: 0, FAILED: 1, RUNNING: 2, KILLED: 2, NEVER_STARTED: 3}


@dataclass(frozen=True)
class RunEnd:
    """The final fields of a report."""

    status: str
    ending: str
    exit_code: int | None
    error: str | None = None

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED

    def to_meta(self) -> dict[str, Any]:
        return {"status": self.status, "ending": self.ending, "exit_code": self.exit_code, "error": self.error}


def ended(ending: str, exit_code: int | None, error: str | None = None) -> RunEnd:
    """The end the runner saw (`runner.Outcome.status` is an `ending`)."""
    if ending in ("interrupted", "terminated"):
        status = KILLED
    elif ending == "running":
        status = RUNNING
    elif ending == "never_started":
        status = NEVER_STARTED
    elif ending == "ok" or (ending in ("exit", "os._exit") and exit_code == 0):
        status = COMPLETED
    else:  # exception, a non-zero exit, anything unknown: fail closed
        status = FAILED
    return RunEnd(status, ending, exit_code, error)


def from_outcome(outcome) -> RunEnd:
    return ended(outcome.status, outcome.exit_code, outcome.error)


def running() -> RunEnd:
    return RunEnd(RUNNING, "running", None, None)


def killed_by(signum: int) -> RunEnd:
    import signal

    return RunEnd(KILLED, "terminated", -signum, signal.Signals(signum).name)


def os_exit(code: int) -> RunEnd:
    return ended("os._exit", code)


def never_started(error: str) -> RunEnd:
    return RunEnd(NEVER_STARTED, "never_started", 2, error)


def scope_failed(end: RunEnd, error: str) -> RunEnd:
    """A run whose `--scope` matched nothing: its in-scope syncs are not known, so it failed,
    whatever the program did (the program's own ending stays in `ending`)."""
    return RunEnd(FAILED, end.ending, end.exit_code if end.exit_code else 2, error)


def of_report(meta: dict) -> RunEnd:
    """The end a loaded report states. Reports of schema 1 and 2 used the `ending` words as
    their `status`; a report with none (written for a run that never started, before schema 3)
    reads as never started."""
    status, code, error = meta.get("status"), meta.get("exit_code"), meta.get("error")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    error = error if isinstance(error, str) else None
    ending = meta.get("ending")
    if status in STATUSES:
        return RunEnd(status, ending if isinstance(ending, str) else status, code, error)
    if not isinstance(status, str):
        return RunEnd(NEVER_STARTED, "never_started", code, error or "the report does not say how the run ended")
    return ended(status, code, error)


def worst(ends: Iterable[RunEnd]) -> RunEnd:
    ends = list(ends)
    return max(ends, key=lambda e: _SEVERITY.get(e.status, 3)) if ends else RunEnd(NEVER_STARTED, "never_started", None, "no reports")


def describe(end: RunEnd) -> str:
    """One phrase for messages: `failed (exit code 1: ValueError: boom)`."""
    status = KILLED if end.status == RUNNING else end.status
    words = {COMPLETED: "completed", FAILED: "failed", KILLED: "was killed", NEVER_STARTED: "never started"}[status]
    if end.status == RUNNING:
        words += " (its report is a flush made while it ran)"
    detail = []
    if end.exit_code is not None and end.status != NEVER_STARTED:
        detail.append(f"exit code {end.exit_code}")
    if end.error:
        detail.append(end.error)
    return words + (f" ({': '.join(detail)})" if detail else "")
