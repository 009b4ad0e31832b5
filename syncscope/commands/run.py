"""`syncscope run` and `syncscope report`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import typer

DEFAULT_REPORT = "syncscope-report.json"
DEFAULT_HTML = "syncscope-report.html"


def _fail(message: str, code: int = 2) -> None:
    from syncscope.terminal import safe_text  # paths and messages may carry control characters

    typer.echo(f"syncscope: error: {safe_text(message)}", err=True)
    raise typer.Exit(code)


@dataclass(frozen=True)
class BubbleOptions:
    """`--bubbles` (issue 11, runtime/bubble_window.py): the profiled window of the run."""

    steps: int = 20  # top-level regions profiled, after `warmup`
    warmup: int = 3
    seconds: float = 10.0  # the window's length in a program without regions

    def trap_args(self) -> dict:
        return dict(bubbles=True, bubble_steps=self.steps, bubble_warmup=self.warmup, bubble_seconds=self.seconds)


@dataclass(frozen=True)
class RunOptions:
    """What `syncscope run` was asked: the program, the trap's settings and the report's."""

    target: str
    args: tuple[str, ...] = ()
    module: bool = False  # -m: `target` is a module
    device: str = "auto"
    policy: str = "record"
    report_path: str = DEFAULT_REPORT
    scope: tuple[str, ...] = ()
    module_forward: bool = False
    allow: tuple[str, ...] = ()  # --allow values, next to the config file's rules
    show_table: bool = True
    bubbles: BubbleOptions | None = None
    monitor: object = None  # monitoring/session.py's MonitorOptions under --monitor

    def command(self, root: str) -> dict:
        """The report's record of the command (report/host.py's `run_metadata` arguments)."""
        return dict(target=self.target, args=list(self.args), module=self.module, root=root)


def execute(options: RunOptions) -> None:
    import os
    import sys

    from syncscope.render import console
    from syncscope.runtime import config, multiprocess, regions, runner, scope_check
    from syncscope.runtime.policy import Policy
    from syncscope.runtime.trap import DeviceUnavailable, resolve_device, trap

    o = options
    root = os.getcwd()
    base_report = os.path.abspath(o.report_path)
    report_path = multiprocess.process_report_path(base_report)
    # Until the program starts, every error is a run that never started: its report says so
    # (over any older report, which a gate would otherwise read as this run's; issue 28).
    not_started = _NotStarted(report_path, **o.command(root))
    if o.policy not in {p.value for p in Policy}:
        not_started.fail(f"--policy {o.policy!r}: choose record, warn or error")
    try:
        allow_rules = config.load_allow_rules(root) + tuple(config.parse_allow_option(a) for a in o.allow)
        resolved = resolve_device(o.device)
    except (config.ConfigError, DeviceUnavailable, ValueError) as exc:
        not_started.fail(str(exc))
    not_started.device = resolved
    if o.bubbles is not None:  # issue 11: GPU idle time per sync site (runtime/bubble_window.py)
        from syncscope.runtime.bubble_window import BubblesUnavailable, check_available

        if o.bubbles.steps < 1 or o.bubbles.warmup < 0 or o.bubbles.seconds <= 0:
            not_started.fail("--bubble-steps must be >= 1, --bubble-warmup >= 0 and --bubble-seconds > 0")
        try:
            check_available(resolved)
        except BubblesUnavailable as exc:
            not_started.fail(str(exc))
    if o.monitor is not None and o.bubbles is not None:
        not_started.fail("--monitor and --bubbles cannot be combined (the bubble window profiles every step)")
    # Monitor mode (issue 12, syncscope/monitoring): checked and serving before the program starts.
    session = None
    if o.monitor is not None:
        from syncscope.monitoring import session as monitor_session

        try:
            session = monitor_session.start(o.monitor)
        except monitor_session.MonitorError as exc:
            not_started.fail(str(exc))
    main_module = o.target if o.module else None
    # Child processes and torchrun ranks (issue 6, syncscope/runtime/multiprocess.py): each rank gets a
    # report name of its own, and multiprocessing children write reports of their own.
    children = multiprocess.ChildConfig(
        base_report, resolved, o.policy, root, tuple(allow_rules), o.scope, o.module_forward,
        child_trap=session.child_options().child_trap if session else None, main_module=main_module,
    )

    outcome = None
    with (
        session.trap(resolved, o.policy, allow=allow_rules, root=root)
        if session
        else trap(resolved, o.policy, allow=allow_rules, root=root, **(o.bubbles.trap_args() if o.bubbles else {}))
    ) as t:
        try:
            # Inside the trap: finding a `-m` module imports its parent packages, and a scope's
            # module is imported here, as the program would import them.
            runner.check_target(o.target, o.module)
            scope_check.check_scopes(o.scope, target=o.target, module=o.module)
            undo = regions.apply_scopes(o.scope, o.module_forward, main_module=main_module)
        except runner.TargetNotFound as exc:
            not_started.fail(str(exc), session=session)
        except (ImportError, AttributeError, ValueError) as exc:
            message = str(exc) if isinstance(exc, scope_check.ScopeError) else f"--scope: {exc}"
            not_started.fail(message, session=session)
        stop_following = multiprocess.follow_children(children)
        # The report is kept on disk while the program runs and written on every way out
        # (runtime/keeper.py, docs/reliability.md).
        run_report = _RunReport(t, resolved, report_path, o.show_table, session, **o.command(root))
        keeper = run_report.start_keeper()
        try:
            outcome = runner.run_target(o.target, list(o.args), module=o.module, on_sigterm_now=keeper.fatal_signal)
        finally:
            keeper.stop()
            stop_following()
            for fn in reversed(undo):
                fn()
            # Written even when the program raised, exited or was interrupted. No sync of this run
            # is known to be in scope when a scope matched nothing: the run failed (issue 28).
            unmatched = _unmatched_scopes()
            keeper.finish_outcome(outcome, scope_error=unmatched[0] if unmatched else None)
            report = run_report.report
    if session is not None:
        session.finish()  # waits for the scrape that takes the last counts
    if o.show_table:
        console.render(report)
    else:
        _report_line(report)
    for problem in unmatched:
        _error_line(problem)
    sys.stderr.flush()
    if unmatched and outcome.signal is None and outcome.exit_code == 0:
        raise SystemExit(2)
    runner.exit_like_python(outcome)


def _unmatched_scopes() -> list[str]:
    from syncscope.runtime.class_scopes import take_unmatched

    return take_unmatched()


def _error_line(message: str) -> None:
    from syncscope.terminal import safe_text

    typer.echo(f"syncscope: error: {safe_text(message)}", err=True)


def _report_line(report) -> None:
    """`--no-table`: still one line saying where the report is and how the run ended."""
    from syncscope.report.status import of_report
    from syncscope.terminal import safe_text

    if report is None:
        return
    in_scope = sum(s.count for s in report.grouped()[0])
    typer.echo(f"syncscope: report {safe_text(report.meta.get('report_path', ''))}: run {of_report(report.meta).status}, "
               f"{_plural(in_scope, 'host sync')} in scope", err=True)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class _NotStarted:
    """Writes the report of a run that never started, then fails with the one-line error."""

    def __init__(self, report_path: str, **command) -> None:
        self.report_path = report_path
        self.command = command
        self.device = None

    def fail(self, message: str, session=None) -> None:
        from syncscope.report.host import run_metadata
        from syncscope.report.status import never_started
        from syncscope.report.write import write_report

        meta = run_metadata(device=self.device, gpu=None, **{**self.command, "target": self.command["target"] or ""})
        meta.update(never_started(message).to_meta())
        meta["report_path"] = self.report_path
        if session is not None:
            meta.update(session.report_meta())
        try:
            write_report(self.report_path, [], meta)
        except OSError as exc:
            message += f" (and no report: cannot write {self.report_path}: {exc.strerror or exc})"
        _fail(message)


def _monitor_options(sample, sample_by, sample_run, slice_period, port, directory, top_sites, exit_wait, addr="127.0.0.1"):
    from syncscope.monitoring.session import MonitorOptions

    return MonitorOptions(sample=sample, port=port, addr=addr, directory=directory, mode=sample_by, run_length=sample_run,
                          period_s=slice_period, top_sites=top_sites, exit_wait_s=exit_wait)


class _RunReport:
    """The report of this `syncscope run` process, as `ReportKeeper` writes it."""

    def __init__(self, t, device: str, report_path: str, show_table: bool, session=None, **command) -> None:
        self.t = t
        self.session = session  # monitor mode: the report says it was sampled
        self.device = device
        self.report_path = report_path
        self.show_table = show_table
        self.command = command
        self.report = None
        self.keeper = None

    def write(self, final) -> None:
        """`final`: None for a flush while the program runs, else its `RunEnd` (report/status.py)."""
        import sys

        from syncscope.report.host import run_metadata
        from syncscope.report.status import running
        from syncscope.report.write import write_report
        from syncscope.runtime import hook_errors

        gpu = None
        if final is not None and self.device == "cuda":
            gpu = sys.modules["torch"].cuda.get_device_name()
        meta = run_metadata(device=self.device, gpu=gpu, **self.command)
        if final is None:
            meta.update(running().to_meta())  # a flush while it runs
        else:
            if self.t.bubble_window is not None:
                self.t.bubble_window.finish()
            self.t.recorder.settle_scope()
            meta.update(final.to_meta())
        if self.session is not None:
            meta.update(self.session.report_meta())
        meta["report_path"] = self.report_path
        # the bubble window is only complete at the end
        bubbles = self.t.bubbles if final is not None else None
        report = write_report(self.report_path, self.t.events, meta, bubbles=bubbles, errors=hook_errors.snapshot())
        if final is not None:
            self.report = report

    def show(self) -> None:
        """After the final write on a way out the caller never sees (a fatal signal, os._exit):
        the table (or the one report line), on stderr, flushed now."""
        import sys

        from syncscope.render import console

        if self.show_table and self.report is not None:
            console.render(self.report)
        elif self.report is not None:
            _report_line(self.report)
        sys.stderr.flush()  # not stdout: plain python's os._exit or signal death drops its buffer

    def start_keeper(self):
        import syncscope.report.write  # noqa: F401  (imported here, not first in the keeper's flush thread)
        from syncscope.runtime.keeper import ReportKeeper

        self.keeper = ReportKeeper(self.write, lambda: len(self.t.events), on_final=self.show)
        self.t.recorder.on_event = self.keeper.on_event
        self.keeper.start()
        return self.keeper


def register(app: typer.Typer) -> None:
    @app.command(
        "run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False},
    )
    def run(
        ctx: typer.Context,
        target: Optional[str] = typer.Argument(None, help="script.py (or, with -m, a module name)", show_default=False),
        module: bool = typer.Option(False, "-m", help="run TARGET as a module, like python -m"),
        device: str = typer.Option("auto", "--device", help="cuda | sim | auto (cuda when a GPU is present)"),
        policy: str = typer.Option("record", "--policy", help="record | warn | error"),
        report: str = typer.Option(DEFAULT_REPORT, "-o", "--report", help="where to write the JSON report"),
        scope: List[str] = typer.Option([], "--scope", help="package.module:Class.method (or __main__:Class.method, file.py:Class.method) whose calls are in scope"),
        module_forward: bool = typer.Option(False, "--module-forward", help="every nn.Module forward is in scope"),
        allow: List[str] = typer.Option([], "--allow", help="allow syncs at PATH[:LINE][@KIND] (still reported)"),
        table: bool = typer.Option(True, "--table/--no-table", help="print the table of sites"),
        bubbles: bool = typer.Option(False, "--bubbles", help="GPU only: profile a window and attribute GPU idle time to sync sites"),
        bubble_steps: int = typer.Option(20, "--bubble-steps", help="top-level regions to profile (after --bubble-warmup)"),
        bubble_warmup: int = typer.Option(3, "--bubble-warmup", help="top-level regions skipped before the window"),
        bubble_seconds: float = typer.Option(10.0, "--bubble-seconds", help="window length in a program without regions"),
        monitor: bool = typer.Option(False, "--monitor", help="sampled trapping with Prometheus metrics (docs/monitor.md)"),
        sample: float = typer.Option(0.01, "--sample", help="--monitor: fraction of regions (or of time) trapped, in (0, 1]"),
        sample_by: str = typer.Option("auto", "--sample-by", help="--monitor: auto (time slices until the first region, then regions) | region | time"),
        sample_run: int = typer.Option(8, "--sample-run", help="--monitor: sampled regions come in runs of this many in a row (arming paid once per run); 1: each on its own"),
        slice_period: float = typer.Option(1.0, "--slice-period", help="--monitor: seconds per time-slice period (auto, time); how often region counts reach the metrics (region)"),
        metrics_port: int = typer.Option(9400, "--metrics-port", help="--monitor: port of the /metrics endpoint"),
        metrics_addr: str = typer.Option("127.0.0.1", "--metrics-addr", help="--monitor: interface of the /metrics endpoint (default loopback; 0.0.0.0 for every interface: docs/monitor.md)"),
        metrics_dir: Optional[str] = typer.Option(None, "--metrics-dir", help="--monitor: prometheus_client multiprocess dir"),
        top_sites: int = typer.Option(50, "--top-sites", help="--monitor: sites with labels of their own; the rest are site=other"),
        metrics_exit_wait: float = typer.Option(30.0, "--metrics-exit-wait", help="--monitor: seconds to wait at exit for a last scrape"),
    ) -> None:
        """Run a program (script.py args... or -m module args...) and report its host syncs."""
        if not target:
            import os

            _NotStarted(os.path.abspath(report), target="", args=[], module=module, root=os.getcwd()).fail(
                "nothing to run: syncscope run [OPTIONS] script.py [ARGS]... or -m module [ARGS]...")
        execute(RunOptions(
            target,
            tuple(ctx.args),
            module=module,
            device=device,
            policy=policy,
            report_path=report,
            scope=tuple(scope),
            module_forward=module_forward,
            allow=tuple(allow),
            show_table=table,
            bubbles=BubbleOptions(bubble_steps, bubble_warmup, bubble_seconds) if bubbles else None,
            monitor=_monitor_options(sample, sample_by, sample_run, slice_period, metrics_port, metrics_dir, top_sites, metrics_exit_wait, metrics_addr)
            if monitor
            else None,
        ))

    @app.command("report")
    def report_command(
        path: str = typer.Argument(..., help="a JSON report written by syncscope run"),
        format: str = typer.Option("table", "--format", help="table | json"),
        html: bool = typer.Option(False, "--html", help="write one self-contained HTML page (sites, source heat, timeline)"),
        output: Optional[str] = typer.Option(None, "-o", "--output", help=f"with --html: the page to write (default {DEFAULT_HTML}; - for stdout)"),
        lint: Optional[str] = typer.Option(None, "--lint", metavar="LINT.json", help="with --html: overlay `syncscope lint --output-format json` findings"),
        compare: Optional[str] = typer.Option(None, "--compare", metavar="BEFORE.json", help="with --html: what changed since this earlier report"),
    ) -> None:
        """Render a saved report again (a table, JSON, or with --html a page to open in a browser)."""
        import json
        import sys

        from syncscope.render import console
        from syncscope.report.schema import ReportError, load_report

        if html or output or lint or compare:
            if not html:
                _fail("-o, --lint and --compare go with --html")
            if format != "table":
                _fail("--html writes a page; leave out --format")
            write_html_page(path, output or DEFAULT_HTML, lint=lint, compare=compare)
            return
        if format not in ("table", "json"):
            _fail(f"--format {format!r}: choose table or json")
        try:
            loaded = load_report(path)
        except ReportError as exc:
            _fail(str(exc))
        if format == "json":
            json.dump(loaded.to_json(), sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            console.render(loaded, file=sys.stdout)


def write_html_page(path: str, output: str, *, lint: str | None, compare: str | None) -> None:
    """`syncscope report PATH --html`: the page, written atomically (or to stdout for `-`)."""
    import sys

    from syncscope.render import html
    from syncscope.report.schema import ReportError

    try:
        loaded = html.load(path)
        before = html.load(compare) if compare else None
        findings = html.load_lint(lint) if lint else None
    except (ReportError, html.HtmlInputError) as exc:
        _fail(str(exc))
    page = html.render(loaded, lint=findings, lint_path=lint, before=before)
    if output == "-":
        sys.stdout.write(page)
        return
    try:
        html.write_text_atomic(output, page)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
    from syncscope.terminal import safe_text

    typer.echo(f"syncscope: wrote {safe_text(output)} ({len(page.encode('utf-8')) // 1024} KiB, {len(loaded.report.sites)} sites)", err=True)
