"""`syncscope lint`: the static linter's command line. Only stdlib and typer at import time;
the linter itself (libcst, rich) is imported inside the command, and torch never."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

FORMATS = ("text", "concise", "json", "sarif", "github")


def _codes(value: Optional[str]) -> Optional[list[str]]:
    if value is None:
        return None
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def register(app: typer.Typer) -> None:
    @app.command("lint")
    def lint(
        paths: Optional[List[str]] = typer.Argument(None, help="Files or directories (default: .)"),
        select: Optional[str] = typer.Option(None, help="Comma-separated codes or prefixes to enable (replaces the config's)."),
        extend_select: Optional[str] = typer.Option(None, help="Codes or prefixes to enable in addition."),
        ignore: Optional[str] = typer.Option(None, help="Codes or prefixes to disable."),
        output_format: str = typer.Option("text", "--output-format", help="text, concise, json, sarif or github."),
        output_file: Optional[str] = typer.Option(None, "--output-file", "-o", help="Write the report here instead of stdout."),
        statistics: bool = typer.Option(False, "--statistics", help="Show counts per rule instead of each finding."),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings."),
        fix: bool = typer.Option(False, "--fix", help="Apply safe fixes."),
        unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes", help="Also apply unsafe fixes (with --fix or --diff)."),
        diff: bool = typer.Option(False, "--diff", help="Show the fixes as a diff; change nothing."),
        verify: bool = typer.Option(False, "--verify", help="With --fix: keep only the fixes that running `-- CMD` under `syncscope run` proves (same output, sync gone)."),
        verify_device: str = typer.Option("sim", "--verify-device", help="--verify: the device `syncscope run` uses (sim, cuda, auto)."),
        verify_mask: Optional[str] = typer.Option(None, "--verify-mask", metavar="REGEX", help="--verify: text masked before outputs are compared (default: numbers with a fraction, i.e. timings)."),
        verify_timeout: Optional[float] = typer.Option(None, "--verify-timeout", help="--verify: seconds each run of the command may take."),
        all_functions: Optional[bool] = typer.Option(None, "--all-functions/--hot-functions",
                                                     help="Lint every function, module and class body (default: skip code that runs once)."),
        include_cold: Optional[bool] = typer.Option(
            None, "--include-cold/--per-step-only",
            help="Also report syncs in code that does not run every step (start-up, loading, debug switches, other platforms), marked cold."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the cache."),
        config_file: Optional[str] = typer.Option(None, "--config", help="A pyproject.toml, or a TOML file with a lint table, to read."),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes (default: CPU count)."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Never show a progress bar."),
        confirm_report: Optional[str] = typer.Option(
            None, "--confirm", metavar="REPORT",
            help="A runtime report (syncscope run): list the findings it confirmed first, and the runtime sites no rule caught."),
    ) -> None:
        """Find host<->GPU synchronizations in source code, statically."""
        command = None
        if verify:  # `lint PATHS --fix --verify -- CMD...`: CMD is what follows the first `--`
            command = _after_double_dash(paths or [])
            paths = (paths or [])[: len(paths or []) - len(command)]
        code = run_lint(
            paths or ["."], select=_codes(select), extend_select=_codes(extend_select), ignore=_codes(ignore),
            output_format=output_format, output_file=output_file, statistics=statistics, exit_zero=exit_zero,
            fix=fix, unsafe_fixes=unsafe_fixes, diff=diff, all_functions=all_functions, use_cache=not no_cache,
            config_file=config_file, jobs=jobs, progress=not no_progress, confirm_report=confirm_report,
            verify_command=command, verify_device=verify_device, verify_mask=verify_mask, verify_timeout=verify_timeout,
            include_cold=include_cold,
        )
        raise typer.Exit(code)


def _after_double_dash(positional: list[str]) -> list[str]:
    """The arguments after `--` on the command line (click hands them over as positional
    arguments): the trailing part of `positional` that sys.argv shows after its first `--`."""
    argv = sys.argv
    if "--" not in argv:
        return []
    tail = argv[argv.index("--") + 1:]
    return tail if tail and positional[-len(tail):] == tail else []


def run_lint(paths: list[str], *, select=None, extend_select=None, ignore=None, output_format="text",
             output_file=None, statistics=False, exit_zero=False, fix=False, unsafe_fixes=False, diff=False,
             all_functions=None, use_cache=True, config_file=None, jobs=None, progress=True, confirm_report=None,
             verify_command=None, verify_device="sim", verify_mask=None, verify_timeout=None,
             include_cold=None) -> int:
    """The whole command; returns the exit code (0 clean, 1 findings, 2 error)."""
    import os

    from syncscope.lint.config import ConfigError, check_selectors, find_project_root, load_config
    from syncscope.lint.engine import lint_paths
    from syncscope.lint import output
    from syncscope.terminal import SafeStream, safe_text

    if output_format not in FORMATS:
        print(f"syncscope lint: unknown --output-format {output_format!r} (choose from {', '.join(FORMATS)})", file=sys.stderr)
        return 2
    root = find_project_root(paths[0] if paths else ".")
    try:
        overrides = {"select": select, "extend_select": extend_select, "all_functions": all_functions,
                     "include_cold": include_cold}
        config = load_config(root, config_file, overrides)
        if ignore:
            check_selectors("ignore", ignore, "--ignore")
            config.ignore = config.ignore + ignore
    except ConfigError as error:
        print(f"syncscope lint: {safe_text(error)}", file=sys.stderr)
        return 2

    bar = _progress_bar(progress and output_file is None)
    try:
        lint_run = lint_paths(paths, config, jobs=jobs, use_cache=use_cache, progress=bar)
    except FileNotFoundError as error:
        print(f"syncscope lint: no such file or directory: {safe_text(error)}", file=sys.stderr)
        return 2
    finally:
        if bar:
            bar.close()

    if verify_command is not None:
        if not fix or diff:
            print("syncscope lint: --verify goes with --fix (and not --diff)", file=sys.stderr)
            return 2
        from syncscope.lint.fix_verify import DEFAULT_MASK, VerifyError, verify_fixes, write_table

        try:
            candidates = verify_fixes(lint_run.findings, config, unsafe_fixes, verify_command, device=verify_device,
                                      mask=verify_mask or DEFAULT_MASK, timeout=verify_timeout,
                                      log=lambda text: print(text, file=sys.stderr))
        except VerifyError as error:
            print(f"syncscope lint: {safe_text(error)}", file=sys.stderr)
            return 2
        write_table(candidates, SafeStream(sys.stdout))
        kept = {(c.path, c.code, c.line) for c in candidates if c.status == "kept"}
        if kept and _apply_fixes(lint_run, config, unsafe_fixes, write=True, only=kept):
            lint_run = lint_paths(paths, config, jobs=jobs, use_cache=use_cache)
    elif fix or diff:
        changed = _apply_fixes(lint_run, config, unsafe_fixes, write=fix and not diff)
        if diff:
            return 1 if changed and not exit_zero else 0
        if changed:  # report what is left
            lint_run = lint_paths(paths, config, jobs=jobs, use_cache=use_cache)

    findings = lint_run.findings
    confirmation = None
    if confirm_report is not None:
        from syncscope.lint.confirm import confirm, render_text
        from syncscope.report.schema import ReportError

        try:
            confirmation = confirm(findings, confirm_report, lint_root=os.path.abspath(config.root))
        except ReportError as error:
            print(f"syncscope lint: --confirm: {safe_text(error)}", file=sys.stderr)
            return 2
        findings = list(confirmation.ranked())  # what a run proved first
    stream = open(output_file, "w", encoding="utf-8") if output_file else sys.stdout
    if output_format in ("text", "concise") or statistics:  # human formats: no raw control characters
        stream = SafeStream(stream)
    try:
        if statistics:
            output.write_statistics(findings, stream)
        elif output_format == "text":
            output.write_text(findings, lint_run.texts, stream)
        elif output_format == "concise":
            output.write_concise(findings, stream)
        elif output_format == "json":
            output.write_json(findings, stream)
        elif output_format == "sarif":
            from syncscope.lint.fix_sarif import WithFixes, sarif_fixes
            from syncscope.render.sarif import write_sarif

            fixes = sarif_fixes(findings, lint_run.abs_paths, config)
            records = [WithFixes(f, fixes.get((f.site.path, f.code, f.site.line))) for f in findings]
            write_sarif(records, stream, rules=output.sarif_rules(), tool_version=_version(),
                        information_uri="https://github.com/syncscope/syncscope",
                        root_uri="file://" + os.path.abspath(config.root))
        elif output_format == "github":
            from syncscope.render.github import write_github

            write_github(findings, stream)
        if output_format in ("text", "concise") or statistics:
            print(output.summary(lint_run, findings, unsafe_fixes), file=stream)
        if confirmation is not None:
            # Machine formats stay parseable: the cross-check then goes to stderr.
            human = output_format in ("text", "concise") or statistics
            print(safe_text(render_text(confirmation), multiline=True), file=stream if human else sys.stderr)
    finally:
        if output_file:
            stream.close()

    if lint_run.internal_errors:
        for error in lint_run.internal_errors:
            print(f"syncscope lint: internal error in {safe_text(error.splitlines()[0])}", file=sys.stderr)
        return 2
    failing = [f for f in findings if f.level == "error"]
    return 1 if failing and not exit_zero else 0


def _apply_fixes(lint_run, config, unsafe: bool, write: bool, only=None) -> int:
    from syncscope.lint.fixes import fix_file, unified_diff

    wanted: dict[str, set[tuple[str, int]]] = {}
    for f in lint_run.findings:
        if only is not None and (f.site.path, f.code, f.site.line) not in only:
            continue
        if f.fix == "safe" or (f.fix == "unsafe" and unsafe):
            wanted.setdefault(f.site.path, set()).add((f.code, f.site.line))
    total = 0
    for rel, codes in sorted(wanted.items()):
        path = lint_run.abs_paths.get(rel, rel)
        fixed = fix_file(path, rel, codes, config, unsafe)
        if fixed is None:
            continue
        old, new, count = fixed
        total += count
        if write:
            import io
            import tokenize

            with open(path, "rb") as handle:  # keep the file's own encoding (PEP 263 cookie)
                encoding, _ = tokenize.detect_encoding(io.BytesIO(handle.read()).readline)
            with open(path, "w", encoding=encoding, newline="") as handle:
                handle.write(new)
        else:
            sys.stdout.write(unified_diff(rel, old, new))
    if write and total:
        print(f"Fixed {total} finding{'s' if total != 1 else ''}.", file=sys.stderr)
    return total


class _Bar:
    """A rich progress bar on stderr for long runs. rich is imported only when a run has enough
    files to analyze to be worth a bar, so a cached rerun never pays for it."""

    def __init__(self, console=None) -> None:
        self.console = console  # rich Console; stderr by default
        self.progress = None
        self.task = None

    def start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("linting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=self.console or Console(stderr=True), transient=True)
        self.task = self.progress.add_task("lint", total=total)
        self.progress.start()

    def advance(self, n: int) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, n)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _progress_bar(wanted: bool):
    """Only when stderr is a terminal: never in CI logs or pipes."""
    if not wanted or not sys.stderr.isatty():
        return None
    return _Bar()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("syncscope")
    except Exception:
        return "0.1.0"
