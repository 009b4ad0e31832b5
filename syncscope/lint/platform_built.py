"""Classes built only where another platform runs: their methods never run on CUDA.

vLLM's `BatchedPrepareAndFinalize` is made in one place, under
`if current_platform.is_xpu() and moe.moe_backend == "batched_triton":` (a block branches.py
already knows never runs on CUDA); its `prepare` is still reached by name
(`self.prepare_finalize.prepare(...)` on a receiver of unknown class). An object exists only
where a line builds it, so when every line that names the class builds it under such a test,
no CUDA process holds one, and no call by name lands in its methods there.

The fact, as the whole-program pass decides it (`built_elsewhere`): a class of the tree
* with no subclass in the tree (a subclass's objects run its methods, built anywhere);
* with at least one construction (`C(...)`, or a call of an attribute of it, `C.from_config(...)`),
  every one on a line that is cold for a platform reason (`is false on CUDA`, `for another
  platform than CUDA`, ...) or in a file for another platform;
* named nowhere else in the tree in a way that could hand it on: every mention of its name in
  any file (found by a scan of the files' text, then read with `ast`) is such a construction, an
  import under its own name, an annotation, the class tested by `isinstance` / `issubclass`, or a string of
  `__all__`. A mention that keeps the class as a value (a registry, `partial(C, ...)`, a base of
  another class, a string naming its path that `importlib` may load) or rebinds its name leaves
  the class alone; so does a second class of the same name, whose constructions count too.
Only candidates are read: classes whose every constructing module has a platform-cold block or
is another platform's (from the per-file `makes`), and of those only the ones whose name at most
`MAX_NAMING_FILES` files mention (a name many files use is handed around, or shared by several
classes; reading every such file with `ast` cost ~15% of a whole-vLLM run).
"""

from __future__ import annotations

import ast
import re

from .source_texts import source_text

_PLATFORM_WORDS = ("another platform", "on CUDA")
_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_CAPITALIZED = re.compile(r"\b[A-Z]\w*")  # the candidates' names: constructions are capitalized (loops.py)
MAX_NAMING_FILES = 8  # a candidate named in more files than this is left alone (read no further)


def platform_reason(why: str | None) -> bool:
    """A cold line's reason that says it never runs on CUDA (branches.py, comparetests.py)."""
    return bool(why) and any(word in why for word in _PLATFORM_WORDS) and "true on CUDA" not in why


def built_elsewhere(program, results: dict, cold: dict, other_platform: dict, subclasses: dict,
                    sources: dict | None = None) -> frozenset:
    """The classes of the tree that only code for another platform builds (module docstring).
    `sources`: each linted path's file (the engine's absolute paths), else the path as it is."""
    path_of_module = {result.module: path for path, result in results.items() if result.module}
    builders: dict[str, set] = {}
    for path, result in results.items():
        for _maker, made in getattr(result, "makes", ()) or ():
            inner = program.chase(made, True)
            if inner is not None:
                builders.setdefault(inner, set()).add(path)

    def platform_file(path: str) -> bool:
        lines = cold.get(path)
        return bool(other_platform.get(path)) or (
            lines is not None and any(platform_reason(why) for _, _, why in lines.merged))

    candidates = {cls for cls, paths in builders.items()
                  if not subclasses.get(cls) and cls.rpartition(".")[0] in path_of_module
                  and all(platform_file(path) for path in paths)}
    if not candidates:
        return frozenset()
    by_short: dict[str, set] = {}
    for cls in candidates:
        by_short.setdefault(cls.rpartition(".")[2], set()).add(cls)
    mentions: dict[str, set] = {}  # path -> the candidates' names it mentions
    named_in: dict[str, int] = {}
    for path in results:
        text = source_text(path, sources)
        if text is None:
            return frozenset()  # a file not read may name any of them
        found = by_short.keys() & _CAPITALIZED.findall(text)  # one pass: an alternation of hundreds of names is slow
        if found:
            mentions[path] = found
            for short in found:
                named_in[short] = named_in.get(short, 0) + 1
    # a name many files mention is handed around (or shared by many classes): reading them all
    # with `ast` costs more than the rule can win, and one use that keeps it as a value ends it
    common = {short for short, count in named_in.items() if count > MAX_NAMING_FILES}
    failed: set[str] = {cls for short in common for cls in by_short[short]}
    built: set[str] = set()
    for path, found in mentions.items():
        found -= common
        text = source_text(path, sources) if found else None  # read again: the texts are not all kept
        if text is None:
            failed.update(cls for short in found for cls in by_short[short])
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            failed.update(cls for short in found for cls in by_short[short])
            continue
        for short, ok, line in _mentions(tree, found):
            platform = bool(other_platform.get(path)) or (
                cold.get(path) is not None and platform_reason(cold[path].why(line)))
            if ok is None:
                continue  # an import, an annotation, a type test, `__all__`
            if ok and platform:
                built.update(by_short[short])
            else:
                failed.update(by_short[short])
    return frozenset(built - failed)


def _mentions(tree: ast.Module, shorts: set):
    """(name, kind, line) for each mention of one of `shorts`: kind True for a construction,
    None for a mention that cannot hand the class on, False for anything else."""
    quiet: set[int] = set()  # nodes under annotations, type tests and `__all__`
    calls: dict[int, ast.Call] = {}  # id(func), id(a called attribute's owner) -> the call
    bases: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    quiet.update(id(n) for n in ast.walk(arg.annotation))
            if node.returns is not None:
                quiet.update(id(n) for n in ast.walk(node.returns))
        elif isinstance(node, ast.AnnAssign):
            quiet.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, ast.Call):
            calls[id(node.func)] = node
            if isinstance(node.func, ast.Attribute):  # `C.from_config(...)`: an alternative constructor
                calls[id(node.func.value)] = node
            if isinstance(node.func, ast.Name) and node.func.id in _TYPE_TESTS and len(node.args) == 2:
                quiet.update(id(n) for n in ast.walk(node.args[1]))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            quiet.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, ast.ClassDef):
            bases.update(id(n) for b in node.bases for n in ast.walk(b))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):  # `import C as D`: built under another name
            for alias in node.names:
                if alias.name in shorts and alias.asname not in (None, alias.name):
                    yield alias.name, False, node.lineno
            continue
        if isinstance(node, ast.Name) and node.id in shorts:
            short = node.id
        elif isinstance(node, ast.Attribute) and node.attr in shorts:
            short = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            short = next((s for s in shorts if node.value == s or node.value.endswith("." + s)), None)
            if short is None:
                continue
            yield short, None if id(node) in quiet else False, node.lineno
            continue
        else:
            continue
        if id(node) in quiet and id(node) not in bases:
            yield short, None, node.lineno
        elif isinstance(getattr(node, "ctx", None), ast.Load) and id(node) not in bases and id(node) in calls:
            yield short, True, calls[id(node)].lineno  # `C(...)`
        else:
            yield short, False, node.lineno
