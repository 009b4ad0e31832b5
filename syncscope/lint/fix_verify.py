"""`syncscope lint --fix --verify -- CMD`: keep a fix only if running proves it.

The fixes are applied to a copy of the project; CMD runs there under `syncscope run`
(the simulated CUDA device by default) before and after. A fix is kept when the program's
output (stdout and exit status; timings masked, see `DEFAULT_MASK`) is unchanged and the sync at
its site is gone from the runtime report; it is refused when the output changed, the site
still syncs, or the run never synced there (nothing to prove). All candidates are tried in one
run first; if that run changes the output, each is tried on its own, and the survivors once
more together. Only the kept fixes are then written to the real files.

A runtime site counts for a finding when the finding's file and line is the site's own line or
one of the calls on its stack (a sync inside a property is attributed to the line that read it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

# Numbers with a fraction are what a program prints for time (wall=3.719s, tokens/s=23.7): masked
# before outputs are compared. Integers (token counts) are compared as they are.
DEFAULT_MASK = r"\d+\.\d+(e[-+]?\d+)?"
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".syncscope_cache", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "node_modules", ".tox", ".nox", ".bench", "*.pyc",
)


class VerifyError(Exception):
    """Bad input for --verify (exit 2)."""


@dataclass
class Candidate:
    path: str  # relative to the project root
    code: str
    line: int
    message: str
    status: str = "refused"  # "kept" or "refused"
    reason: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return (self.code, self.line)


@dataclass
class RunResult:
    output: str
    exit_code: int
    lines: set[tuple[str, int]]  # (path, line) of every site and every frame on a site's stack


def verify_fixes(findings, config, unsafe: bool, command: list[str], *, device: str = "sim",
                 mask: str = DEFAULT_MASK, timeout: float | None = None, log=None) -> list[Candidate]:
    """Decide which fixes to keep; the real files are not touched. Returns every candidate
    with its status and reason."""
    if not command:
        raise VerifyError("--verify needs the command to run after `--`")
    try:
        masker = re.compile(mask)
    except re.error as error:
        raise VerifyError(f"--verify-mask: {error}") from error
    candidates = [Candidate(f.site.path, f.code, f.site.line, f.message) for f in findings
                  if f.fix == "safe" or (f.fix == "unsafe" and unsafe)]
    if not candidates:
        return []
    root = os.path.abspath(config.root)
    log = log or (lambda text: None)
    with tempfile.TemporaryDirectory(prefix="syncscope-verify-") as scratch:
        copy = os.path.join(scratch, "project")
        shutil.copytree(root, copy, ignore=_COPY_IGNORE, symlinks=True)
        originals = {c.path: _read(os.path.join(copy, c.path)) for c in candidates}
        runner = _Runner(copy, scratch, command, device, masker, timeout)
        log(f"verify: running the command before any fix ({' '.join(command)})")
        before = runner.run("before")
        todo = []
        for c in candidates:
            if (c.path, c.line) in before.lines:
                todo.append(c)
            else:
                c.reason = "the run never synced here: nothing to verify"

        def attempt(group: list[Candidate], label: str) -> RunResult:
            _restore(copy, originals)
            _apply(copy, group, config, unsafe)
            log(f"verify: running the command with {label}")
            return runner.run(label)

        def judge(group: list[Candidate], after: RunResult) -> list[Candidate]:
            """The candidates of `group` whose site no longer syncs (output already compared)."""
            passed = []
            for c in group:
                if (c.path, c.line) in after.lines:
                    c.reason = "the site still syncs after the fix"
                else:
                    passed.append(c)
            return passed

        if todo:
            after = attempt(todo, f"{len(todo)} fixes")
            if after.output == before.output and after.exit_code == before.exit_code:
                passed = judge(todo, after)
                if len(passed) < len(todo) and passed:  # prove the smaller set on its own
                    after = attempt(passed, f"the {len(passed)} fixes that removed their sync")
                    if after.output != before.output or after.exit_code != before.exit_code:
                        passed = _one_by_one(passed, attempt, judge, before)
                    else:
                        passed = judge(passed, after)
            else:
                passed = _one_by_one(todo, attempt, judge, before)
            for c in passed:
                c.status, c.reason = "kept", "same output, sync gone"
        _restore(copy, originals)
    return candidates


def _one_by_one(group, attempt, judge, before: RunResult) -> list[Candidate]:
    passed = []
    for c in group:
        after = attempt([c], f"the fix at {c.path}:{c.line} alone")
        if after.output != before.output or after.exit_code != before.exit_code:
            c.reason = _changed(before, after)
        else:
            passed.extend(judge([c], after))
    if len(passed) > 1:
        after = attempt(passed, f"the {len(passed)} fixes that passed alone, together")
        if after.output != before.output or after.exit_code != before.exit_code:
            for c in passed:
                c.reason = "each passed alone, but together they change the output"
            return []
        passed = judge(passed, after)
    return passed


def _changed(before: RunResult, after: RunResult) -> str:
    if after.exit_code != before.exit_code:
        return f"the command exited {after.exit_code} (before: {before.exit_code})"
    return "the command's output changed"


class _Runner:
    def __init__(self, copy: str, scratch: str, command: list[str], device: str, masker, timeout) -> None:
        self.copy, self.scratch, self.device, self.masker, self.timeout = copy, scratch, device, masker, timeout
        target = list(command)
        if target and os.path.basename(target[0]).startswith("python"):
            target = target[1:]  # `python x.py` and `x.py` both mean: run x.py under syncscope run
        if not target:
            raise VerifyError("--verify: no script or module to run")
        self.target = target

    def run(self, label: str) -> RunResult:
        report = os.path.join(self.scratch, f"report-{re.sub(r'[^a-z0-9]+', '-', label)}.json")
        env = dict(os.environ)
        paths = [self.copy] + ([os.path.join(self.copy, "src")] if os.path.isdir(os.path.join(self.copy, "src")) else [])
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        args = [sys.executable, "-m", "syncscope", "run", "--device", self.device, "-o", report, "--no-table",
                *self.target]
        try:
            done = subprocess.run(args, cwd=self.copy, env=env, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired as error:
            raise VerifyError(f"--verify: the command ran past {self.timeout:g} s ({label})") from error
        try:
            with open(report, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as error:
            tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            raise VerifyError(f"--verify: `syncscope run` wrote no report ({label}): {tail[0]}") from error
        return RunResult(self.masker.sub("#", done.stdout), done.returncode, _site_lines(data, self.copy))


def _site_lines(report: dict, copy: str) -> set[tuple[str, int]]:
    lines = set()
    for site in report.get("sites", ()):
        if site.get("allowed"):
            continue
        for frame in [site] + list(site.get("stack") or ()):
            path = frame.get("path", "")
            if os.path.isabs(path):
                path = os.path.relpath(path, copy)
            lines.add((path.replace(os.sep, "/"), int(frame.get("line", 0))))
    return lines


def _apply(copy: str, group: list[Candidate], config, unsafe: bool) -> None:
    """Apply the fixes of `group` to the copy's files."""
    from .fixes import fix_file

    wanted: dict[str, set[tuple[str, int]]] = {}
    for c in group:
        wanted.setdefault(c.path, set()).add(c.key)
    copy_config = _config_at(config, copy)
    for rel, keys in wanted.items():
        path = os.path.join(copy, rel)
        fixed = fix_file(path, rel, keys, copy_config, unsafe)
        if fixed is None:
            continue
        _, new, _ = fixed
        _write(path, new)


def _config_at(config, root: str):
    import copy as copying

    moved = copying.copy(config)
    moved.root = root
    return moved


def _restore(copy: str, originals: dict[str, str]) -> None:
    for rel, text in originals.items():
        _write(os.path.join(copy, rel), text)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def write_table(candidates: list[Candidate], stream) -> None:
    """The kept and refused fixes, one line each."""
    if not candidates:
        stream.write("verify: no fixes to try\n")
        return
    rows = [(c.status, f"{c.path}:{c.line}", c.code, c.reason) for c in candidates]
    widths = [max(len(r[i]) for r in rows + [("status", "site", "code", "")]) for i in range(3)]
    stream.write(f"{'status'.ljust(widths[0])}  {'site'.ljust(widths[1])}  {'code'.ljust(widths[2])}  why\n")
    for status, site, code, reason in sorted(rows, key=lambda r: (r[0] != "kept", r[1])):
        stream.write(f"{status.ljust(widths[0])}  {site.ljust(widths[1])}  {code.ljust(widths[2])}  {reason}\n")
    kept = sum(c.status == "kept" for c in candidates)
    stream.write(f"verify: kept {kept} of {len(candidates)} fixes\n")
