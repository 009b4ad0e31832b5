"""The package's shape: every module imports, no import cycle inside `syncscope/`, packages import
only downwards through the layers below, no module over 600 lines. Each exception is on an allow-list below, with the reason; the lists are checked to be
current, so a fixed exception must leave the list too.
"""

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "syncscope"
MAX_LINES = 600

# Modules allowed past MAX_LINES, each with why. Remove an entry once the module is split.
LONG_MODULES_ALLOWED: set[str] = set()

# Import cycles allowed, as sets of the modules of one cycle. Remove an entry once it is broken.
CYCLES_ALLOWED: list[frozenset[str]] = []


# The layers, top first (docs/architecture.md): a module may import its own package and the
# layers below its own, never a layer above nor a sibling package of its own layer. A package is
# the first name under `syncscope.`; the top-level modules are packages of one module.
LAYERS: list[set[str]] = [
    {"__main__"},  # `python -m syncscope`
    {"cli"},  # the command line
    {"commands", "pytest_plugin"},  # the subcommands and the pytest plugin
    {"render"},  # console, HTML, Markdown, SARIF, GitHub, Perfetto: they show what the checks found
    {"oracle", "monitoring", "ci"},  # the checks built on the trap and the linter
    {"runtime", "lint"},  # the trap and the linter
    {"report"},  # report primitives: schema, validation, aggregation, host metadata, the writer, status
    {"syncscope", "site", "events", "atomic", "terminal", "suggest", "with_blocks"},  # shared vocabulary and utilities
]

# Package-level import edges allowed against the layers, as (importer module, imported module),
# each with what removes it. Remove an entry once it is gone.
UPWARD_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _layer(package: str) -> int:
    found = [i for i, layer in enumerate(LAYERS) if package in layer]
    assert len(found) == 1, f"package {package!r} must be in exactly one layer of LAYERS, is in {len(found)}"
    return found[0]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported_modules(name: str, path: Path) -> set[str]:
    """The package's modules that `name` imports, at any depth of its code (top level, functions,
    `if TYPE_CHECKING:` blocks): a function-level import is how a cycle is usually hidden, and it
    still ties the two modules together. `from pkg import x` names the module `pkg.x` when it is
    one, else `pkg` itself. Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`, but those
    parent-package edges are left out: every module would otherwise be in a cycle with the
    package `__init__` that re-exports it, which Python handles (the package is already in
    `sys.modules` while its `__init__` runs)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, one level up per extra dot
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    found.add(f"{target}.{alias.name}")
                elif target in MODULES:
                    found.add(target)
    found.discard(name)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative):
    each is one or more import cycles among its modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(frozenset(component))
    return cycles


def test_the_cycle_finder_finds_cycles_and_only_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": set(), "g": {"h"}, "h": {"g"}}
    assert sorted(map(sorted, import_cycles(graph))) == [["a", "b", "c"], ["g", "h"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_function_level_imports_are_edges(tmp_path):
    fake = tmp_path / "mod.py"
    fake.write_text("from . import site\ndef f():\n    from .runtime import regions\n    import syncscope.ci.gate\n")
    edges = _imported_modules("syncscope.mod", fake)
    assert edges == {"syncscope.site", "syncscope.runtime.regions", "syncscope.ci.gate"}


def test_no_import_cycle_inside_the_package():
    graph = {name: _imported_modules(name, path) for name, path in MODULES.items()}
    cycles = import_cycles(graph)
    unexpected = [sorted(c) for c in cycles if c not in CYCLES_ALLOWED]
    assert not unexpected, f"import cycles inside syncscope/: {unexpected}"
    stale = [sorted(c) for c in CYCLES_ALLOWED if c not in cycles]
    assert not stale, f"allowed cycles that no longer exist (take them off CYCLES_ALLOWED): {stale}"


def layer_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) module pairs whose packages differ and where the imported package is
    not in a layer below the importer's."""
    bad = set()
    for name, targets in graph.items():
        for target in targets:
            here, there = _package(name), _package(target)
            if here != there and _layer(there) <= _layer(here):
                bad.add((name, target))
    return bad


def test_the_layer_check_finds_upward_and_sideways_imports():
    graph = {
        "syncscope.report.schema": {"syncscope.site", "syncscope.report.validate"},  # down, own package
        "syncscope.lint.engine": {"syncscope.runtime.trap"},  # sideways: a sibling of the same layer
        "syncscope.report.write": {"syncscope.ci.gate"},  # upwards
        "syncscope.commands.run": {"syncscope.runtime.trap", "syncscope.render.console"},
    }
    assert layer_violations(graph) == {("syncscope.lint.engine", "syncscope.runtime.trap"), ("syncscope.report.write", "syncscope.ci.gate")}


def test_every_package_is_in_one_layer():
    for name in MODULES:
        _layer(_package(name))


def test_packages_import_only_downwards():
    graph = {name: _imported_modules(name, path) for name, path in MODULES.items()}
    violations = layer_violations(graph)
    unexpected = sorted(violations - set(UPWARD_IMPORTS_ALLOWED))
    assert not unexpected, f"imports against the layers (see LAYERS): {unexpected}"
    stale = sorted(set(UPWARD_IMPORTS_ALLOWED) - violations)
    assert not stale, f"allowed upward imports that no longer exist (take them off UPWARD_IMPORTS_ALLOWED): {stale}"


# `python -m syncscope` runs the CLI when imported; its one line is covered by every CLI test.
@pytest.mark.parametrize("name", sorted(set(MODULES) - {"syncscope.__main__"}))
def test_every_module_imports(name):
    # Importing for real catches what the AST cannot: a cycle through a name that is not defined
    # yet when the other module asks for it, a missing optional dependency imported at top level.
    # The pytest plugin and the oracle's CUDA side need only torch, which the suite has.
    importlib.import_module(name)
    assert name in sys.modules


def test_no_module_over_600_lines():
    lengths = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES and name not in LONG_MODULES_ALLOWED}
    assert not too_long, f"modules over {MAX_LINES} lines (split them): {too_long}"
    stale = sorted(name for name in LONG_MODULES_ALLOWED if lengths.get(name, 0) <= MAX_LINES)
    assert not stale, f"allowed long modules that are now short or gone (take them off the list): {stale}"
