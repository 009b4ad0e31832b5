"""Draw a seeded random sample of `syncscope lint` findings, to judge each by reading the code.

    syncscope lint vllm --output-format json --exit-zero -o /tmp/vllm.json   # in the tree's parent
    python bench/lint_precision_sample.py /tmp/vllm.json --seed 2411 -n 50 --src /work/corpora/vllm-0.33.0

Prints, for each sampled finding, a numbered block: the rule, `path:line`, the function, the
message (with its chain for SYN601/SYN602), the per-step root when the report has one, and the
source lines around it (from `--src`), so the reader can trace where the value comes from and
who calls the function. `--counts` prints the findings per rule instead. `--table` prints a
Markdown table skeleton (one row per sampled finding) to fill in with the verdicts.

The sample is `random.Random(seed).sample` over the findings sorted by (path, line, code,
column): the same report and seed always give the same sample.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter


def load(report: str) -> list[dict]:
    with open(report) as handle:
        findings = json.load(handle)
    findings = [f for f in findings if f["code"].startswith("SYN") and f["code"] not in ("SYN900",)]
    findings.sort(key=lambda f: (f["path"], f["line"], f["code"], f["column"]))
    return findings


def sample(findings: list[dict], seed: int, count: int) -> list[dict]:
    return random.Random(seed).sample(findings, min(count, len(findings)))


def context(src: str | None, path: str, line: int, around: int) -> str:
    if not src:
        return ""
    try:
        with open(os.path.join(src, path), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return "    (source not found)"
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return "\n".join(f"  {'>' if n == line else ' '}{n:5d} | {lines[n - 1]}" for n in range(lo, hi + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a `syncscope lint --output-format json` report")
    parser.add_argument("--seed", type=int, required=True, help="random seed of the sample")
    parser.add_argument("-n", type=int, default=50, help="sample size (default 50)")
    parser.add_argument("--src", help="directory the report's paths are relative to (for the code)")
    parser.add_argument("--around", type=int, default=3, help="source lines shown either side")
    parser.add_argument("--counts", action="store_true", help="findings per rule, no sample")
    parser.add_argument("--table", action="store_true", help="a Markdown table skeleton of the sample")
    args = parser.parse_args(argv)
    try:
        findings = load(args.report)
    except (OSError, ValueError) as error:
        print(f"error: cannot read report {args.report}: {error}", file=sys.stderr)
        return 2
    if args.counts:
        counts = Counter(f["code"] for f in findings)
        print(f"total {len(findings)}: " + ", ".join(f"{c} {n}" for c, n in sorted(counts.items())))
        return 0
    picked = sample(findings, args.seed, args.n)
    if args.table:
        print("| # | rule | where | verdict | evidence |")
        print("| --- | --- | --- | --- | --- |")
        for number, f in enumerate(picked, 1):
            print(f"| {number} | {f['code']} | `{f['path']}:{f['line']}` |  |  |")
        return 0
    for number, f in enumerate(picked, 1):
        print(f"#{number} {f['code']} {f['path']}:{f['line']} in {f['function']}")
        print(f"   {f['message']}")
        if f.get("per_step"):
            print(f"   {f['per_step'].get('why', '')}")
        if f.get("chain"):
            root = f["chain"][-1]
            print(f"   root: {root.get('path')}:{root.get('line')}")
        text = context(args.src, f["path"], f["line"], args.around)
        if text:
            print(text)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
