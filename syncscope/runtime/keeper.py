"""Keeping the report of a run on disk on every way out (docs/reliability.md).

`ReportKeeper` owns the exit paths of a `syncscope run` process and the writing of its report:

* while the program runs, the report is rewritten atomically (temp file + `os.replace`) when a
  new site appears (in the recording thread, so a site seen just before a native abort is on
  disk) and every `interval` seconds when new events came in (in a background thread): a fault
  no handler sees (abort, SIGKILL, the OOM killer) loses at most what came after the last flush.
  Such a report says `"status": "running"`;
* `os._exit(n)` (what serving engines call from signal handlers and after fatal errors) writes
  the final report, then exits with `n`;
* SIGTERM, SIGHUP and SIGQUIT (left at their default action by the program) write the final
  report, then the process dies of the same signal, as plain python would, without running the
  program's `finally` blocks or `atexit` handlers (plain python runs neither);
* a normal end, `sys.exit`, an exception or Ctrl-C reach the caller, which calls `finish`.

Flushing never blocks the program on the background thread: a flush that finds another one in
progress leaves the work to the thread. Rewrites are rationed so they cost at most ~10% of the
run while events keep coming in (a flush is allowed again after ten times as long as the last
one took); a run without syncs never writes before its end.
"""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from typing import Callable

from syncscope.report import status
from syncscope.report.status import RunEnd
from syncscope.runtime import signal_backstop
from syncscope.runtime.signal_backstop import die_of_signal

# Signals whose default action ends the process without Python seeing it, other than SIGINT
# (a KeyboardInterrupt the program can catch) and SIGKILL/SIGSTOP (no handler possible).
FATAL_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))

_real_os_exit = os._exit
_exit_callbacks: list[tuple[int, Callable[[int], None]]] = []  # (pid, callback)


def _os_exit(code):
    """Replaces `os._exit` while a run is followed: the final report first, then the real exit."""
    pid = os.getpid()
    for owner, callback in list(_exit_callbacks):
        if owner == pid:  # a forked child inherits the list; only its own callbacks run
            try:
                callback(code)
            except BaseException:
                pass  # the program asked to exit now: nothing of ours may stop it
    _real_os_exit(code)


def at_os_exit(callback: Callable[[int], None]) -> Callable[[], None]:
    """Run `callback(code)` when this process calls `os._exit(code)`. Returns the undo."""
    entry = (os.getpid(), callback)
    _exit_callbacks.append(entry)
    os._exit = _os_exit

    def undo() -> None:
        if entry in _exit_callbacks:
            _exit_callbacks.remove(entry)
        if not _exit_callbacks:
            os._exit = _real_os_exit

    return undo


