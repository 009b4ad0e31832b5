"""`# noqa: SYN101` and `# syncscope: ignore[SYN101] reason`, and which of them did nothing.

Comments are found with a regular expression on the raw lines rather than the tokenizer: only
lines that mention `noqa` or `syncscope:` are looked at, so clean files pay nothing. (A `# noqa`
inside a string literal would count too; that costs at most a suppressed finding.)"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A code is a whole word: `SYN2O1` (letter O) is one unknown code, warned about, not `SYN2` (which
# would suppress every SYN2xx rule) followed by junk (issue 28).
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z][A-Za-z0-9]*(?:[\s,]+[A-Za-z][A-Za-z0-9]*)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*syncscope:\s*ignore(?:\[(?P<codes>[^\]]*)\])?(?P<reason>[^#]*)")
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass
class Suppression:
    line: int
    codes: frozenset[str] | None  # None: every code
    style: str  # "noqa" or "ignore"
    reason: str = ""

    def covers(self, code: str) -> bool:
        return self.codes is None or any(code.startswith(c) for c in self.codes)


_ANY = re.compile(r"noqa|syncscope:", re.IGNORECASE)
_ANY_BYTES = re.compile(rb"noqa|syncscope:", re.IGNORECASE)


def may_have_suppressions(data: bytes) -> bool:
    return _ANY_BYTES.search(data) is not None


def parse_suppressions(text: str) -> dict[int, list[Suppression]]:
    found: dict[int, list[Suppression]] = {}
    seen_lines: set[int] = set()
    for hit in _ANY.finditer(text):
        number = text.count("\n", 0, hit.start()) + 1
        if number in seen_lines:
            continue
        seen_lines.add(number)
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.start())
        line = text[start:] if end < 0 else text[start:end]
        if "#" not in line:
            continue
        lowered = line.lower()
        if "noqa" in lowered:
            match = _NOQA.search(line)
            if match:
                codes = match.group("codes")
                found.setdefault(number, []).append(
                    Suppression(number, frozenset(c.upper() for c in _CODE.findall(codes)) if codes else None, "noqa"))
        if "syncscope:" in line:
            match = _IGNORE.search(line)
            if match:
                codes = match.group("codes")
                parsed = frozenset(c.upper() for c in _CODE.findall(codes)) if codes else None
                found.setdefault(number, []).append(
                    Suppression(number, parsed or None, "ignore", match.group("reason").strip()))
    return found


def apply_suppressions(findings: list, suppressions: dict[int, list[Suppression]]):
    """Split findings into (kept, used suppression entries). A finding is suppressed by a comment
    on its own line or on the first or last line of its statement."""
    if not suppressions:
        return findings, set()
    kept = []
    used: set[tuple[int, int, str]] = set()  # (line, index of the suppression, code)
    for finding in findings:
        hit = False
        for line in dict.fromkeys((finding.line, finding.stmt_start, finding.stmt_end)):
            for index, suppression in enumerate(suppressions.get(line, ())):
                if suppression.covers(finding.code):
                    used.add((line, index, finding.code))
                    hit = True
        if not hit:
            kept.append(finding)
    return kept, used


def unknown_code(code: str) -> str | None:
    from .config import unknown_code as check  # the selectors' rule: a code or a prefix of codes

    return check(code)


def unused_suppressions(suppressions: dict[int, list[Suppression]], used: set[tuple[int, int, str]],
                        enabled) -> list[tuple[int, str]]:
    """(line, message) for each suppression that suppressed nothing. A bare `# noqa` is shared
    with other linters and codes of other tools are not ours, so neither is reported."""
    out = []
    for line, entries in suppressions.items():
        for index, suppression in enumerate(entries):
            hits = {code for (l, i, code) in used if l == line and i == index}
            if suppression.codes is None:
                if suppression.style == "ignore" and not hits:
                    out.append((line, "`# syncscope: ignore` suppresses nothing on this line"))
                continue
            for code in sorted(suppression.codes):
                style = "# noqa" if suppression.style == "noqa" else "# syncscope: ignore"
                if code.startswith("SYN") and unknown_code(code):  # a typo suppresses nothing: say so
                    out.append((line, f"`{style}` of {unknown_code(code)}"))
                    continue
                if not code.startswith("SYN") or not enabled(code):
                    continue
                if not any(h.startswith(code) for h in hits):
                    out.append((line, f"unused suppression `{style}` of {code}"))
    return out
