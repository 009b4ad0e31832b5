"""`syncscope lint`: the static linter's command line. Only the standard library at import time;
the linter itself (libcst, rich) is imported inside the command, and torch never.

The options are parsed with argparse, not typer: lint runs on every commit, and typer 0.29
builds a pydantic adapter for each option it parses (with typer's own import, ~0.15 s of a
0.6 s warm run on vLLM). `syncscope.cli.main` hands `lint ...` straight to `main` below; the
typer command `register` adds only forwards to it, so that `syncscope --help` lists lint and
`typer.testing.CliRunner` reaches it.

No `from __future__ import annotations` here: typer reads the forwarder's `typer.Context`
annotation, which must be an object, since typer is imported only inside `register`."""

import argparse
import sys

FORMATS = ("text", "concise", "json", "sarif", "github")
HELP = "Find host<->GPU synchronizations in source code, statically."


def _codes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="syncscope lint", description=HELP, allow_abbrev=False,
                                     epilog="With --fix --verify, the command to run follows `--`: "
                                            "syncscope lint src --fix --verify -- python serve.py")
    add = parser.add_argument
    add("paths", nargs="*", metavar="PATH", help="Files or directories (default: .)")
    add("--select", help="Comma-separated codes or prefixes to enable (replaces the config's).")
    add("--extend-select", help="Codes or prefixes to enable in addition.")
    add("--ignore", help="Codes or prefixes to disable.")
    add("--output-format", default="text", help="text, concise, json, sarif or github.")
    add("--output-file", "-o", help="Write the report here instead of stdout.")
    add("--statistics", action="store_true", help="Show counts per rule instead of each finding.")
    add("--exit-zero", action="store_true", help="Exit 0 even when there are findings.")
    add("--fix", action="store_true", help="Apply safe fixes.")
    add("--unsafe-fixes", action="store_true", help="Also apply unsafe fixes (with --fix or --diff).")
    add("--diff", action="store_true", help="Show the fixes as a diff; change nothing.")
    add("--verify", action="store_true",
        help="With --fix: keep only the fixes that running `-- CMD` under `syncscope run` proves (same output, sync gone).")
    add("--verify-device", default="sim", help="--verify: the device `syncscope run` uses (sim, cuda, auto).")
    add("--verify-mask", metavar="REGEX",
        help="--verify: text masked before outputs are compared (default: numbers with a fraction, i.e. timings).")
    add("--verify-timeout", type=float, help="--verify: seconds each run of the command may take.")
    add("--all-functions", dest="all_functions", action="store_true",
        help="Lint every function, module and class body.")
    add("--hot-functions", dest="all_functions", action="store_false",
        help="Skip code that runs once (the default).")
    add("--include-cold", dest="include_cold", action="store_true",
        help="Also report syncs in code that does not run every step (start-up, loading, debug switches, "
             "other platforms), marked cold.")
    add("--per-step-only", dest="include_cold", action="store_false", help="Only per-step code (the default).")
    add("--no-cache", action="store_true", help="Neither read nor write the cache.")
    add("--config", dest="config_file", help="A pyproject.toml, or a TOML file with a lint table, to read.")
    add("--jobs", "-j", type=int, help="Worker processes (default: CPU count).")
    add("--no-progress", action="store_true", help="Never show a progress bar.")
    add("--confirm", dest="confirm_report", metavar="REPORT",
        help="A runtime report (syncscope run): list the findings it confirmed first, and the runtime sites no rule caught.")
    # None: the configuration decides (a flag pair sets it either way)
    parser.set_defaults(all_functions=None, include_cold=None)
    return parser


def main(argv: list[str]) -> int:
    """`syncscope lint ARGV...`; returns the exit code (0 clean, 1 findings, 2 error or usage)."""
    command = None
    if "--" in argv:  # `lint PATHS --fix --verify -- CMD...`: CMD is what follows the first `--`
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2, argparse has printed why)
        return stop.code if isinstance(stop.code, int) else 2
    if command is not None and not args.verify:
        args.paths += command  # as with any command line: after `--`, only paths
        command = None
    return run_lint(
        args.paths or ["."], select=_codes(args.select), extend_select=_codes(args.extend_select),
        ignore=_codes(args.ignore), output_format=args.output_format, output_file=args.output_file,
        statistics=args.statistics, exit_zero=args.exit_zero, fix=args.fix, unsafe_fixes=args.unsafe_fixes,
        diff=args.diff, all_functions=args.all_functions, use_cache=not args.no_cache,
        config_file=args.config_file, jobs=args.jobs, progress=not args.no_progress,
        confirm_report=args.confirm_report, verify_command=command if args.verify else None,
        verify_device=args.verify_device, verify_mask=args.verify_mask, verify_timeout=args.verify_timeout,
        include_cold=args.include_cold,
    )


def register(app) -> None:
    import typer

    # Every argument goes to `main` as it came: no option is declared here, so typer parses none.
    @app.command("lint", help=HELP, add_help_option=False,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def lint(ctx: typer.Context) -> None:
        raise typer.Exit(main(list(ctx.args)))


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
