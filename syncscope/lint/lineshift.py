"""Reusing the whole-program pass's output after an edit that only moved lines.

The pass (wholeprogram.py) costs seconds on a big tree, and its cached output is keyed by every
file's bytes, so any edit of a staged file (a comment appended, a line inserted in a body)
reran it over every file's facts. Most such edits leave the edited file's analysis the same
up to where its lines are: every call, root, range and finding is still there, in the same
order, with the same columns, names and values, only on other lines. The pass reads lines only
to place things and to compare lines of one file (a call under a range, the call nearest before
a line), never as numbers to add, so its output for the edited tree is its output for the old
tree with that file's lines moved the same way.

`line_map` decides that an edit is such an edit: the old and the new result, with every line
taken out, must be equal, and the lines taken out must pair up as one strictly increasing map
(old line -> new line). Where a line sits is written out per field below; a field not listed
must be equal as it is, so a line this module does not know of makes the two differ and the
pass runs as before (slower, never wrong). `shift_solution` moves the old output's lines of the
edited files by their maps, and gives None (run the pass) when a line it must move is not one
the map knows, or a message names one of them in a way it does not rewrite.
"""

from __future__ import annotations

import dataclasses
import re

from .wholeprogram import MAX_CHAIN

LINE = object()  # where a line was taken out


def line_map(old, new) -> dict[int, int] | None:
    """old line -> new line when `new` (a file's fresh RawResult, with facts) is `old` with its
    lines moved and nothing else changed; None otherwise."""
    if old.internal_error or new.internal_error or not (old.has_facts and new.has_facts):
        return None
    old_lines: list[int] = []
    new_lines: list[int] = []
    for field in dataclasses.fields(old):
        name = field.name
        # `imported_classes` is what a cached result keeps of `exports` (compared below), empty
        # in a fresh one: it told every edit apart, and each reran the pass (~14 s on vLLM)
        if name in ("has_facts", "imported_classes"):
            continue
        strip = _STRIP.get(name)
        a, b = getattr(old, name), getattr(new, name)
        if strip is None:
            if a != b:
                return None
        elif strip(a, old_lines) != strip(b, new_lines):
            return None
    if len(old_lines) != len(new_lines):
        return None
    mapping: dict[int, int] = {}
    for a, b in zip(old_lines, new_lines):
        if mapping.setdefault(a, b) != b:
            return None
    # strictly increasing: lines keep their order, so comparisons of lines within the file
    # (ranges, "the call nearest before") decide the same way
    last = None
    for a in sorted(mapping):
        if last is not None and mapping[a] <= last:
            return None
        last = mapping[a]
    return mapping


# -- where the lines are in a RawResult ------------------------------------------------------
# Each strip returns the value with its lines replaced by LINE (dicts whose keys hold lines as
# lists of items, in order) and appends the lines to `out` in the same order for both results.

def _line(value, out: list):
    if type(value) is not int:
        return ("not a line", value)  # never equal to LINE: the two results then differ
    out.append(value)
    return LINE


def _record(fields: tuple):
    """A named tuple with line fields; any other field compared as it is."""
    def strip(record, out: list):
        if not hasattr(record, "_fields"):
            return ("not a record", record)
        return tuple(_line(value, out) if name in fields else value
                     for name, value in zip(record._fields, record))
    return strip


_finding = _record(("line", "stmt_start", "stmt_end"))
_call = _record(("line", "stmt_start", "stmt_end"))
_root = _record(("line", "stmt_start", "stmt_end"))


def _positions(*lines: int):
    """A plain tuple whose items at `lines` are lines."""
    def strip(item, out: list):
        if not isinstance(item, tuple) or len(item) <= max(lines):
            return ("not a tuple", item)
        return tuple(_line(value, out) if i in lines else value for i, value in enumerate(item))
    return strip


def _each(strip):
    def each(items, out: list):
        if not isinstance(items, (list, tuple)):
            return ("not a sequence", items)
        return [strip(item, out) for item in items]
    return each


def _values(strip):
    """A dict whose values hold lines (keys compared as they are)."""
    def values(table, out: list):
        if not isinstance(table, dict):
            return ("not a dict", table)
        return [(key, strip(value, out)) for key, value in table.items()]
    return values


