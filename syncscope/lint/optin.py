"""Classes built only behind an opt-in switch: their code is not the default configuration's path.

    @dataclass
    class CompilationConfig:
        cudagraph_mm_encoder: bool = False          # opt-in; nothing in the tree sets it

    def _create_manager(self):
        if not (self.compilation_config.cudagraph_mm_encoder and self.supports_mm_inputs):
            return None
        return EncoderCudaGraphManager(...)         # the only construction

(vLLM's encoder CUDA graphs: the manager copies host-only fields to the device, and its methods
are where the models' opt-in helpers run.) The facts, about code:
* A switch is off by default when a top-level class declares it `F: bool = False` at its top
  level (or with the type wrapped, its first argument `bool`: `F: Optional[bool] = False`,
  `F: Annotated[bool, "help"] = False` or an alias of it over several lines, SGLang 0.5.23's
  `F: A[bool, "..."] = False`), and no file gives it anything else: no other declaration of F
  with another default, no attribute store `.F = ...`, no keyword `F=` other than `False`, no
  string key `"F"` given a value in code (a dict of overrides, `d["F"] = x`, `setattr`; a JSON
  `{"F": true}` in a docstring is the user's opt-in, not code). Read as text, from each linted
  file's words (`switch_words`, a per-file fact).
* A line is off by default when it lies in the body of an `if` (or the chosen arm of `a if t
  else b`) whose test holds only if a read of such a switch does (`<path>.F`, also of what a
  getter returns, SGLang's `get_disagg().F`; the switch itself
  or a conjunct of an `and`, directly or through a local bound once in the function to such a
  test, anywhere in the function), or after a top-level `if not <such a test>:` whose body ends in `return` / `raise`.
* A class every resolved construction of which in the tree is on such a line (at least one),
  and that no class of the tree names as its base, is not built by default: its whole body is
  cold, saying which switch is off. Its methods' calls and syncs then count for no caller
  (reachability.cold_calls_removed), as for any cold line. switch_built.py does the same for a
  class built only on lines cold for a debug, check or environment switch.
"""

from __future__ import annotations

import ast
import re

from .text_scans import LazyTexts, TextScans
from .nodewalk import every_node


_DECLARED = re.compile(r"^    (\w+)\s*:\s*bool\s*=\s*(\w+)\s*(?:#.*)?$", re.M)
# the same switch with its type wrapped: `F: Optional[bool] = False`, and the annotated form
# (`F: Annotated[bool, "help"] = False` or an alias of it, `F: A[bool, Arg(...)] = False`, over
# several lines: SGLang 0.5.23 declares its server arguments so). The wrapper's first argument
# is `bool`, the default is the literal; brackets nest one level (`Arg(choices=[...])`)
_WRAPPED = re.compile(r"^    (\w+)\s*:\s*[\w.]+\[\s*bool\s*(?:,(?:[^\[\]]|\[[^\[\]]*\])*)?\]\s*=\s*(\w+)\s*(?:#.*)?$",
                      re.M)
_OTHER_DECL = re.compile(r"^\s*(\w+)\s*:[^=\n]*=\s*(?!False\b)\S", re.M)
_STORED = re.compile(r"\.(\w+)\s*(?:=(?!=)|[-+*/|&]=)")
_KEYWORD = re.compile(r"[(,]\s*(\w+)\s*=(?!=)(?!\s*False\b)")
# a key given a value in code (`{"F": x}`, `d["F"] = x`, `setattr(c, "F", x)`); JSON in a docstring
# (`'{"F": true}'`, the user's opt-in) is no store
_STRING = re.compile(r"[\"'](\w+)[\"']\s*(?::(?!\s*(?:False|false|true)\b)|\]\s*=(?!=))|setattr\([^,]+,\s*[\"'](\w+)[\"']")


