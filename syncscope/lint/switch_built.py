"""Classes built only under a switch that is off by default: their methods never run by default.

    class SpCheck(msgspec.Struct):               # "Debug tally" over one forward's layers
        def compare(self, shard, *, q, keys, values, mask, out):
            self.identical += int(torch.equal(mine, out))

    sp_check = None
    if envs.SGLANG_DIFFUSION_DEBUG_COSMOS3_MULTIVIEW_SP_CHECK:   # a debug switch: cold
        sp_check = SpCheck()                     # the only construction in the tree
    ...
    if sp_check is not None:                     # in another function, handed `sp_check`
        sp_check.compare(shard, q=q, ...)

(SGLang 0.5.23's Cosmos3 sequence-parallel check.) The line that builds the class is cold for a
switch, but the call of its method is not: it tests a parameter, and the walk followed it into
`compare`, whose syncs then counted per step. optin.py takes such classes out for a bool field
that defaults to False; here the switch is any the lint already decides is off by default on a
line: a debug or check switch (branches.Conditions: `debug switch`, `check switch`) or an
environment switch the tree declares off and never sets (env_switches.py). The facts, about code:
* The class's short name names one class of the tree, and no class of the tree names it as a
  base (a subclass's objects run its methods wherever they are built).
* Every construction of the name in the tree's text (`Name(`, not `class Name(`; also a call of
  its attribute, `Name.make(...)`, which may build one) is on such a line, and there is at least
  one; no text hands the class on as a value to be called later (a
  keyword or a binding `= Name` with no call or attribute after it, or `(Name,` / `(Name)` as a
  first argument: a factory, a registry).
Then the class's methods are cold, saying which switch builds it; their calls and syncs count
for no caller (reachability.cold_calls_removed), as optin.py's do. Lines cold for any other
reason (a platform, a None-guard, start-up, an event) do not count here: a class built once at
start-up still serves every step.
"""

from __future__ import annotations

import bisect
import re

from .optin import mark_methods

_CALLED = re.compile(r"(?<!class )\b([A-Z]\w*)\s*\(")
# a switch the lint decides is off wherever it is read: branches.Conditions' debug and check
# switches, env_switches.py's environment switches
_SWITCH = re.compile(r"^(?:debug switch|check switch)|an environment switch the tree declares off")


def _switch_spans(results: dict, decided: dict) -> dict[str, list]:
    """{path: [(start, end, why)]} of the lines cold for an off switch."""
    found: dict[str, list] = {}
    for path, result in results.items():
        for start, end, why in tuple(getattr(result, "branch_cold", ()) or ()) + tuple(decided.get(path, ())):
            if _SWITCH.search(why):
                found.setdefault(path, []).append((start, end, why))
    return found


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def switch_built_lines(program, results: dict, decided: dict, texts) -> dict[str, list]:
    """{path: [(start, end, why)]}: the methods of the classes built only on lines cold for an
    off switch (`decided`: callguards.decided_lines' tables so far)."""
    spans = _switch_spans(results, decided)
    if not spans or texts is None:
        return {}
    by_short: dict[str, list] = {}
    for cls in program.classes:
        by_short.setdefault(cls.rpartition(".")[2], []).append(cls)

    def under(path: str, line: int) -> str | None:
        return next((why for start, end, why in spans.get(path, ()) if start <= line <= end), None)

    def calls(text: str) -> tuple:
        """(name, line) of each call of a capitalized name."""
        if not any(c.isupper() for c in text):
            return ()
        starts = _line_starts(text)
        return tuple((m.group(1), bisect.bisect_right(starts, m.start())) for m in _CALLED.finditer(text))

    made = texts.answers("switch-built-calls", "v1", sorted(spans), calls)
    if made is None:
        return {}
    candidates: dict[str, set] = {}
    for path, found in made.items():
        for name, line in found:
            if len(by_short.get(name, ())) == 1 and (why := under(path, line)):
                candidates.setdefault(name, set()).add(why)
    based = {base.rpartition(".")[2] for info in program.classes.values() for base in info.get("bases", ())}
    names = sorted(set(candidates) - based)
    if not names:
        return {}
    words = "|".join(map(re.escape, names))
    # a construction, or a call of the class's attribute (a classmethod may build one: `cls()`)
    built = re.compile(r"(?<!class )\b(" + words + r")\s*(?:\(|\.\s*\w+\s*\()")
    # handed on as a value: `= Name` with nothing called or read after it, `(Name,` / `(Name)`
    handed = re.compile(r"(?:=\s*|\(\s*)(" + words + r")\b(?!\s*[(.\[\w])")

    def uses(text: str) -> tuple:
        if not any(name in text for name in names):
            return ()
        starts = _line_starts(text)
        found = [(m.group(1), bisect.bisect_right(starts, m.start()), True) for m in built.finditer(text)]
        found += [(m.group(1), 0, False) for m in handed.finditer(text) if _handed(text, m)]
        return tuple(found)

    every = texts.answers("switch-built-uses", tuple(names), sorted(results), uses)
    if every is None:
        return {}
    kept = set(names)
    for path, found in every.items():
        for name, line, call in found:
            if not call or under(path, line) is None:
                kept.discard(name)
    out: dict[str, list] = {}
    for name in sorted(kept):
        cls = by_short[name][0]
        why = f"`{name}` is built only where a switch is off by default: {sorted(candidates[name])[0]}"
        mark_methods(program, results, cls, why, out)
    return out


def _handed(text: str, match) -> bool:
    """Whether `match` (of `handed`) passes the class as a value: a keyword or a binding (`=`,
    not `==`, an annotation's default), or the first argument of a call (`(Name,`, `(Name)`)."""
    before = text[max(0, match.start() - 1):match.start() + 1]
    if text[match.start()] == "=":
        return before[:1] not in ("=", "!", "<", ">")
    return True