class ReportKeeper:
    """The report of one process: rewritten while the program runs, final on every way out.

    `write(end)` builds and writes the report (`end` None for an intermediate flush, else the
    run's `RunEnd`); it is only ever called with the lock held. The keeper says which end each way
    out is (report/status.py names them): a fatal signal (`fatal_signal`), `os._exit` (hooked by
    `start`), or the program coming back to the caller (`finish_outcome`).
    `count` returns how many events have been recorded so far (cheap: a list length).
    `on_final()`, when given, runs after the final write on the ways out the caller never sees
    (a fatal signal, `os._exit`): `syncscope run` shows its table there."""

    def __init__(self, write: Callable[[RunEnd | None], None], count: Callable[[], int], *, interval: float = 2.0,
                 on_final: Callable[[], None] | None = None):
        self._write = write
        self._count = count
        self._on_final = on_final
        self.interval = interval
        self.pid = os.getpid()
        self._lock = threading.RLock()  # re-entrant: a signal handler may interrupt a flush
        self._wake = threading.Event()
        self._sites: set[tuple] = set()
        self._written = 0  # events covered by the last write
        self._next_allowed = 0.0  # monotonic time before which a new-site flush waits
        self._stopped = False
        self.finished = False
        self.flushes = 0
        self._undo: list[Callable[[], None]] = []

    # -- starting and stopping -----------------------------------------------------------------
    def start(self) -> None:
        """Start the periodic flush, hook `os._exit` and the fatal signals."""
        self._undo.append(at_os_exit(self._os_exit))
        for signum in FATAL_SIGNALS:
            self._take_signal(signum, self.fatal_signal)
        # A raw thread, not a `threading.Thread`: invisible to the program's
        # `threading.enumerate()` / `active_count()`, and no join at interpreter exit.
        _thread.start_new_thread(self._loop, ())

    def _take_signal(self, signum: int, handler: Callable[[int], None]) -> None:
        try:
            if signal.getsignal(signum) is not signal.SIG_DFL:
                return  # ignored (nohup) or handled by whoever started us: leave it so
            # Watched: a main thread blocked where the signal cannot reach the handler still
            # dies of it, as under plain python (runtime/signal_backstop.py).
            signal_backstop.install(signum, lambda s, frame: handler(s), on_stuck=handler)
        except (ValueError, OSError):  # not the main thread: leave signals alone
            return

        def undo() -> None:
            try:
                signal.signal(signum, signal.SIG_DFL)
            except (ValueError, OSError):
                pass

        self._undo.append(undo)

    # -- the ways out ---------------------------------------------------------------------------
    def fatal_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP/SIGQUIT (also the runner's SIGTERM): the final report, then die of the
        signal, as plain python dies without running the program's `finally` blocks."""
        self._final(status.killed_by(signum))
        die_of_signal(signum)

    def _os_exit(self, code: int) -> None:
        """`os._exit(code)` in the program: the final report; the real exit follows."""
        self._final(status.os_exit(code))

    def _final(self, end: RunEnd) -> None:
        self.finish(end)
        if self._on_final is not None:
            self._on_final()

    def finish_outcome(self, outcome, *, scope_error: str | None = None) -> RunEnd:
        """The program came back to the caller (`runner.Outcome`: a normal end, `sys.exit`, an
        exception, Ctrl-C; None when syncscope lost it on the way): its final report. A `--scope`
        that matched nothing (`scope_error`) fails the run, whatever the program did."""
        if outcome is not None:
            end = status.from_outcome(outcome)
        else:
            end = status.ended("exception", 1, "syncscope could not follow the program to its end")
        if scope_error is not None:
            end = status.scope_failed(end, scope_error)
        self.finish(end)
        return end

    def stop(self) -> None:
        """Stop flushing and give back `os._exit` and the signals (the final write is `finish`)."""
        self._stopped = True
        self._wake.set()
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        signal_backstop.stop()

    # -- flushing ------------------------------------------------------------------------------
    def on_event(self, event) -> None:
        """Called by the recorder for every event: a new site is flushed at once (budget allowing)."""
        key = (event.site.path, event.site.line, event.kind)
        if key in self._sites:
            return
        self._sites.add(key)
        if time.monotonic() >= self._next_allowed and os.getpid() == self.pid:
            try:
                self.flush(blocking=False)
            except Exception as exc:  # a full disk must not become the program's error
                from syncscope.runtime import hook_errors

                hook_errors.note("report writer", exc)
        else:
            self._wake.set()

    def flush(self, *, blocking: bool = True) -> bool:
        """Write the report as it stands now, unless the run is finished. True when written."""
        if self.finished or os.getpid() != self.pid:
            return False
        if not self._lock.acquire(blocking=blocking):
            self._wake.set()  # the thread is writing: it flushes again when done
            return False
        try:
            if self.finished:
                return False
            count = self._count()
            started = time.monotonic()
            self._write(None)
            took = time.monotonic() - started
            self._next_allowed = time.monotonic() + 10 * took
            self._written = count
            self.flushes += 1
            return True
        finally:
            self._lock.release()

    def _loop(self) -> None:
        while not self._stopped and os.getpid() == self.pid:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stopped or self.finished:
                return
            if self._count() == self._written:
                continue
            wait = self._next_allowed - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, self.interval))
            try:
                self.flush()
            except Exception:
                pass  # a failed intermediate write must not end the run; the final one reports

    def finish(self, final: RunEnd) -> None:
        """Write the final report once (later calls do nothing). Waits up to 10 s for a flush
        in progress in the background thread."""
        if self.finished or os.getpid() != self.pid:
            return
        acquired = self._lock.acquire(timeout=10)
        try:
            if self.finished:
                return
            self.finished = True
            self._stopped = True
            self._wake.set()
            self._write(final)
        finally:
            if acquired:
                self._lock.release()