def switch_words(text: str | None) -> tuple | None:
    """What `off_switches` reads of one file's text, a per-file fact (the pass then reads no
    file for it): (the names declared `F: bool = False`, the names given anything else, those
    given a value as a string key or by `setattr`, and per name stored as `.F = ...`: the name,
    its stores, those on `self`, flat). None for a file that cannot be read: it may set any
    switch."""
    if text is None:
        return None
    declared, other, keyed = set(), set(), set()
    stored: dict[str, tuple[int, int]] = {}
    for pattern in (_DECLARED, _WRAPPED) if "bool" in text else ():  # most files declare none
        for name, default in pattern.findall(text):
            (declared if default == "False" else other).add(name)
    for pattern in (_OTHER_DECL, _STORED, _KEYWORD, _STRING):
        for match in pattern.finditer(text):
            other.update(n for n in match.groups() if n)
            if pattern is _STORED:
                count, own = stored.get(name := match.group(1), (0, 0))
                stored[name] = (count + 1, own + (text[match.start() - 4:match.start()] == "self"))
            elif pattern is _STRING:
                keyed.update(n for n in match.groups() if n)
    flat = tuple(item for name in sorted(stored) for item in (name, *stored[name]))
    return tuple(sorted(declared)), tuple(sorted(other)), tuple(sorted(keyed)), flat


def off_switches(results: dict, texts: TextScans, stores: dict | None = None,
                 wanted=frozenset()) -> tuple[frozenset, LazyTexts | dict]:
    """(the switches off by default, the files that read one as `.F`: their text is read on
    first use), from the files' `switch_words`. Fills `stores` with "counts" (name -> `.F =`
    stores in the tree), "own" (those on `self`) and "keyed" (names given a value as a string
    key or by `setattr`) when every file was read (env_switches.py), for the names in `wanted`
    only (every stored name of a tree is a table of tens of thousands of strings held through
    the pass). `texts`: the files' texts, for the reads of a switch (text_scans.py)."""
    declared, other = set(), set()
    counts: dict[str, int] = {}
    own: dict[str, int] = {}  # the stores among them on `self`
    keyed: set[str] = set()
    if stores is None:
        wanted = frozenset()
    for result in results.values():
        words = getattr(result, "switch_words", None)
        if not words:  # a file not read may set any switch
            return frozenset(), {}
        declared_here, other_here, keyed_here, stored = words
        declared.update(declared_here)
        other.update(other_here)
        if wanted:
            keyed.update(name for name in keyed_here if name in wanted)
            for index in range(0, len(stored), 3):
                if (name := stored[index]) in wanted:
                    counts[name] = counts.get(name, 0) + stored[index + 1]
                    if stored[index + 2]:
                        own[name] = own.get(name, 0) + stored[index + 2]
    if stores is not None:
        stores.update(counts=counts, own=own, keyed=frozenset(keyed))
    off = frozenset(declared - other)
    if not off:
        return off, {}
    # a read `.F` of one of them, as the whole word: one search, not a list of every attribute
    # the file reads
    read = re.compile(r"\.(?:" + "|".join(map(re.escape, sorted(off))) + r")\b")
    found = texts.answers("reads-switch", tuple(sorted(off)), results, lambda text: bool(read.search(text)))
    if found is None:  # a file not read may set any switch
        return frozenset(), {}
    return off, LazyTexts(texts, [path for path, reads in found.items() if reads])


def _switch(node, off: frozenset, tests: dict) -> str | None:
    """The off switch this test needs to hold, if any."""
    # `<path>.F`, or `get_disagg().F`: the switch read from what a getter of the configuration
    # returns (SGLang 0.5.23's namespaces); not `self.F`, a field of the class's own
    if isinstance(node, ast.Attribute) and node.attr in off \
            and isinstance(node.value, (ast.Attribute, ast.Name, ast.Call)) \
            and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
        return node.attr
    if isinstance(node, ast.Name):
        return tests.get(node.id)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return next((found for value in node.values if (found := _switch(value, off, tests))), None)
    return None


def _gated(function, off: frozenset) -> list[tuple[int, int, str]]:
    """(start, end, switch) of the lines of `function` that run only where a switch is on."""
    bound: dict[str, list] = {}
    for node in every_node(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.setdefault(node.id, []).append(node)
    tests = {}
    for stmt in every_node(function):  # a local bound once: its test, wherever it is bound
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and len(bound.get(stmt.targets[0].id, ())) == 1:
            found = _switch(stmt.value, off, tests)
            if found:
                tests[stmt.targets[0].id] = found
    out = []
    for node in every_node(function):
        if isinstance(node, (ast.If, ast.IfExp)):
            found = _switch(node.test, off, tests)
            body = node.body if isinstance(node, ast.If) else [node.body]
            if found:
                out.append((body[0].lineno, body[-1].end_lineno, found))
    for k, stmt in enumerate(function.body):
        if isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.test, ast.UnaryOp) \
                and isinstance(stmt.test.op, ast.Not) and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
            found = _switch(stmt.test.operand, off, tests)
            if found and k + 1 < len(function.body):
                out.append((function.body[k + 1].lineno, function.end_lineno, found))
    return out


