"""`syncscope oracle`: time each line of the scoped functions behind queued GPU work."""

from __future__ import annotations

from typing import List, Optional

import typer

DEFAULT_REPORT = "syncscope-oracle.json"


def _fail(message: str, code: int = 2) -> None:
    from syncscope.terminal import safe_text

    typer.echo(f"syncscope oracle: error: {safe_text(message)}", err=True)
    raise typer.Exit(code)


def execute(
    target: str,
    args: list[str],
    *,
    module: bool,
    scope: list[str],
    repeat: int,
    warmup: int,
    calls: int,
    skip: int,
    sleep_ms: float,
    blocked_at: float,
    free_below: float,
    tracer: str,
    compare_path: Optional[str],
    report_path: str,
    show_source: bool,
) -> None:
    import os
    import sys

    from syncscope.oracle import cuda as oracle_cuda
    from syncscope.oracle import render
    from syncscope.oracle.api import start_session
    from syncscope.oracle.compare import compare
    from syncscope.oracle.report import line_events, oracle_section
    from syncscope.oracle.scopes import Scopes
    from syncscope.oracle.timing import CalibrationError, recheck
    from syncscope.oracle.verdict import Thresholds, analyse
    from syncscope.report.host import run_metadata
    from syncscope.report.schema import ReportError, load_report
    from syncscope.report.write import write_report
    from syncscope.runtime import runner

    if not scope:
        _fail("name the functions to time with --scope package.module:function (one or more); "
              "tracing every line of a whole program would take forever")
    try:
        thresholds = Thresholds(blocked_at, free_below)
    except ValueError as exc:
        _fail(str(exc))
    hook = None
    if compare_path:
        try:
            hook = load_report(compare_path)
        except ReportError as exc:
            _fail(f"--compare: {exc}")
    root = os.getcwd()
    report_path = os.path.abspath(report_path)
    try:
        gpu = oracle_cuda.CudaGpu()  # raises OracleUnavailable, with the reason, when no GPU is usable
        session = start_session(gpu=gpu, sleep_ns=int(sleep_ms * 1e6), repeat=repeat, warmup=warmup, calls=calls, skip=skip, tracer=tracer)
    except oracle_cuda.OracleUnavailable as exc:
        _fail(str(exc))
    except (CalibrationError, ValueError) as exc:
        _fail(str(exc))

    try:
        scopes = Scopes(list(scope), session.wrap, target=target, module=module)
        scopes.apply()
    except (ImportError, AttributeError, ValueError) as exc:
        _fail(f"--scope: {exc}")
    outcome = None
    try:
        outcome = runner.run_target(target, args, module=module)
    except runner.TargetNotFound as exc:
        _fail(str(exc))
    finally:
        scopes.restore()
        calibration = session.calibration.to_json()
        if session.samples:
            try:
                calibration["after_ns"] = recheck(session.gpu, session.clock, session.calibration)
            except Exception as exc:  # the program may have left the device unusable
                calibration["after_error"] = f"{type(exc).__name__}: {exc}"
        results = analyse(session.samples, thresholds)
        wall_ns = sum(s.wall_ns for s in session.samples)
        line_hits = sum(p.line_hits for s in session.samples for p in s.queued + s.idle)
        section = oracle_section(
            results,
            root,
            calibration=calibration,
            thresholds=thresholds,
            settings={
                "scopes": list(scope),
                "repeat": repeat,
                "warmup": warmup,
                "calls": calls,
                "skip": skip,
                "tracer": session.timer.name,
                "low_water": session.low_water,
            },
            cost={
                "measured_calls": len(session.samples),
                "wall_s": wall_ns / 1e9,
                "line_hits": line_hits,
                "us_per_line_hit": (wall_ns / 1e3 / line_hits) if line_hits else None,
                "fresh_sleeps": session.fresh_sleeps,
            },
        )
        meta = run_metadata(device="cuda", gpu=gpu.device, target=target, args=args, module=module, root=root, mode="oracle")
        if outcome is not None:
            from syncscope.report.status import from_outcome

            meta.update(from_outcome(outcome).to_meta())
        meta["report_path"] = report_path
        comparison = None
        if hook is not None:
            comparison = compare(section["lines"], root, hook)
            section["compare"] = {"report": os.path.abspath(compare_path), **comparison.to_json()}
        report = write_report(report_path, line_events(results, root), {**meta, "oracle": section})

    for text in scopes.never_defined():
        typer.echo(f"syncscope oracle: warning: --scope {text} was never defined by the program", err=True)
    for text in scopes.watcher.errors:
        typer.echo(f"syncscope oracle: warning: {text}", err=True)
    if not session.samples:
        typer.echo("syncscope oracle: warning: no scoped function was called: nothing was timed", err=True)
    after = calibration.get("after_ns")
    if after and abs(after - session.calibration.sleep_ns) > 0.25 * session.calibration.sleep_ns:
        typer.echo(
            f"syncscope oracle: warning: the calibrated sleep took {session.calibration.sleep_ns / 1e6:.1f} ms at start "
            f"and {after / 1e6:.1f} ms after the run (the GPU clock moved): ratios are off by as much",
            err=True,
        )
    if show_source:
        render.render_source(section["lines"], root)
    render.render_summary(section, report_path)
    if comparison is not None:
        render.render_comparison(comparison, compare_path)
    sys.stderr.flush()
    runner.exit_like_python(outcome)


