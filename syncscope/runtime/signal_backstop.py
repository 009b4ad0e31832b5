"""Making sure a fatal signal ends the process even when our Python-level handler cannot run.

syncscope catches SIGTERM, SIGHUP and SIGQUIT to write the report before the process dies of them
(runtime/keeper.py, and each child's report in runtime/multiprocess.py). A Python-level handler
only runs on the main thread, between two bytecodes: CPython's C handler notes the signal and
returns. When the main thread is in a blocking call that the signal did not interrupt, the handler
waits for that call to return, and if it never does, the process that plain python would have
killed at once hangs. Two ways this happens:

* the signal lands after CPython last looked for pending signals and before the main thread
  blocks (how `Pool.terminate()` left an idle worker waiting forever in `sem_wait` for the
  inqueue's lock, the parent joining it: docs/runtime.md);
* the kernel delivers a process-directed signal to another thread, and the main thread waits on
  a lock (or a `join`) that only the handler would have ended.

Coverage.py's SIGTERM handler met the same hazard (hangs reported as its issue #1310); it is
opt-in there now (`[run] sigterm`). We keep ours, since a SIGTERM is how serving jobs are
stopped, with a backstop: the signal module writes each caught signal's number to a wakeup fd,
and a raw thread (all signals blocked in it, so the kernel never picks it) reads them. When a
watched signal's handler has not started after POKE_EVERY, it sends the signal again to the main
thread, which interrupts the blocking call (EINTR, and CPython runs the handler on its way out).
If the handler still has not started after GIVE_UP_AFTER (a C extension that retries on EINTR,
such as a hung collective), the thread runs the handler's stuck path itself: write what it can,
then die of the signal.

The wakeup fd is one per process, and the program never sees ours: while the backstop runs,
`signal.set_wakeup_fd` answers the program as plain python would (Trio warns when it finds a
descriptor it did not set). A program that sets its own (asyncio's `add_signal_handler`) takes
the slot over, and the backstop is silent until the program unsets it. A handler the program
installs over ours is the program's: the backstop leaves that signal alone.
"""

from __future__ import annotations

import _thread
import os
import signal
import time
from typing import Callable

POKE_EVERY = 0.05  # seconds between the signal's arrival (or a poke) and the next poke
GIVE_UP_AFTER = 2.0  # seconds of pokes before the stuck path ends the process from the thread

Handler = Callable[[int, object], None]

_pid: int | None = None  # the process whose backstop thread runs (a forked child has none)
_read_fd = -1
_write_fd = -1  # our wakeup fd
_real_os_exit = os._exit  # keeper.py may hook os._exit later; dying must not run its callbacks again
_set_wakeup_fd = signal.set_wakeup_fd  # the real one: the program is given _set_wakeup_fd_for_program
_stuck_paths: dict[object, Callable[[int], None]] = {}  # installed handler -> its stuck path
_started = False  # a watched handler began on the main thread: its signal is being handled


def install(signum: int, handler: Handler, on_stuck: Callable[[int], None]) -> Handler:
    """`signal.signal(signum, ...)` for a handler that ends the process, watched by the backstop.
    `on_stuck(signum)` runs in the backstop's thread when `handler` never got to start; it must
    end the process (see `die_of_signal`). Main thread only (`signal.signal` raises otherwise).
    Returns the function installed."""

    def started_then_handle(signum: int, frame) -> None:
        global _started
        _started = True
        handler(signum, frame)

    signal.signal(signum, started_then_handle)
    _stuck_paths[started_then_handle] = on_stuck
    _start_thread()
    return started_then_handle


def stop() -> None:
    """Stop the backstop of this process and give the wakeup fd back (main thread)."""
    global _pid, _read_fd, _write_fd
    _stuck_paths.clear()
    if _pid != os.getpid():
        return
    try:
        _give_back_wakeup_fd()
    except ValueError:  # not the main thread
        return
    try:
        os.write(_write_fd, b"\0")  # the thread's cue to end (no signal has number 0); it closes the read end
    except OSError:
        pass  # a full pipe: the thread is reading, and ends with the process
    os.close(_write_fd)
    _pid, _read_fd, _write_fd = None, -1, -1


