"""Shared by the parity suite's two halves (tests/test_parity_sim.py on the CPU, tests/test_gpu_parity.py
on a GPU) and by record.py: run a program of tests/parity/programs/ plainly or under
`syncscope run`, and reduce a report to its (path, line, kind) set in a form that does not depend
on the machine (a file in an installed package is named from its package: transformers/...)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
EXPECTED = Path(__file__).resolve().parent / "expected_sites.json"
# A program whose printout does not depend on the device's arithmetic or random streams says so
# on a line of its own; the GPU half then compares its GPU stdout with the CPU reference's too.
_STABLE_MARK = "# parity: stdout is the same on every device"
_SITE_PACKAGES = re.compile(r".*/(?:site|dist)-packages/")


def program_names() -> list[str]:
    return sorted(p.stem for p in PROGRAMS.glob("*.py"))


def program_path(name: str) -> Path:
    return PROGRAMS / f"{name}.py"


def stable_across_devices(name: str) -> bool:
    return any(line.strip() == _STABLE_MARK for line in program_path(name).read_text().splitlines())


def missing_modules(name: str) -> list[str]:
    """Third-party modules the program imports that this interpreter lacks (transformers on a bare
    GPU image: install the carried wheels), so that a test can skip it and say why."""
    import importlib.util

    wanted = re.findall(r"^(?:from|import) (transformers|triton)\b", program_path(name).read_text(), re.MULTILINE)
    return sorted({m for m in wanted if importlib.util.find_spec(m) is None})


def pinned_version(module: str) -> str | None:
    """The version pyproject.toml pins for `module` (`"transformers==4.57.1"`), if any."""
    found = re.search(rf'"{re.escape(module)}==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    return found.group(1) if found else None


def version_mismatch(name: str) -> str | None:
    """Why the program cannot be compared here: the expected sites of a Hugging Face program are
    lines of the pinned transformers, and another version's lines differ (the GPU image has its
    own). None when the installed versions are the pinned ones (or the program needs none)."""
    import importlib.metadata

    for module in re.findall(r"^(?:from|import) (transformers)\b", program_path(name).read_text(), re.MULTILINE)[:1]:
        want = pinned_version(module)
        try:
            have = importlib.metadata.version(module)
        except importlib.metadata.PackageNotFoundError:
            continue  # missing_modules says so
        if want is not None and have != want:
            return f"{module} {have} here, the expected sites are lines of {module} {want} (pyproject.toml): install it to compare"
    return None


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    report: dict | None


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PARITY_DEVICE", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def run_program(name: str, out_dir: Path, device: str | None = None, reference: str | None = None) -> Run:
    """`python PROGRAM` (device None; reference "cpu" sets PARITY_DEVICE=cpu and, on the CPU,
    TRITON_INTERPRET=1 for the Triton program) or `syncscope run --device DEVICE PROGRAM`."""
    script = str(program_path(name).relative_to(ROOT))
    report = Path(out_dir) / f"{name}.{device or 'plain-' + (reference or 'cuda')}.json"
    if device is None:
        command = [sys.executable, script]
        extra = {"PARITY_DEVICE": reference, "TRITON_INTERPRET": "1"} if reference == "cpu" else {}
    else:
        command = [sys.executable, "-m", "syncscope", "run", "--device", device, "--no-table", "-o", str(report), script]
        extra = {}
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=_env(**extra))
    data = json.loads(report.read_text()) if device is not None and report.exists() else None
    return Run(proc.returncode, proc.stdout, proc.stderr, data)


def runnable(names: list[str]) -> list[str]:
    return [name for name in names if not missing_modules(name) and version_mismatch(name) is None]


def run_many(jobs: list[tuple], workers: int = 2) -> list[Run]:
    """run_program over (name, out_dir, device, reference) tuples, `workers` at a time (CI has 2 cores)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda job: run_program(*job), jobs))


def portable_path(path: str, search_path: list[str] | None = None) -> str:
    """A site's path as it reads on any machine: inside an installed package, from the package
    (`transformers/generation/utils.py`); under the repository, relative to it; else relative to
    the longest entry of `search_path` (sys.path) it lies under: a package installed with
    `pip install --target /tmp/site` and found through PYTHONPATH has no site-packages in its path."""
    path = path.replace(os.sep, "/")
    stripped = _SITE_PACKAGES.sub("", path)
    if stripped != path:
        return stripped
    root = str(ROOT).replace(os.sep, "/") + "/"
    if path.startswith(root):
        return path[len(root):]
    entries = sys.path if search_path is None else search_path
    best = ""
    for entry in entries:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            continue  # "" (the working directory) and relative entries say nothing about a full path
        prefix = entry.replace(os.sep, "/").rstrip("/") + "/"
        if prefix != "/" and path.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return path[len(best):] if best else path


def site_set(report: dict) -> set[tuple[str, int, str]]:
    """The sites a gate counts: every site but the allowed ones (on a GPU, torch.compile's own
    syncs while it compiles and autotunes: runtime/compile_phase.py; the programs allow nothing)."""
    return {(portable_path(s["path"]), s["line"], s["kind"]) for s in report["sites"] if not s.get("allowed")}


def allow_reasons(report: dict) -> set[str]:
    """Why the report's allowed sites were allowed (empty if none was)."""
    return {s.get("allow_reason") or "" for s in report["sites"] if s.get("allowed")}


def load_expected() -> dict:
    return json.loads(EXPECTED.read_text())


def expected_sites(name: str) -> set[tuple[str, int, str]]:
    return {tuple(site) for site in load_expected()["programs"][name]}


def diff(expected: set, got: set) -> str:
    """'missing' (in the expected set, not reported) and 'extra' (reported, not expected), one per line."""
    lines = [f"  missing {p}:{n} {k}" for p, n, k in sorted(expected - got)]
    lines += [f"  extra   {p}:{n} {k}" for p, n, k in sorted(got - expected)]
    return "\n".join(lines)