def show_saved(path: str, compare_path: Optional[str], show_source: bool) -> None:
    """`--from REPORT`: render a saved oracle report (and compare it) again; no GPU needed."""
    from syncscope.oracle import render
    from syncscope.oracle.compare import compare
    from syncscope.oracle.report import oracle_lines
    from syncscope.report.schema import ReportError, load_report

    try:
        saved = load_report(path)
        hook = load_report(compare_path) if compare_path else None
    except ReportError as exc:
        _fail(str(exc))
    lines = oracle_lines(saved)
    if not lines:
        _fail(f"{path}: not an oracle report (no oracle.lines); write one with syncscope oracle")
    root = saved.meta.get("project_root")
    if show_source:
        render.render_source(lines, root)
    render.render_summary(saved.meta["oracle"], path)
    if hook is not None:
        render.render_comparison(compare(lines, root, hook), compare_path)


def register(app: typer.Typer) -> None:
    @app.command(
        "oracle",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False},
    )
    def oracle(
        ctx: typer.Context,
        target: Optional[str] = typer.Argument(None, help="script.py (or, with -m, a module name)", show_default=False),
        module: bool = typer.Option(False, "-m", help="run TARGET as a module, like python -m"),
        scope: List[str] = typer.Option([], "--scope", help="package.module:function or :Class.method whose lines are timed (repeatable; __main__:fn for the script itself)"),
        repeat: int = typer.Option(3, "--repeat", help="passes per measured call; the minimum counts"),
        warmup: int = typer.Option(1, "--warmup", help="untraced calls before the passes"),
        calls: int = typer.Option(1, "--calls", help="how many calls of each scoped function to measure"),
        skip: int = typer.Option(0, "--skip", help="calls of each scoped function to let through before measuring"),
        sleep_ms: float = typer.Option(25.0, "--sleep-ms", help="GPU work queued ahead of each line (calibrated)"),
        blocked_at: float = typer.Option(0.5, "--blocked-at", help="wait / work ahead at or above which a line is blocked"),
        free_below: float = typer.Option(0.1, "--free-below", help="wait / work ahead below which a line is free"),
        tracer: str = typer.Option("auto", "--tracer", help="auto | settrace | monitoring (Python >= 3.12)"),
        compare_to: Optional[str] = typer.Option(None, "--compare", help="a syncscope run report: list hook blind spots and the reverse"),
        report: str = typer.Option(DEFAULT_REPORT, "-o", "--report", help="where to write the JSON report"),
        source: bool = typer.Option(True, "--source/--no-source", help="print the scoped functions' source with blocked lines highlighted"),
        saved: Optional[str] = typer.Option(None, "--from", help="show a saved oracle report (with --compare: compare it) instead of running; no GPU needed"),
    ) -> None:
        """Time each line of the scoped functions behind queued GPU work: finds syncs no hook sees (needs a GPU)."""
        if saved:
            if target:
                _fail("--from shows a saved report: give no program to run")
            show_saved(saved, compare_to, source)
            return
        if not target:
            _fail("nothing to run: syncscope oracle --scope mod:fn [OPTIONS] script.py [ARGS]... or -m module [ARGS]...")
        execute(
            target,
            list(ctx.args),
            module=module,
            scope=list(scope),
            repeat=repeat,
            warmup=warmup,
            calls=calls,
            skip=skip,
            sleep_ms=sleep_ms,
            blocked_at=blocked_at,
            free_below=free_below,
            tracer=tracer,
            compare_path=compare_to,
            report_path=report,
            show_source=source,
        )
