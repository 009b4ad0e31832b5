"""`--scope package.module:Class.method` for the oracle: replace the callable with a measuring
wrapper. Standard library only.

A spec that names the program being run (`__main__:fn`, or the module / file of the target itself,
e.g. `--scope tests.catalog.sync_catalog:run_catalog tests/catalog/sync_catalog.py`) cannot be
patched beforehand: the script runs as a fresh `__main__` and defines the function only as it
runs. Those specs are patched *lazily*: a trace function watches the target's module-level frame
and, at the first line after the name is defined, swaps in the wrapper; then tracing stops.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from typing import Callable

from syncscope.runtime.scope_spec import ScopeSpec  # the one --scope parser; tests and callers import it from here too


def _same_file(a: str | None, b: str | None) -> bool:
    return bool(a and b) and os.path.realpath(os.path.abspath(a)) == os.path.realpath(os.path.abspath(b))


def target_file(target: str, module: bool) -> str | None:
    """The file the program's `__main__` code comes from."""
    if not module:
        return os.path.abspath(target)
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package: python -m runs its __main__
        try:
            spec = importlib.util.find_spec(target + ".__main__")
        except (ImportError, ValueError):
            return None
    return spec.origin if spec else None


def names_main(spec: ScopeSpec, main_file: str | None, target: str, module: bool) -> bool:
    if spec.module == "__main__":
        return True
    if module and spec.module == target:
        return True
    try:
        found = importlib.util.find_spec(spec.module)
    except (ImportError, ValueError):
        return False
    return found is not None and _same_file(found.origin, main_file)


def _patch(owner: object, name: str, wrap: Callable[[Callable, str], Callable], label: str) -> Callable[[], None]:
    """Replace owner.name by wrap(function); return the undo. Methods keep their descriptor type."""
    raw = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name)
    if raw is None:
        raw = getattr(owner, name)
    if isinstance(raw, staticmethod):
        replacement = staticmethod(wrap(raw.__func__, label))
    elif isinstance(raw, classmethod):
        replacement = classmethod(wrap(raw.__func__, label))
    elif callable(raw):
        replacement = wrap(raw, label)
    else:
        raise ValueError(f"--scope {label}: {name} is not a function")
    setattr(owner, name, replacement)

    def undo() -> None:
        setattr(owner, name, raw)

    return undo


def _walk(root: object, attrs: tuple[str, ...]) -> tuple[object, str]:
    owner = root
    for part in attrs[:-1]:
        owner = getattr(owner, part)
    getattr(owner, attrs[-1])  # raises AttributeError if missing
    return owner, attrs[-1]


def patch_module_spec(spec: ScopeSpec, wrap) -> Callable[[], None]:
    module = importlib.import_module(spec.module)
    owner, name = _walk(module, spec.attrs)
    return _patch(owner, name, wrap, spec.text)


class MainWatcher:
    """Patches specs that live in the program's own `__main__` as soon as they are defined."""

    def __init__(self, specs: list[ScopeSpec], main_file: str | None, wrap):
        self.pending = list(specs)
        self.wrap = wrap
        self.undo: list[Callable[[], None]] = []
        self.errors: list[str] = []
        self._names = set()
        self._real = None
        if main_file:
            self._names = {main_file, os.path.abspath(main_file), os.path.realpath(main_file)}
            self._real = os.path.realpath(main_file)
        self._previous = None
        self._installed = False

    def _is_main(self, code) -> bool:
        if code.co_name != "<module>":
            return False
        filename = code.co_filename
        if filename in self._names:
            return True
        return self._real is not None and os.path.realpath(os.path.abspath(filename)) == self._real

    def _try_patch(self, namespace: dict) -> None:
        for spec in list(self.pending):
            head = namespace.get(spec.attrs[0])
            if head is None:
                continue
            try:
                if len(spec.attrs) == 1:
                    self.undo.append(_patch_dict(namespace, spec.attrs[0], self.wrap, spec.text))
                else:
                    owner, name = _walk(head, spec.attrs[1:])
                    self.undo.append(_patch(owner, name, self.wrap, spec.text))
            except AttributeError:
                continue  # the class exists, the method not yet: try again at the next line
            except ValueError as exc:
                self.errors.append(str(exc))
            self.pending.remove(spec)

    def install(self) -> None:
        if not self.pending:
            return
        self._previous = sys.gettrace()

        def local(frame, event, arg):
            if event == "line" or event == "return":
                self._try_patch(frame.f_globals)
                if not self.pending:
                    self.uninstall()
                    frame.f_trace = None
                    return None
            return local

        def global_(frame, event, arg):
            if event == "call" and self._is_main(frame.f_code):
                return local
            return None

        sys.settrace(global_)
        self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            sys.settrace(self._previous)
            self._installed = False


def _patch_dict(namespace: dict, name: str, wrap, label: str) -> Callable[[], None]:
    raw = namespace[name]
    if not callable(raw):
        raise ValueError(f"--scope {label}: {name} is not a function")
    namespace[name] = wrap(raw, label)

    def undo() -> None:
        namespace[name] = raw

    return undo


class Scopes:
    """All `--scope` specs of one run: module specs patched now, `__main__` specs when defined."""

    def __init__(self, texts: list[str], wrap, *, target: str, module: bool):
        if not texts:
            raise ValueError("the oracle needs at least one --scope package.module:function to time")
        self.specs = [ScopeSpec.parse(t) for t in texts]
        self.wrap = wrap
        # Resolve names as the program will: its own directory (or, with -m, the working
        # directory) first on sys.path, whether syncscope runs as `python -m` or a console script.
        self._search = [os.getcwd() if module else os.path.dirname(os.path.abspath(target)), os.getcwd()]
        with self._program_path():
            main_file = target_file(target, module)
            self.main_specs = [s for s in self.specs if names_main(s, main_file, target, module)]
        self.module_specs = [s for s in self.specs if s not in self.main_specs]
        self.watcher = MainWatcher(self.main_specs, main_file, wrap)
        self.undo: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def _program_path(self):
        saved = sys.path[:]
        sys.path[:0] = [p for p in self._search if p not in sys.path]
        try:
            yield
        finally:
            sys.path[:] = saved

    def apply(self) -> None:
        try:
            with self._program_path():
                for spec in self.module_specs:
                    self.undo.append(patch_module_spec(spec, self.wrap))
        except BaseException:
            self.restore()
            raise
        self.watcher.install()

    def never_defined(self) -> list[str]:
        return [s.text for s in self.watcher.pending]

    def restore(self) -> None:
        self.watcher.uninstall()
        for fn in reversed(self.watcher.undo + self.undo):
            fn()
        self.undo = []
        self.watcher.undo = []
