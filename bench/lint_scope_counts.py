"""Findings per rule of a `syncscope lint --include-cold --output-format json` report, split into
per-step and cold (and the cold ones by reason), for the before/after tables of docs/lint.md.

    python bench/lint_scope_counts.py /tmp/vllm.json [--before /tmp/vllm_before.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter


def load(path: str) -> list[dict]:
    with open(path) as handle:
        return [f for f in json.load(handle) if f["code"].startswith("SYN") and f["code"] != "SYN900"
                and f["code"] not in ("SYN001", "SYN002", "SYN003")]


def reason_class(text: str) -> str:
    text = re.sub(r"`[^`]*`", "`x`", text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--before", help="the same tree's report from the linter before")
    args = parser.parse_args(argv)
    findings = load(args.report)
    codes = sorted({f["code"] for f in findings} | ({f["code"] for f in load(args.before)} if args.before else set()))
    rows = []
    if args.before:
        rows.append(("before", Counter(f["code"] for f in load(args.before))))
    rows.append(("after, all (--include-cold)", Counter(f["code"] for f in findings)))
    rows.append(("after, per step (default report)", Counter(f["code"] for f in findings if f.get("category") != "cold")))
    print("| run | total | " + " | ".join(c[3:] for c in codes) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in codes) + " |")
    for name, counts in rows:
        print(f"| {name} | {sum(counts.values())} | " + " | ".join(str(counts.get(c, 0)) for c in codes) + " |")
    reasons = Counter(reason_class(f["cold"]) for f in findings if f.get("category") == "cold")
    print()
    for reason, count in reasons.most_common():
        print(f"{count:6d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
