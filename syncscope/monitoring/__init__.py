"""Monitor mode: sampled trapping with Prometheus metrics, cheap enough to leave on in serving.

`syncscope run --monitor ...` from the command line, or from Python:

    import syncscope
    mon = syncscope.monitor(sample=0.01, port=9400)   # arms itself now; workers started after it are followed
    ...                                             # serve
    mon.stop()                                      # or `with syncscope.monitor(...):`

See docs/monitor.md.
"""

from __future__ import annotations

import atexit
import os

from syncscope.monitoring.session import DEFAULT_ADDR, DEFAULT_PORT, DEFAULT_SAMPLE, DEFAULT_SAMPLE_RUN, MonitorError, MonitorOptions

__all__ = ["Monitor", "MonitorError", "MonitorOptions", "monitor"]


class Monitor:
    """A running monitor in this process (and the children it follows)."""

    def __init__(self, options: MonitorOptions, *, device: str, report: str | None, scope, module_forward: bool, root: str):
        from syncscope.runtime import multiprocess
        from syncscope.monitoring import session as monitor_session
        from syncscope.runtime.trap import resolve_device

        self.device = resolve_device(device)
        self.root = root
        self.report_path = os.path.abspath(report) if report else None
        self.session = monitor_session.start(options)
        self._trap_cm = self.session.trap(self.device, "record", scope=scope, module_forward=module_forward, root=root)
        self.trap = self._trap_cm.__enter__()
        self._stop_following = None
        if self.report_path:
            children = multiprocess.ChildConfig(
                self.report_path, self.device, "record", root, (), tuple(scope), module_forward,
                child_trap=self.session.child_options().child_trap,
            )
            self._stop_following = multiprocess.follow_children(children)
        self.stopped = False
        atexit.register(self.stop)

    @property
    def directory(self) -> str:
        return self.session.directory

    def stop(self) -> None:
        """Stop trapping, write the JSON report (marked sampled), wait for a last scrape."""
        if self.stopped:
            return
        self.stopped = True
        if self._stop_following is not None:
            self._stop_following()
        self._trap_cm.__exit__(None, None, None)
        if self.report_path:
            from syncscope.report.host import run_metadata
            from syncscope.report.write import write_report

            meta = run_metadata(device=self.device, gpu=None, target="", args=[], module=False, root=self.root)
            meta.update(self.session.report_meta(), report_path=self.report_path)
            write_report(self.report_path, self.trap.events, meta)
        self.session.finish()

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def monitor(
    sample: float = DEFAULT_SAMPLE,
    port: int | None = DEFAULT_PORT,
    *,
    addr: str = DEFAULT_ADDR,
    sample_by: str = "auto",
    sample_run: int = DEFAULT_SAMPLE_RUN,
    period_s: float = 1.0,
    top_sites: int = 50,
    directory: str | None = None,
    device: str = "auto",
    report: str | None = None,
    scope=(),
    module_forward: bool = False,
    exit_wait_s: float = 0.0,
    seed: int | None = None,
) -> Monitor:
    """Start monitoring now. Raises `MonitorError` on bad options, a taken port or an unwritable
    directory. `port=None` serves nothing (another process serves the directory)."""
    options = MonitorOptions(sample=sample, port=port, addr=addr, directory=directory, mode=sample_by, run_length=sample_run, period_s=period_s,
                             top_sites=top_sites, exit_wait_s=exit_wait_s, seed=seed)
    return Monitor(options, device=device, report=report, scope=scope, module_forward=module_forward, root=os.getcwd())