def _gated_calls(text: str, off: frozenset) -> tuple[dict, list]:
    """({class name as called: [(line, switch or None)]}, the gated spans) of one file's calls
    of capitalized names (a class's construction)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}, []
    functions, reads, calls_made = [], [], []
    for node in every_node(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node)
        elif isinstance(node, ast.Attribute) and node.attr in off:
            reads.append(node.lineno)
        elif isinstance(node, ast.Call):
            calls_made.append(node)
    # a span needs a read of a switch (`_switch`) in the function, its decorators included: a
    # function with none on its lines has none (most functions of a file that reads one)
    spans = [span for node in functions
             if any(min([node.lineno] + [d.lineno for d in node.decorator_list]) <= line <= node.end_lineno
                    for line in reads)
             for span in _gated(node, off)]
    calls: dict[str, list] = {}
    for node in calls_made:
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if name[:1].isupper():
            switch = next((s for start, end, s in spans if start <= node.lineno <= end), None)
            calls.setdefault(name, []).append((node.lineno, switch))
    return calls, spans


def optin_lines(program, edges: dict, results: dict, texts: TextScans, switches=None) -> dict[str, list]:
    """{path: [(start, end, why)]}: the methods of the classes built only behind an off switch
    (`switches`: `off_switches`' answer, when the caller has it already)."""
    off, reading = switches if switches is not None else off_switches(results, texts)
    if not reading:
        return {}
    by_short: dict[str, list] = {}
    for cls in program.classes:
        by_short.setdefault(cls.rpartition(".")[2], []).append(cls)
    sites: dict[str, list] = {}  # class name -> [(path, line, switch or None)]
    gated = texts.answers("gated-calls", tuple(sorted(off)), reading, lambda text: _gated_calls(text, off)[0])
    if gated is None:  # a file that read a switch can no longer be read
        return {}
    for path, built in gated.items():
        for name, calls in built.items():
            if len(by_short.get(name, ())) == 1:
                sites.setdefault(name, []).extend((path, line, switch) for line, switch in calls)
    names = {name for name, calls in sites.items() if all(switch for _, _, switch in calls)}
    based = {base.rpartition(".")[2] for info in program.classes.values() for base in info.get("bases", ())}
    names -= based
    if not names:
        return {}
    # every construction in the tree, by its name as written (`Name(`): none elsewhere, at module level, by alias
    written = re.compile(r"(?<!class )\b(" + "|".join(sorted(map(re.escape, names))) + r")\s*\(")
    wanted = tuple(sorted(names))

    def constructions(text: str) -> tuple:
        if not any(name in text for name in wanted):
            return ()
        return tuple((match.group(1), text.count("\n", 0, match.start()) + 1) for match in written.finditer(text))

    built = texts.answers("constructions", wanted, results, constructions)
    if built is None:
        return {}
    for path, made in built.items():
        for name, line in made:
            if (path, line) not in {(p, l) for p, l, _ in sites.get(name, ())}:
                names.discard(name)
    found: dict[str, list] = {}
    for name in names:
        cls = by_short[name][0]
        switches = sorted({s for _, _, s in sites[name]})
        why = f"`{name}` is built only where `{'`, `'.join(switches)}` is on " \
              "(a bool field that defaults to False and that nothing in the tree sets)"
        mark_methods(program, results, cls, why, found)
    return found


def mark_methods(program, results: dict, cls: str, why: str, out: dict) -> None:
    """Every method of class `cls` marked cold with `why`: its lines, into `out` ({path: [(start,
    end, why)]}). Shared by the built-only-under-a-switch rules (here and switch_built.py)."""
    for qualname, path in program.path_of.items():
        if qualname.startswith(cls + ".") and qualname.count(".") == cls.count(".") + 1:
            span = (getattr(results[path], "spans", None) or {}).get(qualname)
            if span:
                out.setdefault(path, []).append((span[0], span[1], why))
