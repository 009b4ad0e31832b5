"""The readers' verdicts of earlier precision samples, matched to the default findings of a report.

    python bench/pooled_verdicts.py vllm /tmp/vllm.json docs/data/judge_2026-11-29[b-k] docs/data/judge_2026-11-30* ...

A verdict (a row `| # | rule | where | verdict | evidence |` of `<dir>/<tree>_*_verdicts.md`,
docs/data/judge_brief.md) counts when its finding, (rule, path:line), is still among the
report's default (`"category": "per-step"`) findings; the path may be written from any directory
down (a reader who left out `srt/`), and findings of one rule on one line count once. Prints the pooled share of "real" and of
"real and per step" (`R P`) verdicts, and the same averaged per finding (each finding with
verdicts weighs the same, however often the samples drew it): the second estimates the report's
precision, the first how the drawn findings were judged. `--worst N` lists the N findings with
the largest share of verdicts other than `R P`, with the most common of those verdicts.
`--same-root` drops the verdicts on a call-site finding (SYN601/SYN602) that judged another sync
than the one the report now names: the evidence cites the root's file, never at the root's line
(`mm_schedule.py:778` for a finding whose chain now ends at `mm_schedule.py:92`). A call site
keeps its rule and line when a rule changes which of its callee's syncs is the nearest, so such
a verdict is about a sync that no longer reaches it.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import re
import sys

_ROW = re.compile(r"\|\s*\d+\s*\|\s*(SYN\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|(.*)")
_ROOT = re.compile(r"down: (?:[\w./-]+/)?([\w.-]+\.py):(\d+) SYN")  # the root a chain message names
_CITED = re.compile(r"([\w.-]+\.py):(\d+)")


def verdicts(tree: str, directories: list[str], evidence: bool = False) -> dict[tuple, list]:
    """(rule, path:line without the package) -> the verdicts given, in the brief's codes (with
    `evidence`: (verdict, evidence text) pairs)."""
    found: dict[tuple, list] = collections.defaultdict(list)
    for directory in directories:
        for path in sorted(glob.glob(f"{directory}/{tree}_*_verdicts.md")):
            with open(path) as handle:
                for line in handle:
                    row = _ROW.match(line)
                    if row:
                        rule, where, verdict, text = row.groups()
                        verdict = re.sub(r" \(.*", "", verdict).replace(" ?", "").strip()
                        found[(rule, where)].append((verdict, text) if evidence else verdict)
    return found


def judged_root(finding: dict, text: str) -> bool:
    """False when a call-site finding's verdict cites the file of the root its message now names,
    and never that root's line: the reader judged another sync of that file."""
    root = _ROOT.search(finding.get("message", "")) if finding["code"] in ("SYN601", "SYN602") else None
    if root is None:
        return True
    cited = [line for name, line in _CITED.findall(text) if name == root.group(1)]
    return not cited or root.group(2) in cited


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", help="the verdict files' prefix: vllm or sglang")
    parser.add_argument("report", help="a `syncscope lint --include-cold --output-format json` report")
    parser.add_argument("directories", nargs="+", help="directories of verdict files")
    parser.add_argument("--worst", type=int, default=0)
    parser.add_argument("--same-root", action="store_true",
                        help="leave out the verdicts on call sites that judged another root (see above)")
    args = parser.parse_args(argv)
    with open(args.report) as handle:
        default = [f for f in json.load(handle) if f.get("category") == "per-step"]
    table = verdicts(args.tree, args.directories, evidence=True)
    # by (rule, line): a reader may drop more of the path than the package (`models/x.py` for
    # `srt/models/x.py`); findings on one line under one rule (two columns) count once
    by_line: dict[tuple, list[str]] = collections.defaultdict(list)
    for (rule, where), given in table.items():
        path, _, line = where.rpartition(":")
        by_line[(rule, line)].append(path)
    judged, seen = [], set()
    for finding in default:
        key = (finding["code"], finding["path"], finding["line"])
        if key in seen:
            continue
        seen.add(key)
        inside = finding["path"].split("/", 1)[1]
        given = [v for path in by_line.get((finding["code"], str(finding["line"])), ())
                 if inside == path or inside.endswith("/" + path)
                 for v, text in table[(finding["code"], f"{path}:{finding['line']}")]
                 if not args.same_root or judged_root(finding, text)]
        if given:
            judged.append((finding, given))
    every = [v for _, given in judged for v in given]
    if not every:
        print("no verdict matches a default finding of the report", file=sys.stderr)
        return 1
    real = sum(v.startswith("R") for v in every)
    per_step = sum(v == "R P" for v in every)
    print(f"{len(default)} default findings, {len(judged)} with verdicts, {len(every)} verdicts: "
          f"real {real} ({real / len(every):.1%}), real and per step {per_step} ({per_step / len(every):.1%})")
    mean_real = sum(sum(v.startswith("R") for v in g) / len(g) for _, g in judged) / len(judged)
    mean_step = sum(sum(v == "R P" for v in g) / len(g) for _, g in judged) / len(judged)
    print(f"per finding: real {mean_real:.1%}, real and per step {mean_step:.1%}")
    ranked = sorted(judged, key=lambda item: -sum(v != "R P" for v in item[1]) / len(item[1]))
    for finding, given in ranked[:args.worst]:
        other = collections.Counter(v for v in given if v != "R P").most_common(1)
        print(f"  {finding['code']} {finding['path']}:{finding['line']} {finding['function']}: "
              f"{len(given)} verdicts, {other[0][0] if other else 'R P'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
