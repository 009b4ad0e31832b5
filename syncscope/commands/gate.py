"""`syncscope baseline create`, `syncscope gate`, `syncscope combine`, `syncscope export`.

Exit codes: 0 passed, 1 new sites (or over a budget), 2 bad input or usage. A failed run never
touches the baseline file.
"""

from __future__ import annotations

from typing import List, Optional

import typer


def _fail(message: str, code: int = 2) -> None:
    from syncscope.terminal import safe_text  # paths and messages may carry control characters

    typer.echo(f"syncscope: error: {safe_text(message)}", err=True)
    raise typer.Exit(code)


def _cannot_write(path: str, exc: OSError) -> None:
    _fail(f"cannot write {path}: {exc.strerror or exc}")


def _write_text(path: str, text: str) -> None:
    """`-` is stdout; `$GITHUB_STEP_SUMMARY` is appended to, as GitHub expects."""
    import os
    import sys

    if path == "-":
        sys.stdout.write(text)
        return
    mode = "a" if path == os.environ.get("GITHUB_STEP_SUMMARY") else "w"
    try:
        with open(path, mode, encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        _cannot_write(path, exc)


def _check_complete(observation, allow_incomplete: bool, what: str) -> None:
    """Fail closed (issue 28): a run that did not complete saw only part of what it would have,
    so a gate on it could pass, and a baseline from it forget, syncs it never reached."""
    from syncscope.report.status import describe
    from syncscope.terminal import safe_text

    if observation.complete:
        return
    said = f"{observation.path}: the run {describe(observation.end)}"
    if not allow_incomplete:
        _fail(f"{said}; refusing to {what} (rerun it, or pass --allow-incomplete to use the syncs it saw)")
    typer.echo(f"syncscope: warning: {safe_text(said)}; using the syncs it saw (--allow-incomplete)", err=True)


def register(app: typer.Typer) -> None:
    baseline_app = typer.Typer(help="Accepted sync sites: create a baseline for `syncscope gate`.", no_args_is_help=True)
    app.add_typer(baseline_app, name="baseline")

    @baseline_app.command("create")
    def baseline_create(
        source: str = typer.Argument(..., help="a runtime report (syncscope run) or lint JSON output (syncscope lint --output-format json)"),
        output: str = typer.Option("syncscope-baseline.json", "-o", "--output", help="baseline file to write"),
        budget: Optional[float] = typer.Option(
            None, "--budget", help="also record a per-step budget: current syncs per step times this factor (runtime reports)"
        ),
        steps: Optional[int] = typer.Option(None, "--steps", min=1, help="steps the run made (for --budget)"),
        force: bool = typer.Option(False, "--force", help="overwrite an existing baseline"),
        allow_incomplete: bool = typer.Option(False, "--allow-incomplete", help="accept a report whose run did not complete (failed, killed, never started)"),
    ) -> None:
        """Accept every in-scope site of SOURCE: later gates fail only on sites not in it."""
        import os

        from syncscope.ci import baseline as bl

        if os.path.exists(output) and not force:
            _fail(f"{output} exists; pass --force to replace it, or `syncscope gate --update` to shrink it")
        try:
            observation = bl.load_observation(source)
            _check_complete(observation, allow_incomplete, "create a baseline from it")
            created = bl.create(observation, budget_slack=budget, steps=steps)
        except bl.InputError as exc:
            _fail(str(exc))
        try:
            bl.save_baseline(created, output)
        except OSError as exc:
            _cannot_write(output, exc)
        from syncscope.terminal import safe_text

        typer.echo(f"syncscope: baseline {safe_text(output)}: {len(created.entries)} {observation.origin} site(s) from {safe_text(source)}")

    @app.command("gate")
    def gate_command(
        report: str = typer.Argument(..., help="a runtime report or lint JSON output"),
        baseline: str = typer.Option(..., "--baseline", "-b", help="baseline file (syncscope baseline create)"),
        update: bool = typer.Option(False, "--update", help="drop baseline sites no longer seen (never adds; only when the gate passes)"),
        steps: Optional[int] = typer.Option(None, "--steps", min=1, help="steps the run made, for per-step budgets"),
        markdown: Optional[str] = typer.Option(None, "--markdown", help="also write a Markdown summary here (- for stdout)"),
        github: bool = typer.Option(False, "--github", help="also print GitHub workflow annotations for the new sites"),
        allow_incomplete: bool = typer.Option(False, "--allow-incomplete", help="gate a report whose run did not complete (failed, killed, never started); --update then never shrinks the baseline"),
    ) -> None:
        """Exit 1 when REPORT has a sync site the baseline does not accept, else 0."""
        from syncscope.ci import baseline as bl
        from syncscope.ci import gate

        try:
            accepted = bl.load_baseline(baseline)
            observation = bl.load_observation(report)
            _check_complete(observation, allow_incomplete, "gate it")
            result = gate.check(observation, accepted, steps=steps)
        except bl.InputError as exc:
            _fail(str(exc))
        from syncscope.terminal import safe_text

        typer.echo(safe_text(gate.render_text(result, observation, baseline), multiline=True), err=not result.passed)
        if markdown:
            from syncscope.render import markdown as md

            _write_text(markdown, md.render_gate(result, observation, baseline))
        if github:
            import sys

            from syncscope.render.github import write_github  # the linter's writer, generic over sites

            write_github(result.new, sys.stdout)
        if update:
            if not result.passed:
                typer.echo(f"syncscope gate: {safe_text(baseline)} left unchanged (the gate failed; --update only shrinks a passing baseline)", err=True)
            elif result.fixed and not observation.complete:
                typer.echo(f"syncscope gate: {safe_text(baseline)} left unchanged (the run did not complete: a site it did not "
                           "reach is not fixed; --update only shrinks from a completed run)", err=True)
            elif result.fixed:
                try:
                    bl.save_baseline(bl.shrink(accepted, (o.fingerprint for o in observation.sites)), baseline)
                except OSError as exc:
                    _cannot_write(baseline, exc)
                typer.echo(f"syncscope gate: {safe_text(baseline)}: dropped {len(result.fixed)} fixed site(s)")
        raise typer.Exit(result.exit_code)

    @app.command("combine")
    def combine_command(
        reports: List[str] = typer.Argument(None, help="report files or directories (default: syncscope-report*.json here)"),
        output: str = typer.Option("syncscope-combined.json", "-o", "--output", help="merged report to write"),
    ) -> None:
        """Merge the reports of several processes (workers, torchrun ranks) into one."""
        from syncscope.ci import combine

        try:
            paths = combine.discover(list(reports or []), output)
            data = combine.combine_files(paths, output)
        except combine.CombineError as exc:
            _fail(str(exc))
        except OSError as exc:
            _cannot_write(output, exc)
        from syncscope.terminal import safe_text

        summary = data["summary"]
        typer.echo(
            f"syncscope: combined {len(paths)} report(s) from {len(data['combined_from'])} process(es) into {safe_text(output)}: "
            f"{summary['events']} events at {summary['sites']} sites"
        )

    @app.command("export")
    def export_command(
        report: str = typer.Argument(..., help="a runtime report (or a combined one)"),
        format: str = typer.Option(..., "--format", "-f", help="markdown | perfetto | sarif | github"),
        output: str = typer.Option("-", "-o", "--output", help="file to write (- for stdout)"),
    ) -> None:
        """Write a runtime report in another format (Markdown summary, Perfetto trace, SARIF, GitHub annotations)."""
        if format not in ("markdown", "perfetto", "sarif", "github"):
            _fail(f"--format {format!r}: choose markdown, perfetto, sarif or github")
        if format in ("sarif", "github"):
            _write_text(output, _export_shared(report, format))
            return
        import json

        from syncscope.report.schema import ReportError, load_report

        try:
            loaded = load_report(report)
        except ReportError as exc:
            _fail(str(exc))
        if format == "markdown":
            from syncscope.render import markdown as md

            text = md.render_report(loaded)
        else:
            from syncscope.render import perfetto

            text = json.dumps(perfetto.trace(loaded)) + "\n"
        _write_text(output, text)


def _export_shared(path: str, format: str) -> str:
    """SARIF and GitHub annotations of the in-scope sites, through the linter's writers (they
    take any record with rule_id, message, level, site and fingerprint: `ObservedSite` is one)."""
    import io

    import syncscope
    from syncscope.ci import baseline as bl

    try:
        observation = bl.load_observation(path)  # the one read of the report
    except bl.InputError as exc:
        _fail(str(exc))
    if observation.origin != bl.RUNTIME:
        _fail(f"{path}: not a syncscope report; for lint findings use `syncscope lint --output-format {format}`")
    sites = observation.sites
    out = io.StringIO()
    if format == "sarif":
        from syncscope.render.sarif import write_sarif

        write_sarif(sites, out, tool_name="syncscope", tool_version=syncscope.__version__)
    else:
        from syncscope.render.github import write_github

        write_github(sites, out)
    return out.getvalue()
