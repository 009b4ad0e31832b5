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
  any file (found by a scan of the files' text, then read from the file's per-file fact of what
  its code does with each capitalized name, name_uses.py) is such a construction, an
  import under its own name, an annotation, the class tested by `isinstance` / `issubclass`, or a string of
  `__all__`. A mention that keeps the class as a value (a registry, `partial(C, ...)`, a base of
  another class, a string naming its path that `importlib` may load) or rebinds its name leaves
  the class alone; so does a second class of the same name, whose constructions count too.
Only candidates are read: classes whose every constructing module has a platform-cold block or
is another platform's (from the per-file `makes`), and of those only the ones whose name at most
`MAX_NAMING_FILES` files mention (a name many files use is handed around, or shared by several
classes). The pass parses no file again: only one without the fact (a file the analysis did
not parse) is read with `ast` here.
"""

from __future__ import annotations

import ast

from .name_uses import CAPITALIZED, each_use, uses_in
from .source_texts import source_text

_PLATFORM_WORDS = ("another platform", "on CUDA")
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
        found = by_short.keys() & CAPITALIZED.findall(text)  # one pass: an alternation of hundreds of names is slow
        if found:
            mentions[path] = found
            for short in found:
                named_in[short] = named_in.get(short, 0) + 1
    # a name many files mention is handed around (or shared by many classes): one use that
    # keeps it as a value ends it
    common = {short for short, count in named_in.items() if count > MAX_NAMING_FILES}
    failed: set[str] = {cls for short in common for cls in by_short[short]}
    built: set[str] = set()
    for path, found in mentions.items():
        found -= common
        uses = _uses(path, results[path], found, sources) if found else ()
        if uses is None:
            failed.update(cls for short in found for cls in by_short[short])
            continue
        for short, lines in each_use(uses):
            if short not in found:
                continue
            if lines is None:
                failed.update(by_short[short])
                continue
            for line in lines:
                platform = bool(other_platform.get(path)) or (
                    cold.get(path) is not None and platform_reason(cold[path].why(line)))
                (built if platform else failed).update(by_short[short])
    return frozenset(built - failed)


def _uses(path: str, result, found: set, sources) -> tuple | None:
    """The file's `name_uses` (name_uses.py), else those of `found` from its text parsed again
    (a file the analysis did not parse, or of another encoding); None when it does not parse."""
    uses = getattr(result, "name_uses", None)
    if uses:
        return uses
    text = source_text(path, sources)
    try:
        return uses_in(ast.parse(text), found) if text is not None else None
    except SyntaxError:
        return None
