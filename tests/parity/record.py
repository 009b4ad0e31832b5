"""Regenerate tests/parity/expected_sites.json (the parity suite's ground truth) and show how a
device's sites differ from the file's, program by program.

    python -m tests.parity.record --device cuda            # on the GPU: diff GPU vs the file (sim's now)
    python -m tests.parity.record --device cuda --write    # ... and make the GPU's sets the ground truth
    python -m tests.parity.record --device sim             # on the CPU: diff the simulated device vs the file
    python -m tests.parity.record --from-reports DIR       # the same from reports kept by --reports DIR

Each program runs under `syncscope run --device DEVICE` (two at a time); `missing` lines are sites
the file has and this run did not report, `extra` lines the reverse. With --write, programs that
failed keep their old entry and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.parity.support import EXPECTED, diff, load_expected, program_names, run_many, site_set

SIM_SOURCE = "sim, not yet confirmed on a GPU"


def _source(device: str, report: dict) -> str:
    if device == "sim":
        return SIM_SOURCE
    try:
        import transformers

        hf = transformers.__version__
    except ImportError:
        hf = "not installed"
    return f"cuda: {report.get('gpu') or 'GPU'}, torch {report.get('torch')}, python {report.get('python')}, transformers {hf}"


def _format(data: dict) -> str:
    """JSON with one site per line, so that a regenerated file's git diff reads site by site."""
    lines = ["{", f' "source": {json.dumps(data["source"])},']
    if data.get("notes"):
        lines.append(f' "notes": {json.dumps(data["notes"], indent=2).replace(chr(10), chr(10) + " ")},')
    lines.append(' "programs": {')
    programs = list(data["programs"].items())
    for i, (name, sites) in enumerate(programs):
        body = ",\n".join(f"   {json.dumps(site)}" for site in sites)
        lines.append(f"  {json.dumps(name)}: [\n{body}\n  ]" + ("," if i < len(programs) - 1 else ""))
    lines += [" }", "}", ""]
    return "\n".join(lines)


def _write_atomic(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(_format(data))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "sim"])
    parser.add_argument("--write", action="store_true", help="write this run's sets to expected_sites.json")
    parser.add_argument("--reports", type=Path, help="keep the reports (and stdout) in this folder")
    parser.add_argument("--from-reports", type=Path, help="read NAME.DEVICE.json reports from this folder instead of running")
    parser.add_argument("--only", nargs="*", help="these programs only (file stems)")
    parser.add_argument("--workers", type=int, default=2, help="programs run at a time")
    args = parser.parse_args(argv)

    names = args.only or program_names()
    unknown = sorted(set(names) - set(program_names()))
    if unknown:
        print(f"record: no such program: {', '.join(unknown)}", file=sys.stderr)
        return 2
    reports: dict[str, dict | None] = {}
    if args.from_reports:
        for name in names:
            path = args.from_reports / f"{name}.{args.device}.json"
            report = json.loads(path.read_text()) if path.exists() else None
            reports[name] = report if report is not None and report.get("exit_code") == 0 else None
    else:
        out = args.reports or Path(tempfile.mkdtemp(prefix="parity-"))
        out.mkdir(parents=True, exist_ok=True)
        runs = run_many([(name, out, args.device, None) for name in names], workers=args.workers)
        for name, run in zip(names, runs):
            (out / f"{name}.{args.device}.stdout").write_text(run.stdout)
            (out / f"{name}.{args.device}.stderr").write_text(run.stderr)
            reports[name] = run.report if run.returncode == 0 else None
            if run.returncode != 0:
                print(f"{name}: exit {run.returncode}\n{run.stderr[-2000:]}")

    expected = load_expected() if EXPECTED.exists() else {"source": None, "programs": {}}
    print(f"comparing {args.device} with expected_sites.json (source: {expected.get('source')})")
    failed, differing = [], 0
    for name in names:
        report = reports[name]
        if report is None:
            failed.append(name)
            print(f"{name}: no report")
            continue
        got = site_set(report)
        want = {tuple(s) for s in expected["programs"].get(name, [])}
        text = diff(want, got)
        differing += bool(text)
        print(f"{name}: {'same' if not text else 'differs'} ({len(got)} sites)" + (f"\n{text}" if text else ""))
    print(f"{len(names) - len(failed) - differing} same, {differing} differ, {len(failed)} failed")

    if args.write:
        first = next((r for r in reports.values() if r is not None), {})
        programs, notes = dict(expected["programs"]), dict(expected.get("notes", {}))
        for name in names:
            if reports[name] is not None:
                programs[name] = sorted(list(s) for s in site_set(reports[name]))
                notes.pop(name, None)  # a note says where a set not from this source came from
        source = _source(args.device, first)
        if expected.get("source") and expected["source"] != source:
            for name in programs:  # sets this run did not replace keep the file's old source
                if name not in names or reports[name] is None:
                    notes.setdefault(name, f"from: {expected['source']}")
        data = {"source": source, "notes": notes, "programs": dict(sorted(programs.items()))}
        _write_atomic(EXPECTED, data)
        print(f"wrote {EXPECTED}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
