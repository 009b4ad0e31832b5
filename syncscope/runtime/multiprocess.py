"""Following child processes: each one writes its own report, `syncscope combine` merges them.

* `multiprocessing` children (fork, spawn, forkserver, and so `Pool` and DataLoader workers):
  we wrap `BaseProcess._bootstrap`, the function every child runs its target in, so the child
  records its syncs and writes `<report>.<host>.<pid>[.rank<r>].json` when the target ends. A
  forked child inherits the parent's trap (and a copy of the parent's events so far, which we drop:
  the parent reports those). A spawned or forkserver child starts a fresh interpreter with nothing
  of ours, so we ride along in the pickled preparation data (coverage.py's "stowaway" trick):
  unpickling it in the child installs the wrapper before the process object is loaded.
* `torchrun` ranks: each rank is its own `syncscope run` (`torchrun ... -m syncscope run ...`),
  so all a rank needs is a report name of its own; `process_report_path` gives one (with the rank
  from torchrun's `RANK`).

Every report is written atomically (temp file + rename), so a reader never sees half of one, and
a child stopped by SIGTERM (`Pool.terminate()`) still writes its report before dying of it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from dataclasses import dataclass
from typing import Callable

from syncscope.report import status
from syncscope.runtime import signal_backstop
from syncscope.runtime.keeper import at_os_exit
from syncscope.runtime.signal_backstop import die_of_signal

PLACEHOLDERS = ("{host}", "{pid}", "{rank}")


@dataclass(frozen=True)
class ChildConfig:
    """What a child needs to trap its own syncs as the parent does. Pickled into spawned children."""

    report_path: str  # the parent's `-o`: children derive their own names from it
    device: str  # resolved: "cuda" or "sim"
    policy: str = "record"
    root: str = ""
    allow: tuple = ()  # AllowRule values
    scope: tuple[str, ...] = ()
    module_forward: bool = False
    # How a child traps: None for `syncscope.trap`; under `--monitor`, the monitor's child trap
    # (monitoring/session.py's `MonitorOptions.child_trap`, a bound method that pickles with
    # its options), so that this module needs nothing of the layer above it.
    child_trap: Callable | None = None
    main_module: str | None = None  # the `-m` target: a scope on it waits for its classes (it is `__mp_main__` here)


def env_rank() -> int | None:
    """The rank torchrun (or another launcher speaking its protocol) gave this process."""
    value = os.environ.get("RANK", "")
    return int(value) if value.isdigit() else None


def report_path_for(base: str, *, host: str | None = None, pid: int | None = None, rank: int | None = None) -> str:
    """`syncscope-report.json` -> `syncscope-report.<host>.<pid>[.rank<r>].json`.
    `{host}`, `{pid}`, `{rank}` in `base` are filled in instead, where the user wrote them."""
    host = host or socket.gethostname().split(".")[0]
    pid = os.getpid() if pid is None else pid
    if any(p in base for p in PLACEHOLDERS):
        return base.replace("{host}", host).replace("{pid}", str(pid)).replace("{rank}", "none" if rank is None else str(rank))
    stem, ext = os.path.splitext(base)
    suffix = f".{host}.{pid}" + (f".rank{rank}" if rank is not None else "")
    return f"{stem}{suffix}{ext or '.json'}"


def process_report_path(base: str) -> str:
    """The report path of the process `syncscope run` runs in: `base` as given, unless this
    process is one rank of a distributed launch (each rank needs a file of its own) or the user
    asked for placeholders."""
    rank = env_rank()
    if rank is not None or any(p in base for p in PLACEHOLDERS):
        return report_path_for(base, rank=rank)
    return base


# -- the child side ----------------------------------------------------------------------------
_config: ChildConfig | None = None
_original_bootstrap: Callable | None = None
_original_preparation: Callable | None = None


def _child_meta(config: ChildConfig, report_path: str, process) -> dict:
    from syncscope.report.host import run_metadata

    meta = run_metadata(device=config.device, gpu=None, target="", args=[], module=False, root=config.root)
    meta.update(
        command=list(sys.argv),
        # The process that started this one (under forkserver, not the server that forked it).
        parent_pid=getattr(process, "_parent_pid", None) or os.getppid(),
        process_name=process.name,
        report_path=report_path,
    )
    return meta


class _ChildReport:
    """Writes a child's report exactly once: at the end of its target, or on SIGTERM."""

    def __init__(self, config: ChildConfig, recorder, process):
        self.config = config
        self.recorder = recorder
        self.process = process
        self.path = report_path_for(config.report_path, rank=env_rank())
        self.written = False
        self.writing = False
        self.terminate_after = False

    def write(self, end) -> None:
        """`end`: the child's `RunEnd` (report/status.py)."""
        if self.written or self.writing:
            return
        self.writing = True  # first: a SIGTERM from here on waits for the write to finish
        try:
            from syncscope.report.write import write_report
            from syncscope.runtime import hook_errors

            meta = _child_meta(self.config, self.path, self.process)
            meta.update(end.to_meta())
            meta.update(getattr(self.recorder, "report_meta", dict)())  # monitor mode: marked sampled
            write_report(self.path, self.recorder.events, meta, errors=hook_errors.snapshot())
        finally:
            self.writing = False
            self.written = True
        if self.terminate_after:
            die_of_signal(signal.SIGTERM)

    def on_sigterm(self, signum, frame) -> None:
        # Pool.terminate() ends idle workers with SIGTERM, often just as they finish on their
        # own: keep their syncs (finishing a write in progress first), then die of the signal
        # as the process would have without us.
        if self.writing:
            self.terminate_after = True
            return
        try:
            self.write(status.killed_by(signal.SIGTERM))
        finally:
            die_of_signal(signal.SIGTERM)

    def on_stuck(self, signum: int) -> None:
        """The backstop's way (runtime/signal_backstop.py): the main thread never got to
        `on_sigterm` (an idle Pool worker blocked on the inqueue's lock as the signal came)."""
        try:
            if not self.writing:
                self.write(status.killed_by(signum))
        finally:
            die_of_signal(signum)


