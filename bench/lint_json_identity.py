"""Are two `syncscope lint --output-format json` reports of one tree the same, and where not,
which findings differ and how: for checking that a refactor leaves the output as it was
(issue 29), where any difference at all must be named and judged.

    python bench/lint_json_identity.py before.json after.json [--fields]

Prints whether the files are byte-identical; if not, the findings only in one report (keyed by
path, line, column and rule) and, for a finding in both, each field whose value differs (the
message, the chain, the category...). Fields that hold times or versions, if a report has any,
are named with --ignore-field and left out of the comparison.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter


def key(finding: dict) -> tuple:
    return finding.get("path"), finding.get("line"), finding.get("column", finding.get("col")), finding.get("code")


def index(findings: list[dict]) -> dict[tuple, list[dict]]:
    by_key: dict[tuple, list[dict]] = {}
    for finding in findings:
        by_key.setdefault(key(finding), []).append(finding)
    return by_key


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--ignore-field", action="append", default=[], help="a field to leave out (times, versions)")
    parser.add_argument("--width", type=int, default=300, help="characters of a differing value to print")
    args = parser.parse_args(argv)
    with open(args.before, "rb") as a, open(args.after, "rb") as b:
        raw_a, raw_b = a.read(), b.read()
    if raw_a == raw_b:
        print(f"byte-identical ({len(raw_a)} bytes, {len(json.loads(raw_a))} findings)")
        return 0
    before, after = json.loads(raw_a), json.loads(raw_b)
    for findings in (before, after):
        for finding in findings:
            for field in args.ignore_field:
                finding.pop(field, None)
    print(f"not byte-identical: {len(before)} findings before, {len(after)} after")
    if before == after:
        print("equal once the ignored fields are left out")
        return 0
    old, new = index(before), index(after)
    only_old = [f for k in old if k not in new for f in old[k]]
    only_new = [f for k in new if k not in old for f in new[k]]
    print(f"only before: {len(only_old)} {dict(Counter(f['code'] for f in only_old))}")
    for f in only_old:
        print(f"  - {f['path']}:{f['line']} {f['code']} {f.get('category', '')} {f['message'][:args.width]}")
    print(f"only after: {len(only_new)} {dict(Counter(f['code'] for f in only_new))}")
    for f in only_new:
        print(f"  + {f['path']}:{f['line']} {f['code']} {f.get('category', '')} {f['message'][:args.width]}")
    changed = 0
    for k in old:
        if k not in new or old[k] == new[k]:
            continue
        changed += 1
        print(f"changed: {k[0]}:{k[1]} {k[3]}")
        for a, b in zip(old[k], new[k]):
            for field in sorted(set(a) | set(b)):
                if a.get(field) != b.get(field):
                    print(f"    {field}: {json.dumps(a.get(field))[:args.width]}")
                    print(f"    {' ' * len(field)}  -> {json.dumps(b.get(field))[:args.width]}")
        for extra in old[k][len(new[k]):]:
            print(f"    only before at this place: {extra['message'][:args.width]}")
        for extra in new[k][len(old[k]):]:
            print(f"    only after at this place: {extra['message'][:args.width]}")
    common = [k for k in old if k in new and len(old[k]) == len(new[k])]
    order = [key(f) for f in before if key(f) in common] == [key(f) for f in after if key(f) in common]
    print(f"changed in place: {changed}; order of the common findings {'kept' if order else 'changed'}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
