"""What a file's code does with the capitalized names it mentions: the per-file fact that
platform_built.built_elsewhere reads instead of parsing the files that name a candidate again.

`name_uses(tree, text)` is one flat tuple, `(*failing, None, *built)`: `failing`, the names
with at least one mention that may hand a class on (a value, a base, a rebinding,
`import C as D`, a string naming it outside `__all__` or a type test); `built`, of the others,
those constructed (`C(...)`, `C.from_config(...)`), each followed by the lines it is built on
(`name, line, line, name, line`). Each part sorted, of the interned names. A name the code
mentions only quietly (an import, an annotation, a type test, `__all__`) is not kept, nor is
one only in comments: how many files name a class is read from the texts, as before (keeping
every capitalized word of every file held ~2 MB more through the run, whose peak has no room).
"""

from __future__ import annotations

import ast
import codecs
import re

from .nodewalk import nodes_breadth_first

_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
CAPITALIZED = re.compile(r"\b[A-Z]\w*")  # constructions are capitalized (loops.py)
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)


def name_uses(tree: ast.Module, text: str) -> tuple | None:
    """The fact of one parsed file (module docstring); None when the file declares another
    encoding than UTF-8 (the pass reads the text as UTF-8: it then parses it, as before)."""
    if not text.isascii() and _other_encoding(text):
        return None
    return uses_in(tree, None)


def uses_in(tree: ast.Module, shorts: set | None) -> tuple:
    """`name_uses` of the names in `shorts` (None: every capitalized name)."""
    failing: set[str] = set()
    lines: dict[str, list] = {}
    for short, ok, line in mentions(tree, shorts):
        if ok is False:
            failing.add(short)
        elif ok:
            lines.setdefault(short, []).append(line)
    built: list = []
    for short in sorted(lines.keys() - failing):
        built.append(short)
        built.extend(lines[short])
    return (*sorted(failing), None, *built)


def each_use(uses: tuple):
    """(name, None) for each failing name, then (name, [lines]) for each built one."""
    failing, current = True, None
    for item in uses:
        if item is None:
            failing = False
        elif failing:
            yield item, None
        elif type(item) is str:
            if current is not None:
                yield current
            current = (item, [])
        else:
            current[1].append(item)
    if current is not None:
        yield current


def _other_encoding(text: str) -> bool:
    """Does the file declare an encoding other than UTF-8 (PEP 263: the first two lines)?"""
    for line in text.split("\n", 2)[:2]:
        match = _COOKIE.match(line)
        if match:
            try:
                return codecs.lookup(match.group(1)).name != "utf-8"
            except LookupError:
                return True
        if line.strip() and not line.lstrip().startswith("#"):
            return False
    return False


_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # 3.12's `type X = ...`: its name is a store
_LEAVES = frozenset({ast.Name, ast.Attribute, ast.Constant})  # what a mention can be
_WANTED = _LEAVES | {ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign, ast.Call, ast.Assign, ast.ClassDef,
                     ast.ImportFrom} | ({_TYPE_ALIAS} if _TYPE_ALIAS else set())


def _ids(node) -> list[int]:
    """The ids of the names, attributes and constants under `node` (itself included)."""
    return [id(n) for n in nodes_breadth_first(node, _LEAVES)]


def _named(short: str, shorts: set | None) -> bool:
    if shorts is None:  # a capitalized word (`CAPITALIZED`): what a construction is called
        # (the first letter tested first: most names are lower case, and a match costs more)
        return "A" <= short[:1] <= "Z" and CAPITALIZED.fullmatch(short) is not None
    return short in shorts


def mentions(tree: ast.Module, shorts: set | None):
    """(name, kind, line) for each mention of one of `shorts` (None: of every capitalized
    name): kind True for a construction,
    None for a mention that cannot hand the class on, False for anything else. One walk of the
    tree for the nodes it reads (the annotations', type tests' and bases' walks are short)."""
    quiet: set[int] = set()  # nodes under annotations, type tests and `__all__`
    calls: dict[int, ast.Call] = {}  # id(func), id(a called attribute's owner) -> the call
    bases: set[int] = set()
    nodes = nodes_breadth_first(tree, _WANTED)
    for node in nodes:
        kind = type(node)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    quiet.update(_ids(arg.annotation))
            if node.returns is not None:
                quiet.update(_ids(node.returns))
        elif kind is ast.AnnAssign:
            quiet.update(_ids(node.annotation))
        elif kind is ast.Call:
            calls[id(node.func)] = node
            if type(node.func) is ast.Attribute:  # `C.from_config(...)`: an alternative constructor
                calls[id(node.func.value)] = node
            if type(node.func) is ast.Name and node.func.id in _TYPE_TESTS and len(node.args) == 2:
                quiet.update(_ids(node.args[1]))
        elif kind is ast.Assign and any(type(t) is ast.Name and t.id == "__all__" for t in node.targets):
            quiet.update(_ids(node.value))
        elif kind is ast.ClassDef:
            for base in node.bases:
                bases.update(_ids(base))
    for node in nodes:
        kind = type(node)
        if kind is ast.ImportFrom:  # `import C as D`: built under another name
            for alias in node.names:
                if _named(alias.name, shorts) and alias.asname not in (None, alias.name):
                    yield alias.name, False, node.lineno
            continue
        if kind is ast.Name:
            short = node.id
        elif kind is ast.Attribute:
            short = node.attr
        elif kind is ast.Constant:
            if type(node.value) is not str:
                continue
            # `"C"` or `"path.to.C"`: a name has no dot, so the one it can be is after the last
            short = node.value.rpartition(".")[2]
            if _named(short, shorts):
                yield short, None if id(node) in quiet else False, node.lineno
            continue
        elif kind is _TYPE_ALIAS:
            if type(node.name) is ast.Name and _named(node.name.id, shorts):
                yield node.name.id, False, node.lineno  # a rebinding
            continue
        else:
            continue
        if not _named(short, shorts):
            continue
        if id(node) in quiet and id(node) not in bases:
            yield short, None, node.lineno
        elif type(node.ctx) is ast.Load and id(node) not in bases and id(node) in calls:
            yield short, True, calls[id(node)].lineno  # `C(...)`
        else:
            yield short, False, node.lineno
