"""`--scope` on a class that the program itself defines: `__main__:Class.method`,
`path/to/file.py:Class.method`, or `pkg.mod:Class.method` when `pkg.mod` is the module run with `-m`.

Scopes are applied before the program runs, when such a class does not exist yet (and importing
the script or `-m` module to find it would run the program's top level twice). So the scope waits
for the class: while any such scope is pending, `builtins.__build_class__` (what every `class`
statement calls) is wrapped, and a class whose qualified name and defining module match the spec
gets its method wrapped in a region as soon as its `class` statement has built it, before any
code can call it. A class defined again (a loop, a reloaded module) is scoped again.

The defining module is read from the class body's globals (`__name__`, `__file__`), so a file
spec matches however the file was loaded: as the script, as a module imported by name, or as a
`multiprocessing` spawn child's `__mp_main__`. A class that already exists when the scope is
applied (a module imported earlier, a spawn child whose main module was imported before its
target runs) is scoped at once. If the run ends without the class being defined, or the class
lacks the method, `take_unmatched` says so and `syncscope run` fails the run (issue 28): a scope
that silently matches nothing would report every sync as out of scope.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable

from syncscope.runtime.scope_spec import ScopeSpec

_MAIN_NAMES = ("__main__", "__mp_main__")  # a spawn child imports the parent's main as __mp_main__


@dataclass(frozen=True)
class ModuleMatcher:
    """Which module a deferred spec names: the program's main module, or one file."""

    main: bool
    path: str | None = None  # realpath of the file, for a file spec

    def matches(self, module_globals: dict) -> bool:
        if self.main:
            return module_globals.get("__name__") in _MAIN_NAMES
        filename = module_globals.get("__file__")
        return isinstance(filename, str) and os.path.realpath(filename) == self.path


def _looks_like_path(module_part: str) -> bool:
    return module_part.endswith(".py") or "/" in module_part or os.sep in module_part


def deferred_target(spec: str, main_module: str | None) -> ModuleMatcher | None:
    """The module a spec waits for, or None for a spec on an importable module (wrapped now)."""
    try:
        parsed = ScopeSpec.parse(spec)
    except ValueError:
        return None  # regions._resolve gives the usage error
    module_part, attr_path = parsed.module, parsed.attr_path
    if module_part == "__main__" or (main_module is not None and module_part == main_module):
        matcher = ModuleMatcher(main=True)
    elif _looks_like_path(module_part):
        path = os.path.realpath(module_part)
        if not os.path.isfile(path):
            raise ValueError(f"--scope {spec}: no such file {module_part!r}")
        matcher = ModuleMatcher(main=False, path=path)
    else:
        return None
    if "." not in attr_path:
        raise ValueError(
            f"--scope {spec}: a function of the program's own script cannot be scoped before it exists; "
            "name Class.method, or wrap the call in syncscope.region(...)"
        )
    return matcher


@dataclass
class _PendingScope:
    spec: str
    matcher: ModuleMatcher
    class_path: str  # the class's __qualname__, e.g. "Outer.Inner"
    method: str
    wrap: Callable[[type, str, str], Callable[[], None]]  # regions.scope_attribute: wraps, returns the undo
    undo: list[Callable[[], None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def scope_class(self, cls: type) -> None:
        if not hasattr(cls, self.method):
            from syncscope.suggest import did_you_mean

            names = [n for n in dir(cls) if not n.startswith("__")]
            self.problems.append(f"class {self.class_path} has no attribute {self.method!r}{did_you_mean(self.method, names)}")
            return
        try:
            self.undo.append(self.wrap(cls, self.method, self.spec))
        except ValueError as exc:  # a static or class method: reported at the end, not raised in the program
            self.problems.append(str(exc).partition(": ")[2])


_pending: tuple[_PendingScope, ...] = ()
_unmatched: list[str] = []  # "--scope SPEC: what was wrong", for the caller to report (take_unmatched)
_lock = threading.Lock()
_original_build_class = None


def _build_class(func, name, *bases, **kwds):
    cls = _original_build_class(func, name, *bases, **kwds)
    for pending in _pending:  # a snapshot: registering never mutates the tuple in place
        if getattr(cls, "__qualname__", None) == pending.class_path and pending.matcher.matches(getattr(func, "__globals__", {})):
            pending.scope_class(cls)
    return cls


def _register(pending: _PendingScope) -> None:
    global _pending, _original_build_class
    with _lock:
        if not _pending:
            _original_build_class = builtins.__build_class__
            builtins.__build_class__ = _build_class
        _pending = _pending + (pending,)


def _unregister(pending: _PendingScope) -> None:
    global _pending, _original_build_class
    with _lock:
        _pending = tuple(p for p in _pending if p is not pending)
        if not _pending:
            if builtins.__build_class__ is _build_class:  # else the program replaced it since: leave it
                builtins.__build_class__ = _original_build_class
            _original_build_class = None


def _existing_class(module_globals: dict, class_path: str) -> type | None:
    owner: object = None
    for i, part in enumerate(class_path.split(".")):
        owner = module_globals.get(part) if i == 0 else getattr(owner, part, None)
        if owner is None:
            return None
    return owner if isinstance(owner, type) else None


def scope_when_defined(
    spec: str, matcher: ModuleMatcher, wrap: Callable[[type, str, str], Callable[[], None]]
) -> Callable[[], None]:
    """Scope `Class.method` of the matched module now if the class exists, and on every later
    definition, with `wrap(cls, method, spec)` (`regions.scope_attribute`, passed in so that this
    module does not import regions, which imports it). Returns the undo, which also notes (for
    `take_unmatched`) a scope that matched nothing."""
    class_path, _, method = ScopeSpec.parse(spec).attr_path.rpartition(".")
    pending = _PendingScope(spec, matcher, class_path, method, wrap)
    for module in list(sys.modules.values()):
        module_globals = getattr(module, "__dict__", None)
        if isinstance(module_globals, dict) and matcher.matches(module_globals):
            cls = _existing_class(module_globals, class_path)
            if cls is not None:
                pending.scope_class(cls)
    _register(pending)

    def undo() -> None:
        _unregister(pending)
        for fn in reversed(pending.undo):
            fn()
        _unmatched.extend(f"--scope {spec}: {problem}" for problem in pending.problems)
        if not pending.undo and not pending.problems:
            _unmatched.append(f"--scope {spec}: the program defined no class {class_path}; nothing was scoped")

    return undo


def take_unmatched() -> list[str]:
    """The scopes undone since the last call that matched nothing (a run with one has no known
    in-scope syncs: `syncscope run` fails it, a child process warns)."""
    taken = list(_unmatched)
    del _unmatched[:]
    return taken
