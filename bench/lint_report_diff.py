"""Two `syncscope lint --include-cold --output-format json` reports of one tree, before and
after a linter change: findings per rule (all, and the default per-step report), how many left
the default report and why, and a random sample of those that left (for judging by hand).

    python bench/lint_report_diff.py before.json after.json [--seed 2417 -n 15]
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter


def load(path: str) -> list[dict]:
    with open(path) as handle:
        return [f for f in json.load(handle) if f["code"].startswith("SYN")
                and f["code"] not in ("SYN900", "SYN001", "SYN002", "SYN003")]


def key(finding: dict) -> tuple:
    # the message's head: the chain after it may change when an unrelated function does
    return finding["path"], finding["line"], finding["code"], finding["message"][:60]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("-n", type=int, default=15)
    args = parser.parse_args(argv)
    before, after = load(args.before), load(args.after)
    codes = sorted({f["code"] for f in before + after})

    def hot(findings):
        return [f for f in findings if f.get("category") != "cold"]

    def row(name, findings):
        counts = Counter(f["code"] for f in findings)
        return f"| {name} | {len(findings)} | " + " | ".join(str(counts.get(c, 0)) for c in codes) + " |"

    print("| run | total | " + " | ".join(c[3:] for c in codes) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in codes) + " |")
    for name, findings in (("before, all (`--include-cold`)", before), ("after, all (`--include-cold`)", after),
                           ("before, per step (default)", hot(before)), ("after, per step (default)", hot(after))):
        print(row(name, findings))
    hot_before = {key(f): f for f in hot(before)}
    hot_after = {key(f): f for f in hot(after)}
    all_after = {key(f): f for f in after}
    left = [f for k, f in hot_before.items() if k not in hot_after]
    joined = [f for k, f in hot_after.items() if k not in hot_before]
    print(f"\nleft the default report: {len(left)}; joined it: {len(joined)}")
    reasons = Counter(("now cold: " + all_after[key(f)]["cold"]) if key(f) in all_after else "no longer found"
                      for f in left)
    for reason, count in reasons.most_common():
        print(f"  {count} {reason}")
    if args.seed is not None and left:
        random.seed(args.seed)
        ordered = sorted(left, key=lambda f: (f["path"], f["line"], f["code"]))
        sample = random.sample(ordered, min(args.n, len(ordered)))
        print(f"\nsample of {len(sample)} that left the default report (seed {args.seed}):")
        for f in sorted(sample, key=lambda f: (f["path"], f["line"])):
            status = ("now cold: " + all_after[key(f)]["cold"]) if key(f) in all_after else "no longer found"
            print(f'{f["path"]}:{f["line"]} {f["code"]} [{status}] {f["message"][:160]}')
    if joined:
        print("\njoined the default report:")
        for f in joined:
            print(f'{f["path"]}:{f["line"]} {f["code"]} {f["message"][:160]}')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
