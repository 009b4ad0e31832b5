"""Human and machine output of a lint run: text (with a code frame), concise, json, and the
rule list that SARIF needs. SARIF and GitHub output live in `syncscope.report` (shared with the
runtime side)."""

from __future__ import annotations

import json
from collections import Counter
from typing import IO

from .catalog import CATALOG, DIAGNOSTICS

RULES_URL = "https://github.com/syncscope/syncscope/blob/main/rules/{code}.md"


def rule_name(code: str) -> str:
    return (CATALOG.get(code) or DIAGNOSTICS.get(code) or ("",))[0]


def sarif_rules() -> list[dict]:
    out = [{"id": code, "name": name, "short": summary, "help_uri": RULES_URL.format(code=code), "level": level}
           for code, (name, summary, level) in CATALOG.items()]
    out += [{"id": code, "name": name, "short": text, "level": level}
            for code, (name, text, level) in DIAGNOSTICS.items()]
    return out


def _marker(finding) -> str:
    return "[*] " if finding.fix == "safe" else ""


def write_concise(findings, stream: IO[str]) -> None:
    for f in findings:
        cold = f" [cold: {f.cold}]" if getattr(f, "cold", None) else ""
        cold += f" [{f.accepted}]" if getattr(f, "accepted", None) else ""
        stream.write(f"{f.site.path}:{f.site.line}:{f.column}: {f.code} {_marker(f)}{f.message}{cold}\n")


def chain_root(finding) -> str | None:
    """`path:line` of the sync a SYN601/SYN602 chain ends at (what groups its call sites)."""
    chain = getattr(finding, "chain", ())
    return f"{chain[-1][0]}:{chain[-1][1]}" if chain else None


def chain_steps(finding) -> list[dict]:
    return [{"path": p, "line": line, "function": function, "note": note}
            for p, line, function, note in getattr(finding, "chain", ())]


def _short_function(qualname: str) -> str:
    parts = qualname.split(".")
    # `Class.method` when the last but one part is a class (capitalized), else the function
    return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]


def scope_note(finding) -> str:
    """Why a finding counts: "per step: <root> (path:line) -> a() -> b()", or why it is cold."""
    cold = getattr(finding, "cold", None)
    if cold:
        return f"cold: {cold}"
    path = getattr(finding, "per_step", ())
    if not path:
        return ""
    root, root_path, root_line = path[0]
    via = "".join(f" -> {_short_function(q)}()" for q, _, _ in path[1:])
    return f"per step: from `{_short_function(root)}` ({root_path}:{root_line}){via}"


def scope_json(finding) -> dict:
    accepted = {"accepted": finding.accepted} if getattr(finding, "accepted", None) else {}
    cold = getattr(finding, "cold", None)
    if cold:
        return {"category": "cold", "cold": cold, **accepted}
    path = getattr(finding, "per_step", ())
    if not path:
        return accepted
    return {**accepted, "category": "per-step", "per_step": {
        "why": scope_note(finding),
        "root": {"function": path[0][0], "path": path[0][1], "line": path[0][2]},
        "path": [{"function": q, "path": p, "line": line} for q, p, line in path]}}


