"""Off-by-default switches passed as a flag's value: the call turns the flag off by default.

    @dataclass
    class EPLBConfig:
        log_balancedness: bool = False             # opt-in; nothing in the tree sets it

    def step(self, is_dummy=False, log_stats: bool = False):
        if log_stats and ...:
            ... .tolist()                          # statistics, only when asked for

    state.step(is_dummy, log_stats=self.parallel_config.eplb_config.log_balancedness)

(vLLM's expert-load statistics.) flagguards.py decides a flag no call turns on; a call that
passes it anything but a literal `False` / `None` or the caller's own flag may turn it on. The
fact added here, about code: a call passes a flag off by default when the value it passes holds
only if a switch off by default does (optin.py: a `F: bool = False` declaration nothing in the
tree sets): a read `<path>.F` of such a switch (not `self.F`), a conjunct of an `and` that is
one, or a local the calling function binds once (never a parameter of it) to such a value. The
caller's file is parsed only for such a call, and only when the calling function's own lines
read an off switch (optin's `reading`: the files that read one are already in memory).
"""

from __future__ import annotations

import ast
import re

from .optin import _switch
from .nodewalk import every_node


class SwitchArgs:
    """Whether a call passes a flag a value that holds only where an off switch does."""

    def __init__(self, off: frozenset, reading: dict, results: dict) -> None:
        self.off, self.reading, self.results = off, reading, results
        self.functions: dict[str, list] = {}
        self.read = re.compile(r"\.(" + "|".join(sorted(map(re.escape, off))) + r")\b") if off else None

    def switch(self, path: str, function: str, line: int, column: int | None, name: str, index: int | None) -> str | None:
        """The off switch the call at `line` (`column`: 1-based, None for a call by name, then
        the one call on the line that passes `name` by keyword) of `function` passes as `name`
        (keyword) or at `index` (place), if the value it passes holds only where that switch is on."""
        text = self.reading.get(path)
        if text is None or self.read is None:
            return None
        span = (getattr(self.results.get(path), "spans", None) or {}).get(function)
        if not span:
            return None
        lines = text.splitlines()[span[0] - 1:span[1]]
        if not any(self.read.search(each) for each in lines):  # the function reads no off switch
            return None
        scope = _innermost(self._functions(path, text), line)
        if scope is None:
            return None
        calls = [node for node in every_node(scope) if isinstance(node, ast.Call) and node.lineno == line
                 and (node.col_offset + 1 == column if column is not None
                      else any(k.arg == name for k in node.keywords))]
        if len(calls) != 1:
            return None
        value = _argument(calls[0], name, index)
        if value is None:
            return None
        return _switch(value, self.off, _bound_tests(scope, self.off))

    def _functions(self, path: str, text: str) -> list:
        """The file's functions, parsed once."""
        if path not in self.functions:
            try:
                tree = ast.parse(text)
            except SyntaxError:
                tree = None
            self.functions[path] = [node for node in every_node(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))] \
                if tree is not None else []
        return self.functions[path]


def _innermost(functions: list, line: int):
    """The innermost function whose lines hold `line`."""
    holding = [node for node in functions if node.lineno <= line <= node.end_lineno]
    return min(holding, key=lambda node: node.end_lineno - node.lineno) if holding else None


def _argument(call: ast.Call, name: str, index: int | None):
    """What the call passes as keyword `name` or at place `index` (None: not known here)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if index is not None and 0 <= index < len(call.args) \
            and not any(isinstance(arg, ast.Starred) for arg in call.args[:index + 1]):
        return call.args[index]
    return None


def _bound_tests(function, off: frozenset) -> dict[str, str]:
    """{local: switch} of the locals `function` binds once (none a parameter of it) to a value
    that holds only where an off switch does."""
    args = function.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    bound: dict[str, int] = {}
    assigns = []
    for node in every_node(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, ast.Assign):
            assigns.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            params.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:  # bindings no `Name` shows
            params.add(node.name)
        elif isinstance(node, ast.alias):
            params.add(node.asname or node.name.partition(".")[0])
    tests: dict[str, str] = {}
    for node in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and bound.get(target.id) == 1 and target.id not in params:
            found = _switch(node.value, off, tests)
            if found:
                tests[target.id] = found
    return tests
