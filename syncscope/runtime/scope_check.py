"""`--scope` targets that name nothing are errors, with the nearest valid name (issue 28).

A scope that matches nothing leaves every sync of the run out of scope: the run would report 0
in-scope syncs and a gate on it would pass. So each target is checked before the program runs:

* `pkg.mod:Class.method` (an importable module): imported and walked attribute by attribute, as
  `regions.scope_callable` is about to; a missing module or attribute is an error naming the
  nearest module or attribute;
* `__main__:Class.method`, `file.py:Class.method`, or the `-m` module's own `Class.method`: the
  class does not exist before the program defines it, so its source is read (`ast`, nothing
  runs): no `class` statement of that name, or a class without bases that defines no such
  method, is an error. A class with bases may inherit the method: it is checked when the program
  defines it (`class_scopes`), and a scope still unmatched at the end fails the run.
"""

from __future__ import annotations

import ast
import importlib
import os

from syncscope.suggest import did_you_mean
from syncscope.runtime.scope_spec import ScopeSpec


class ScopeError(ValueError):
    """A `--scope` target that names nothing: exit 2 before the program starts."""


def check_scopes(specs, *, target: str, module: bool) -> None:
    """Raise `ScopeError` for the first spec that names nothing. Importable modules are imported
    (call it where `apply_scopes` would import them: inside the trap)."""
    from syncscope.runtime import class_scopes

    for spec in specs:
        try:
            parsed = ScopeSpec.parse(spec)
        except ValueError:
            continue  # regions gives the usage error
        module_part, attr_path = parsed.module, parsed.attr_path
        try:
            deferred = class_scopes.deferred_target(spec, target if module else None)
        except ValueError as exc:
            raise ScopeError(str(exc)) from None
        if deferred is None:
            _check_importable(spec, module_part, attr_path)
            continue
        source = deferred.path if not deferred.main else _main_source(target, module)
        if source is not None:
            _check_source(spec, source, attr_path)


def _main_source(target: str, module: bool) -> str | None:
    """The file the program's `__main__` runs: the script, or the `-m` module's origin."""
    if not module:
        return target if os.path.isfile(target) and target.endswith(".py") else None
    import importlib.util

    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    if spec.submodule_search_locations:  # a package: `python -m pkg` runs pkg/__main__.py
        main = os.path.join(os.path.dirname(spec.origin), "__main__.py")
        return main if os.path.isfile(main) else None
    return spec.origin


def _check_importable(spec: str, module_name: str, attr_path: str) -> None:
    try:
        owner = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise ScopeError(f"--scope {spec}: no module named {missing!r}{did_you_mean(missing, _modules_beside(missing))}") from None
    except Exception as exc:  # the module itself fails to import: one line, not a traceback
        raise ScopeError(f"--scope {spec}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    where = module_name
    for part in attr_path.split("."):
        if not hasattr(owner, part):
            names = [n for n in dir(owner) if not n.startswith("__")]
            raise ScopeError(f"--scope {spec}: {where} has no attribute {part!r}{did_you_mean(part, names)}")
        owner = getattr(owner, part)
        where = f"{where}.{part}"


def _modules_beside(dotted: str) -> list[str]:
    """The module names a missing `a.b.c` could have meant: the other modules of `a.b`."""
    import pkgutil

    parent, _, _ = dotted.rpartition(".")
    if not parent:
        return [m.name for m in pkgutil.iter_modules()]
    try:
        package = importlib.import_module(parent)
    except ImportError:
        return []
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(getattr(package, "__path__", []) or [])]


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    """Every class statement of a module by qualified name (classes inside functions left out:
    their qualified names hold `<locals>` and no `--scope` can name them)."""
    found: dict[str, ast.ClassDef] = {}

    def walk(body, prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                found.setdefault(name, node)
                walk(node.body, name + ".")
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, block, [])
                    for item in inner:
                        walk(item.body if isinstance(item, ast.ExceptHandler) else [item], prefix)

    walk(tree.body, "")
    return found


def _defined_names(cls: ast.ClassDef) -> set[str]:
    """The names a class body binds (methods, attributes), also under `if`/`try` in the body."""
    names: set[str] = set()

    def walk(body) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                walk(getattr(node, "body", []) + getattr(node, "orelse", []) + getattr(node, "finalbody", []))
                for handler in getattr(node, "handlers", []):
                    walk(handler.body)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)

    walk(cls.body)
    return names


def _check_source(spec: str, path: str, attr_path: str) -> None:
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return  # the program's own problem: python reports it as it runs
    class_path, _, method = attr_path.rpartition(".")
    classes = _classes(tree)
    cls = classes.get(class_path)
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    if cls is None:
        raise ScopeError(f"--scope {spec}: {shown} defines no class {class_path!r}{did_you_mean(class_path, classes)}")
    plain = not cls.keywords and all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases)
    names = _defined_names(cls)
    if method not in names and plain and not cls.decorator_list:
        raise ScopeError(f"--scope {spec}: class {class_path} in {shown} has no method {method!r}{did_you_mean(method, names)}")
