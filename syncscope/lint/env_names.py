"""Names that keep an environment switch's test, for env_switches.py: a module global bound once
to the test, and a function's local bound once to a test that needs it.

    _verify_real_tensors = envs.SGLANG_GDN_DECODE_FUSION_VERIFY_REAL_TENSORS.get()  # module level

    def forward_decode(self, layer, ...):
        verify = _verify_real_tensors and layer.layer_id not in _verified_layers
        if verify:
            if bool(torch.any(cache_indices < 0).item()): ...   # a debug comparison

(SGLang's GDN decode fusion check, `EnvBool(False)` in environ.py.) `if verify:` holds only if
the variable is on, as `if envs.X.get():` does, when:
* the global is bound once, at the module's top level, and nowhere else in the module (no other
  store of the name at any depth, no `global` statement: held_tests.module_globals' test), and
  no file of the tree stores it from outside (`module.name = ...`, `setattr(module, "name", ...)`,
  monkeypatch's string key: env_switches asks optin.py's counts of the tree's text, as it does
  for a field);
* the local is bound once in its function by a plain `name = <test>` (no other store of the
  name in the function, nested code and comprehensions included; not a parameter, not declared
  `global` / `nonlocal`). The innermost function that binds the name decides it; a name no
  function around the test binds is the module's.
A name bound any other way (a loop target, an unpacking, twice, `+=`) stands for no requirement.
The resolved requirements replace the name in the file's facts: ("global", name, requirements)
for a global (decided over the tree by env_switches), the local's own requirements for a local.
"""

from __future__ import annotations

import ast

from .classinfo import module_statements
from .held_tests import module_globals
from .nodewalk import every_node

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class NameTests:
    """Resolves ("name", id) requirements of one module (`requirements`: env_switches'
    `_requirements`, which returns ("name", id) for a bare name)."""

    def __init__(self, tree: ast.Module, requirements) -> None:
        self.requirements = requirements
        self.globals: dict[str, tuple] = {}
        for name in module_globals(tree, self._held):
            stmt = next(s for s in reversed(tree.body) if type(s) is ast.Assign and len(s.targets) == 1
                        and type(s.targets[0]) is ast.Name and s.targets[0].id == name)
            found = self._direct(stmt.value)
            if found:
                self.globals[name] = (("global", name, found),)
        statements = module_statements(tree)
        self.functions = [s for s in statements if isinstance(s, _FUNCTIONS)]
        # the names some plain assignment binds to a test that may need a switch: only these are
        # looked up in the functions around a read (most `if x:` of a file test no switch)
        self.candidates = set(self.globals)
        for stmt in statements:
            if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name \
                    and any(r[0] != "name" or r[1] in self.globals for r in self.requirements(stmt.value)):
                self.candidates.add(stmt.targets[0].id)
        self._locals: dict[int, dict] = {}

    def _held(self, value) -> tuple:
        """module_globals' `evaluate`: a value that needs some requirement (no name of its own)."""
        return (True, "a switch's test") if self._direct(value) else (None, "")

    def _direct(self, value) -> tuple:
        return tuple(r for r in self.requirements(value) if r[0] not in ("self", "args", "name"))

    def resolve(self, found, line: int) -> list:
        """`found` with each ("name", id) replaced by what the name needs where `line` reads it."""
        out = []
        for r in found:
            if r[0] == "name":
                out.extend(self._name(r[1], line))
            else:
                out.append(r)
        return out

    def _name(self, name: str, line: int) -> tuple:
        if name not in self.candidates:
            return ()
        around = sorted((f for f in self.functions if f.lineno <= line <= f.end_lineno),
                        key=lambda f: f.lineno, reverse=True)
        for function in around:
            bound = self._bound(function)
            if name in bound:
                return bound[name]
        return self.globals.get(name, ())

    def _bound(self, function) -> dict:
        """{name: requirements} of the names `function` binds ((): bound some other way)."""
        key = id(function)
        if key in self._locals:
            return self._locals[key]
        stores: dict[str, list] = {}
        args = function.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                stores.setdefault(arg.arg, []).append(None)
        for node in every_node(function):
            if node is function:
                continue
            if type(node) is ast.Name and type(node.ctx) is ast.Store:
                stores.setdefault(node.id, []).append(node)
            elif type(node) in (ast.Global, ast.Nonlocal):
                for name in node.names:
                    stores.setdefault(name, []).append(None)
            elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                stores.setdefault(node.name, []).append(None)
        plain = {}
        for node in every_node(function):
            if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                plain[node.targets[0]] = node.value
        bound = {}
        for name, nodes in stores.items():
            if len(nodes) == 1 and nodes[0] in plain:
                # what the local needs, its own names read as the module's (no chains of locals)
                value = plain[nodes[0]]
                bound[name] = tuple(x for r in self.requirements(value) for x in (
                    (() if r[1] in stores else self.globals.get(r[1], ())) if r[0] == "name" else (r,)))
            else:
                bound[name] = ()
        self._locals[key] = bound
        return bound