def _run_child(process, original: Callable, args, kwargs):
    config = _config
    from syncscope.runtime import trap as trap_module

    inherited = trap_module.active()
    if inherited is not None:
        # Forked: the parent's trap came along, with a copy of the parent's events so far.
        # Those are the parent's to report; keeping them here would count them twice.
        del inherited.recorder.events[:]
        return _run_recorded(process, original, args, kwargs, config, inherited.recorder)
    trap_factory = config.child_trap or trap_module.trap
    from syncscope.runtime import regions

    with trap_factory(
        config.device,
        config.policy,
        allow=config.allow,
        module_forward=config.module_forward,
        root=config.root or None,
    ) as t:
        # As `syncscope run` does in the parent: a scope on the `-m` target waits for its class
        # (spawned children re-run it as `__mp_main__`) instead of importing it a second time.
        undo_scopes = regions.apply_scopes(config.scope, False, main_module=config.main_module)
        try:
            return _run_recorded(process, original, args, kwargs, config, t.recorder)
        finally:
            for undo in reversed(undo_scopes):
                undo()
            from syncscope.runtime.class_scopes import take_unmatched

            for problem in take_unmatched():  # the parent's run decides; a child only says so
                print(f"syncscope: warning: {problem}", file=sys.stderr)


def _run_recorded(process, original, args, kwargs, config, recorder):
    import datetime  # noqa: F401  (run_metadata's, imported now, not in a signal handler at exit)

    import syncscope.report.write  # noqa: F401  (likewise)

    report = _ChildReport(config, recorder, process)
    # Ours stays installed to the end: a SIGTERM handler inherited from a parent `syncscope run`
    # would raise in the middle of writing the report.
    signal_backstop.install(signal.SIGTERM, report.on_sigterm, on_stuck=report.on_stuck)
    # A target that leaves through os._exit (runtime/keeper.py) writes its report on the way.
    undo_exit_hook = at_os_exit(lambda code: report.write(status.os_exit(code)))
    exit_code = None
    try:
        exit_code = original(process, *args, **kwargs)
        return exit_code
    finally:
        # `exit_code` is still None when the target raised something `_bootstrap` did not catch
        report.write(status.ended("ok" if exit_code == 0 else "exit", exit_code))
        undo_exit_hook()


def _bootstrap(self, *args, **kwargs):
    """Replaces `BaseProcess._bootstrap` (runs in the child, around the process's target)."""
    if _config is None or _original_bootstrap is None:
        return (_original_bootstrap or type(self)._bootstrap)(self, *args, **kwargs)
    return _run_child(self, _original_bootstrap, args, kwargs)


class _Stowaway:
    """Travels in a spawned child's preparation data; unpickling it starts following there."""

    def __init__(self, config: ChildConfig):
        self.config = config

    def __reduce__(self):
        return (_arrive, (self.config,))


def _arrive(config: ChildConfig) -> None:
    follow_children(config)


def _preparation_data(name):
    data = _original_preparation(name)
    if _config is not None:
        data["syncscope"] = _Stowaway(_config)  # spawn.prepare() ignores keys it does not know
    return data


def follow_children(config: ChildConfig) -> Callable[[], None]:
    """Make every multiprocessing child of this process record its syncs and write its own
    report. Returns a function that stops following (children already started keep going)."""
    global _config, _original_bootstrap, _original_preparation
    from multiprocessing import process, spawn

    _config = config
    if _original_bootstrap is None:
        _original_bootstrap = process.BaseProcess._bootstrap
        process.BaseProcess._bootstrap = _bootstrap
    if _original_preparation is None:
        _original_preparation = spawn.get_preparation_data
        spawn.get_preparation_data = _preparation_data

    def stop() -> None:
        global _config, _original_bootstrap, _original_preparation
        _config = None
        if _original_bootstrap is not None:
            process.BaseProcess._bootstrap = _original_bootstrap
            _original_bootstrap = None
        if _original_preparation is not None:
            spawn.get_preparation_data = _original_preparation
            _original_preparation = None

    return stop


def child_reports(base: str) -> list[str]:
    """The reports children of a run with report path `base` wrote (for `syncscope combine`)."""
    import glob

    stem, ext = os.path.splitext(base)
    return sorted(glob.glob(f"{glob.escape(stem)}.*{ext or '.json'}"))
