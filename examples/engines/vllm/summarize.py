"""Print a report's in-scope sync sites, one line each, with vLLM's paths made short:

    python summarize.py reports/gdn_builder.json

`vllm/v1/attention/backends/gdn_attn.py:258  repeat_interleave x1  GDNAttentionMetadataBuilder.build  <source>`;
for a site in a helper, the first vLLM frame above it that is not the helper is given too.
Exit 0; a missing or unreadable report: one line on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys


def short(path: str) -> str:
    marker = "site-packages/"
    return path.split(marker, 1)[1] if marker in path else path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: summarize.py REPORT.json", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"summarize: cannot read {argv[0]}: {exc}", file=sys.stderr)
        return 2
    sites = [s for s in report.get("sites", []) if s.get("in_scope")]
    print(f"{argv[0]}: {len(sites)} in-scope site(s), {sum(s['count'] for s in sites)} sync(s); exit code {report.get('exit_code')}")
    for s in sorted(sites, key=lambda s: (short(s["path"]), s["line"])):
        caller = ""
        for frame in s.get("stack", [])[1:]:
            if "vllm/" in frame["path"] and frame["path"] != s["path"]:
                caller = f"  (from {short(frame['path'])}:{frame['line']} {frame['function']})"
                break
        print(f"  {short(s['path'])}:{s['line']}  {s['kind']} x{s['count']}  {s['function']}  | {s['source'].strip()}{caller}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
