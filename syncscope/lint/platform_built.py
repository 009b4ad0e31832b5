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
from .text_scans import TextScans

_PLATFORM_WORDS = ("another platform", "on CUDA")
MAX_NAMING_FILES = 8  # a candidate named in more files than this is left alone (read no further)
MAX_ROUNDS = 4  # classes built only by classes built only by ...: how deep the chain is followed


def platform_reason(why: str | None) -> bool:
    """A cold line's reason that says it never runs on CUDA (branches.py, comparetests.py)."""
    return bool(why) and any(word in why for word in _PLATFORM_WORDS) and "true on CUDA" not in why


def built_elsewhere(program, results: dict, cold: dict, other_platform: dict, subclasses: dict,
                    texts: TextScans) -> frozenset:
    """The classes of the tree that only code for another platform builds (module docstring).
    `texts`: the linted files' texts (text_scans.py)."""
    path_of_module = {result.module: path for path, result in results.items() if result.module}
    builders: dict[str, set] = {}  # class -> {(path, the class whose code builds it, or None)}
    for path, result in results.items():
        for maker, made, *_ in getattr(result, "makes", ()) or ():
            inner = program.chase(made, True)
            if inner is not None:
                builders.setdefault(inner, set()).add((path, maker))

    def platform_file(path: str) -> bool:
        return _platform_file(path, cold, other_platform)

    candidates = {cls for cls, places in builders.items()
                  if not subclasses.get(cls) and cls.rpartition(".")[0] in path_of_module
                  and all(platform_file(path) for path, _ in places)}
    if not candidates:
        return frozenset()
    built = _first_round(results, cold, other_platform, candidates, texts)
    return held_only_by(built, results, cold, other_platform, builders, subclasses, path_of_module, texts)


def _first_round(results: dict, cold: dict, other_platform: dict, candidates: set, texts: TextScans) -> frozenset:
    """Of `candidates`, the classes every mention of which is quiet or a construction on a line
    that never runs on CUDA (the module docstring's scan)."""
    by_short: dict[str, set] = {}
    for cls in candidates:
        by_short.setdefault(cls.rpartition(".")[2], set()).add(cls)
    mentions: dict[str, set] = {}  # path -> the candidates' names it mentions
    named_in: dict[str, int] = {}
    shorts = frozenset(by_short)
    # one pass: an alternation of hundreds of names is slow
    named = texts.answers("names-class", tuple(sorted(shorts)), results, lambda text: shorts.intersection(CAPITALIZED.findall(text)))
    if named is None:
        return frozenset()  # a file not read may name any of them
    for path, found in named.items():
        if found:
            mentions[path] = set(found)
            for short in found:
                named_in[short] = named_in.get(short, 0) + 1
    # a name many files mention is handed around (or shared by many classes): one use that
    # keeps it as a value ends it
    common = {short for short, count in named_in.items() if count > MAX_NAMING_FILES}
    failed: set[str] = {cls for short in common for cls in by_short[short]}
    built: set[str] = set()
    for path, found in mentions.items():
        found -= common
        uses = _uses(path, results[path], found, texts) if found else ()
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


def _platform_file(path: str, cold: dict, other_platform: dict) -> bool:
    """Is `path` another platform's file, or has it a block that never runs on CUDA?"""
    lines = cold.get(path)
    return bool(other_platform.get(path)) or (
        lines is not None and any(platform_reason(why) for _, _, why in lines.merged))


def held_only_by(built: frozenset, results: dict, cold: dict, other_platform: dict, builders: dict,
                 subclasses: dict, path_of_module: dict, texts: TextScans) -> frozenset:
    """`built` and the classes built only in the methods of those (or on lines that never run on
    CUDA), again until none is added: a method runs only on an object of its class, so what only
    the methods of a class no CUDA process holds build is not held there either (vLLM's
    `TopKWeightAndReduceNaiveBatched`, made only in `BatchedPrepareAndFinalize.finalize`).
    Every mention of such a class is read from the files' `name_uses` as in the first round,
    a construction counting when its line is cold for a platform reason or lies in a method
    (not a class-level statement, which runs at import) of a class already so decided."""
    for _ in range(MAX_ROUNDS):
        new = {cls for cls, places in builders.items()
               if cls not in built and not subclasses.get(cls) and cls.rpartition(".")[0] in path_of_module
               and any(maker in built for _, maker in places)
               and all(maker in built or _platform_file(path, cold, other_platform) for path, maker in places)}
        if not new:
            break
        by_short: dict[str, set] = {}
        for cls in new:
            by_short.setdefault(cls.rpartition(".")[2], set()).add(cls)
        added = _only_held_in(built, by_short, results, cold, other_platform, texts)
        if not added:
            break
        built = built | added
    return built


def _only_held_in(built: frozenset, by_short: dict, results: dict, cold: dict, other_platform: dict,
                  texts: TextScans) -> frozenset:
    """Of the classes in `by_short` (short name -> classes), those every mention of which is
    quiet or a construction on a line that never runs on CUDA or in a method of `built`."""
    failed: set[str] = set()
    named_in: dict[str, int] = {}
    lines_of: list[tuple] = []  # (path, short, construction lines)
    for path, result in results.items():
        uses = getattr(result, "name_uses", None)
        if uses is None:  # no fact (a file the analysis did not parse): its text, parsed again
            text = texts.text(path)
            if text is None:
                return frozenset()
            found = {short for short in by_short if short in text}
            uses = _uses(path, result, found, texts) if found else ()
            if uses is None:
                failed.update(cls for short in found for cls in by_short[short])
                continue
        if by_short.keys().isdisjoint(uses):
            continue
        for short, lines in each_use(uses):
            if short not in by_short:
                continue
            named_in[short] = named_in.get(short, 0) + 1
            if lines is None:
                failed.update(by_short[short])
            else:
                lines_of.append((path, short, lines))
    failed.update(cls for short, count in named_in.items() if count > MAX_NAMING_FILES for cls in by_short[short])
    added: set[str] = set()
    for path, short, lines in lines_of:
        spans = getattr(results[path], "spans", None) or {}
        methods = [span for qualname, span in spans.items() if qualname.rpartition(".")[0] in built]
        for line in lines:
            platform = bool(other_platform.get(path)) or (
                cold.get(path) is not None and platform_reason(cold[path].why(line))) or any(
                start <= line <= end for start, end in methods)
            (added if platform else failed).update(by_short[short])
    return frozenset(added - failed)


def _uses(path: str, result, found: set, texts: TextScans) -> tuple | None:
    """The file's `name_uses` (name_uses.py), else those of `found` from its text parsed again
    (a file the analysis did not parse, or of another encoding); None when it does not parse."""
    uses = getattr(result, "name_uses", None)
    if uses:
        return uses
    text = texts.text(path)
    try:
        return uses_in(ast.parse(text), found) if text is not None else None
    except SyntaxError:
        return None
