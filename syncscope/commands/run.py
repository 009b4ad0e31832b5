"""`syncscope run` and `syncscope report`."""

from __future__ import annotations

from typing import List, Optional

import typer

DEFAULT_REPORT = "syncscope-report.json"
DEFAULT_HTML = "syncscope-report.html"


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"syncscope: error: {message}", err=True)
    raise typer.Exit(code)


def execute(
    target: str,
    args: list[str],
    *,
    module: bool,
    device: str,
    policy: str,
    report_path: str,
    scope: list[str],
    module_forward: bool,
    allow: list[str],
    show_table: bool,
    bubbles: bool = False,
    bubble_steps: int = 20,
    bubble_warmup: int = 3,
    bubble_seconds: float = 10.0,
) -> None:
    import os
    import sys

    from syncscope.report import console
    from syncscope.report.model import build_report, run_metadata, write_json_atomic
    from syncscope.runtime import config, regions, runner
    from syncscope.runtime.policy import Policy
    from syncscope.runtime.trap import DeviceUnavailable, resolve_device, trap

    if policy not in {p.value for p in Policy}:
        _fail(f"--policy {policy!r}: choose record, warn or error")
    root = os.getcwd()
    try:
        allow_rules = config.load_allow_rules(root) + tuple(config.parse_allow_option(a) for a in allow)
        resolved = resolve_device(device)
    except (config.ConfigError, DeviceUnavailable, ValueError) as exc:
        _fail(str(exc))
    if bubbles:  # issue 11: GPU idle time per sync site (runtime/bubble_window.py)
        from syncscope.runtime.bubble_window import BubblesUnavailable, check_available

        if bubble_steps < 1 or bubble_warmup < 0 or bubble_seconds <= 0:
            _fail("--bubble-steps must be >= 1, --bubble-warmup >= 0 and --bubble-seconds > 0")
        try:
            check_available(resolved)
        except BubblesUnavailable as exc:
            _fail(str(exc))
    # Child processes and torchrun ranks (issue 6, syncscope/multiprocess.py): each rank gets a
    # report name of its own, and multiprocessing children write reports of their own.
    from syncscope import multiprocess

    children = multiprocess.ChildConfig(
        os.path.abspath(report_path), resolved, policy, root, tuple(allow_rules), tuple(scope), module_forward
    )
    report_path = multiprocess.process_report_path(os.path.abspath(report_path))

    outcome = None
    bubble_options = dict(bubbles=bubbles, bubble_steps=bubble_steps, bubble_warmup=bubble_warmup, bubble_seconds=bubble_seconds)
    with trap(resolved, policy, allow=allow_rules, root=root, **bubble_options) as t:
        try:
            undo = regions.apply_scopes(scope, module_forward, main_module=target if module else None)
        except (ImportError, AttributeError, ValueError) as exc:
            _fail(f"--scope: {exc}")
        stop_following = multiprocess.follow_children(children)
        try:
            outcome = runner.run_target(target, args, module=module)
        except runner.TargetNotFound as exc:
            _fail(str(exc))
        finally:
            stop_following()
            for fn in reversed(undo):
                fn()
            # Written even when the program raised, exited or was interrupted.
            gpu = sys.modules["torch"].cuda.get_device_name() if resolved == "cuda" else None
            meta = run_metadata(device=resolved, gpu=gpu, target=target, args=args, module=module, root=root)
            if outcome is not None:
                meta.update(exit_code=outcome.exit_code, status=outcome.status, error=outcome.error)
            meta["report_path"] = report_path
            if t.bubble_window is not None:
                t.bubble_window.finish()
            t.recorder.settle_scope()
            report = build_report(list(t.events), meta, bubbles=t.bubbles)
            write_json_atomic(report_path, report.to_json())
    if show_table:
        console.render(report)
    sys.stderr.flush()
    runner.exit_like_python(outcome)


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
    ) -> None:
        """Run a program (script.py args... or -m module args...) and report its host syncs."""
        if not target:
            _fail("nothing to run: syncscope run [OPTIONS] script.py [ARGS]... or -m module [ARGS]...")
        execute(
            target,
            list(ctx.args),
            module=module,
            device=device,
            policy=policy,
            report_path=report,
            scope=list(scope),
            module_forward=module_forward,
            allow=list(allow),
            show_table=table,
            bubbles=bubbles,
            bubble_steps=bubble_steps,
            bubble_warmup=bubble_warmup,
            bubble_seconds=bubble_seconds,
        )

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

        from syncscope.report import console
        from syncscope.report.model import ReportError, load_report

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

    from syncscope.report import html
    from syncscope.report.model import ReportError

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
        html.write_atomic(output, page)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror or exc}")
    typer.echo(f"syncscope: wrote {output} ({len(page.encode('utf-8')) // 1024} KiB, {len(loaded.report.sites)} sites)", err=True)