def die_of_signal(signum: int) -> None:
    """End this process by `signum` with its default action, as if no handler had been set.
    From the main thread, or from the backstop's thread (where `signal.signal` is refused)."""
    try:
        signal.signal(signum, signal.SIG_DFL)
    except ValueError:  # not the main thread
        _default_action_from_thread(signum)
    os.kill(os.getpid(), signum)
    time.sleep(1)  # the signal is delivered on the way back to Python; this only waits for it
    _real_os_exit(128 + signum)


def _default_action_from_thread(signum: int) -> None:
    # libc's signal(), which Python only lets the main thread call. Loaded here, on the way to
    # death, so that nothing else pays for ctypes.
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(signum, None)  # SIG_DFL is the null pointer
    except Exception:
        pass  # then die_of_signal's os._exit ends the process, with the same exit code a shell shows


def _start_thread() -> None:
    global _pid, _read_fd, _write_fd
    if _pid == os.getpid():
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd requires it: the C handler must never block
    previous = _set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    if previous != -1:  # the program's: leave it to the program
        _set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return
    _pid, _read_fd, _write_fd = os.getpid(), read_fd, write_fd
    signal.set_wakeup_fd = _set_wakeup_fd_for_program
    # A raw thread: invisible to the program's `threading.enumerate()`, never joined at exit.
    _thread.start_new_thread(_watch, (read_fd, _thread.get_ident()))


def _watch(read_fd: int, main_thread: int) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        while True:
            for signum in os.read(read_fd, 64):
                if signum == 0:
                    return
                _see_through(signum, main_thread)
    except OSError:
        return
    finally:
        try:
            os.close(read_fd)
        except OSError:
            pass


def _see_through(signum: int, main_thread: int) -> None:
    """Wait for the handler of `signum` to start on the main thread; poke it, then take over."""
    deadline = time.monotonic() + GIVE_UP_AFTER
    while True:
        time.sleep(POKE_EVERY)
        on_stuck = _stuck_paths.get(signal.getsignal(signum))
        if _started or on_stuck is None:
            return  # handled, or the handler in place is no longer ours
        if time.monotonic() >= deadline:
            try:
                on_stuck(signum)  # ends the process
            finally:
                die_of_signal(signum)  # in case it did not
        try:
            signal.pthread_kill(main_thread, signum)
        except (OSError, ValueError):
            pass


def _after_fork_in_child() -> None:
    # The parent's wakeup fd points into the parent's pipe, read by a thread the child does not
    # have: a signal caught here would poke the parent. The child starts its own when it installs.
    global _pid, _read_fd, _write_fd, _started
    if _pid is None:
        return
    try:
        _give_back_wakeup_fd()
    except ValueError:
        pass
    for fd in (_read_fd, _write_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    _pid, _read_fd, _write_fd, _started = None, -1, -1, False
    _stuck_paths.clear()


def _give_back_wakeup_fd() -> None:
    """Unset our wakeup fd; one the program set since is the program's and stays."""
    signal.set_wakeup_fd = _set_wakeup_fd
    current = _set_wakeup_fd(-1)
    if current != _write_fd:
        _set_wakeup_fd(current)


def _set_wakeup_fd_for_program(fd: int, /, *, warn_on_full_buffer: bool = True) -> int:
    """`signal.set_wakeup_fd` while the backstop runs: what plain python would answer. The
    program's -1 gives the slot back to us."""
    if _pid != os.getpid():  # a forked child, before its own backstop
        return _set_wakeup_fd(fd, warn_on_full_buffer=warn_on_full_buffer)
    if fd == -1:
        previous = _set_wakeup_fd(_write_fd, warn_on_full_buffer=False)
    else:
        previous = _set_wakeup_fd(fd, warn_on_full_buffer=warn_on_full_buffer)
    return -1 if previous == _write_fd else previous


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