def _loop(item, out: list):
    """loops.py's loop: (first line, last line, names steps, parent index, its own ranges, over
    data)."""
    if not isinstance(item, tuple) or len(item) != 6 or not isinstance(item[4], tuple):
        return ("not a loop", item)
    start, end, steps, parent, owned, items = item
    return (_line(start, out), _line(end, out), steps, parent, _each(_positions(0, 1))(owned, out), items)


def _keyed_by_line_column(table, out: list):
    """{(line, column): value}: the lines are in the keys."""
    if not isinstance(table, dict):
        return ("not a dict", table)
    return [(_positions(0)(key, out), value) for key, value in table.items()]


def _function_facts(facts, out: list):
    """facts.py's per-function dict: its `line`, and its calls' lines; the rest as it is."""
    if not isinstance(facts, dict):
        return ("not a dict", facts)
    stripped = []
    for key, value in facts.items():
        if key == "line":
            value = _line(value, out)
        elif key == "calls":
            value = _each(_call)(value, out)
        stripped.append((key, value))
    return stripped


def _class_facts(info, out: list):
    if not isinstance(info, dict):
        return ("not a dict", info)
    return [(key, _line(value, out) if key == "line" else value) for key, value in info.items()]


def _suppressions(table, out: list):
    """{line: [Suppression(line, ...)]}."""
    if not isinstance(table, dict):
        return ("not a dict", table)
    stripped = []
    for line, items in table.items():
        stripped.append((_line(line, out), [
            (_line(s.line, out), dataclasses.replace(s, line=0)) if dataclasses.is_dataclass(s) else ("?", s)
            for s in items]))
    return stripped


def _error_paths(value, out: list):
    """(functions whose every path raises, {function: [(start, end, line)]}); the same shape
    for `cuda_tests` (functions that tell where their inputs live, and the blocks they decide)."""
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict)):
        return ("not error paths", value)
    return (value[0], _values(_each(_positions(0, 1, 2)))(value[1], out))


def _const_guards(table, out: list):
    """{function: (parameters, [(start, end, test)])}."""
    def entry(value, out):
        if not (isinstance(value, tuple) and len(value) == 2):
            return ("not a guard entry", value)
        return (value[0], _each(_positions(0, 1))(value[1], out))
    return _values(entry)(table, out)


def _none_sources(sources, out: list):
    """confignone's summary of what a name may hold: None, "nonnone", or sources, of which
    `("call", line, column, element)` holds a line (`"nonnone"`, `("none", tests)` none)."""
    if not isinstance(sources, tuple):
        return sources
    return tuple(("call", _line(s[1], out), *s[2:]) if isinstance(s, tuple) and s[:1] == ("call",) else s
                 for s in sources)


def _none_config(table, out: list):
    """confignone.file_none_config: {"guards": {function: [(start, end, parameter, test)]},
    "returns": {function: "nonnone" or (element summaries)}, "args": {(line, column): {at:
    summary}}}."""
    if not isinstance(table, dict) or set(table) - {"guards", "returns", "args"}:
        return ("not a none-config table", table)
    guards = _values(_each(_positions(0, 1)))(table.get("guards", {}), out)
    returns = [(name, tuple(_none_sources(e, out) for e in value) if isinstance(value, tuple) else value)
               for name, value in table.get("returns", {}).items()]
    args = [(_positions(0)(key, out), [(at, _none_sources(summary, out)) for at, summary in found.items()])
            for key, found in table.get("args", {}).items()]
    return guards, returns, args


def _switch_facts(facts, out: list):
    """switch_devices.switch_facts' tuple: the spans of its last table, (first line, last line,
    requirements) of each `if` body on a switch, hold lines (env_switches.env_facts)."""
    if not isinstance(facts, tuple) or len(facts) != 5:
        return ("not switch facts", facts)
    *tables, spans = facts
    return (*tables, _each(_positions(0, 1))(spans, out))


def _name_uses(uses, out: list):
    """name_uses.py's flat tuple: its lines are its numbers (the built names' lines)."""
    if not isinstance(uses, tuple):
        return ("not name uses", uses)
    return tuple(_line(v, out) if type(v) is int else v for v in uses)