def write_text(findings, texts: dict[str, list[str]], stream: IO[str]) -> None:
    """Ruff-style: the location line, then the source line with a caret under the column. A
    chain's root is spelled out once: the first call site that reaches it gets the whole chain,
    the others one line naming it, and a closing list groups every call site by root."""
    roots: dict[str, list] = {}
    for f in findings:
        root = chain_root(f)
        if root is not None:
            roots.setdefault(root, []).append(f)
            if len(roots[root]) > 1:
                stream.write(f"{f.site.path}:{f.site.line}:{f.column}: {f.code} reaches the sync at {root} "
                             f"(chain shown above)\n")
                continue
        stream.write(f"{f.site.path}:{f.site.line}:{f.column}: {f.code} {_marker(f)}{f.message}\n")
        note = scope_note(f)
        if note:
            stream.write(f"    = {note}\n")
        if getattr(f, "accepted", None):
            stream.write(f"    = {f.accepted}\n")
        lines = texts.get(f.site.path)
        if not lines or not 0 < f.site.line <= len(lines):
            continue
        first = max(1, f.site.line - 1)
        last = min(len(lines), f.site.line + 1)
        width = len(str(last))
        pad = " " * width
        stream.write(f"{pad} |\n")
        for number in range(first, last + 1):
            stream.write(f"{str(number).rjust(width)} | {lines[number - 1].rstrip()}\n")
            if number == f.site.line:
                caret = " " * max(0, f.column - 1) + "^"
                stream.write(f"{pad} | {caret} {f.code}\n")
        stream.write(f"{pad} |\n\n")
    shared = {root: sites for root, sites in roots.items() if len(sites) > 1}
    if shared:
        stream.write("Syncs reached from several call sites:\n")
        for root, sites in sorted(shared.items(), key=lambda item: -len(item[1])):
            stream.write(f"  {root} ({sites[0].chain[-1][3]}): {len(sites)} call sites\n")
            for f in sites:
                stream.write(f"    {f.site.path}:{f.site.line} in {f.site.function}\n")
        stream.write("\n")


def write_json(findings, stream: IO[str]) -> None:
    data = [
        {
            "code": f.code,
            "name": rule_name(f.code),
            "message": f.message,
            "level": f.level,
            "path": f.site.path,
            "line": f.site.line,
            "column": f.column,
            "function": f.site.function,
            "source": f.site.source,
            "fingerprint": f.fingerprint,
            "fix": {"applicability": f.fix} if f.fix else None,
            **({"chain": chain_steps(f), "root": chain_root(f)} if getattr(f, "chain", ()) else {}),
            **scope_json(f),
        }
        for f in findings
    ]
    # One finding per line: readable, and written by json's C encoder (an indented dump goes
    # through the pure-Python one, a third of a cached whole-tree run on vLLM's 2,000 findings).
    stream.write("[\n" + ",\n".join(json.dumps(d) for d in data) + ("\n]\n" if data else "]\n"))


def write_statistics(findings, stream: IO[str]) -> None:
    counts = Counter(f.code for f in findings)
    fixable = {f.code for f in findings if f.fix == "safe"}
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        mark = "[*]" if code in fixable else "   "
        stream.write(f"{count:>6}\t{code}\t{mark} {rule_name(code)}\n")


def summary(run, findings, unsafe_fixes: bool = False) -> str:
    safe = sum(1 for f in findings if f.fix == "safe")
    unsafe = sum(1 for f in findings if f.fix == "unsafe")
    parts = [f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}"]
    # The unsafe ones are findings already counted, whose fixes `--fix` applies only with
    # `--unsafe-fixes` (Ruff's "hidden fixes"); once that flag is given they are plain fixable.
    fixable, hidden = (safe + unsafe, 0) if unsafe_fixes else (safe, unsafe)
    extra = []
    if fixable:
        extra.append(f"{fixable} fixable with `--fix`")
    if hidden:
        extra.append(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with `--unsafe-fixes`")
    if extra:
        parts.append(f" ({'; '.join(extra)})")
    parts.append(f" in {run.files} file{'s' if run.files != 1 else ''}"
                 f" ({run.parsed} analyzed, {run.cached} cached, {run.skipped} without torch code).")
    accepted = sum(1 for f in findings if getattr(f, "accepted", None))
    if accepted:
        parts.append(f" {accepted} of them inside blocks that accept their syncs (marked `accepted`).")
    hidden = getattr(run, "cold", 0) - sum(1 for f in findings if getattr(f, "cold", None))
    if hidden > 0:
        parts.append(f" {hidden} more in code that does not run every step (`--include-cold`).")
    return "".join(parts)