_STRIP = {
    "findings": _each(_finding),
    "functions": _values(_function_facts),
    "classes": _values(_class_facts),
    "roots": _values(_each(_root)),
    "suppressions": _suppressions,
    "branch_cold": _each(_positions(0, 1)),
    "dispatch": _values(_each(_positions(0))),
    "guards": _values(_each(_positions(0, 1))),
    "error_paths": _error_paths,
    "cuda_tests": _error_paths,
    "name_guards": _values(_each(_positions(0, 1))),
    "flag_guards": _values(_each(_positions(0, 1))),
    "flag_passes": _keyed_by_line_column,
    "const_guards": _const_guards,
    "const_literals": _keyed_by_line_column,
    "const_passes": _keyed_by_line_column,
    "loops": _values(_each(_loop)),
    "straight": _values(_each(_positions(0, 1))),
    "spans": _values(_positions(0, 1)),
    "memos": _values(_each(_positions(0, 1))),
    "none_config": _none_config,
    "name_uses": _name_uses,
    "switch_facts": _switch_facts,
    "element_calls": _values(_each(_positions(0))),  # element_receivers.py: (line, method, class)
}


# -- moving the pass's output ----------------------------------------------------------------

class _Unmoved(Exception):
    """A line of an edited file that the map does not know: the pass must run."""


def shift_solution(solved: tuple, maps: dict[str, dict[int, int]]) -> tuple | None:
    """The whole-program pass's output (wholeprogram.solve) for the tree in which each file of
    `maps` had its lines moved by its map, from its output for the tree before; None when it
    cannot be told without running the pass."""
    extra, fed, host_origins, scope = solved
    try:
        moved_extra = {path: [_move_finding(path, f, maps) for f in findings] for path, findings in extra.items()}
        moved_origins = {(path, _move_finding(path, f, maps)) for path, f in host_origins}
        functions = scope.get("functions")
        if functions is not None:
            functions = {name: _move_steps(why, maps) for name, why in functions.items()}
        cold = {}
        for path, ranges in scope.get("cold", {}).items():
            cold[path] = [_move_range(r, maps.get(path)) for r in ranges]
    except _Unmoved:
        return None
    return moved_extra, fed, moved_origins, {**scope, "functions": functions, "cold": cold}


def _moved(mapping: dict[int, int] | None, line: int) -> int:
    if mapping is None:
        return line
    try:
        return mapping[line]
    except KeyError:
        raise _Unmoved from None


# constargs.ruled_out's reason names the guarded function and the guard's line in its file
_RULED_LINE = re.compile(r"the branch of `([^`]+)` that syncs \(line \d+\)")


def _move_finding(path: str, finding, maps: dict):
    mapping = maps.get(path)
    chain = finding.chain
    moved_chain = tuple(step._replace(line=_moved(maps.get(step.path), step.line)) if step.path in maps else step
                        for step in chain)
    message = finding.message
    if chain and chain[-1].path in maps:
        # wholeprogram._message: "... down: <root path>:<root line> <note> (via ...)"
        old = f" down: {chain[-1].path}:{chain[-1].line} "
        if message.count(old) != 1:
            raise _Unmoved
        message = message.replace(old, f" down: {moved_chain[-1].path}:{moved_chain[-1].line} ")
    ruled = _RULED_LINE.search(finding.cold) if finding.cold else None
    if ruled is not None:
        # the guard's line is in the file of the function it names, a step of the chain (one a
        # long chain may have left out): when that may be an edited file, not rewritten here
        guarded = [step for step in chain if step.function.rsplit(".", 1)[-1] == ruled.group(1)]
        if len(chain) >= MAX_CHAIN or not guarded or any(step.path in maps for step in guarded):
            raise _Unmoved
    if finding.per_step:  # filled later by the engine's Scope; never in the pass's output
        raise _Unmoved
    return finding._replace(line=_moved(mapping, finding.line), stmt_start=_moved(mapping, finding.stmt_start),
                            stmt_end=_moved(mapping, finding.stmt_end), chain=moved_chain, message=message)


def _move_steps(why, maps: dict):
    """reachability's path from a root: ((function, path, line of its definition), ...)."""
    if why is None:
        return None
    return tuple((name, path, _moved(maps.get(path), line)) if path in maps else (name, path, line)
                 for name, path, line in why)


def _move_range(item, mapping):
    if mapping is None:
        return item
    start, end, why = item
    return (_moved(mapping, start), _moved(mapping, end), why)
