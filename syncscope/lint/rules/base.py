"""What a rule is: a small class with a stable code, the events it listens to, and the code
examples that prove what it flags (INVALID) and what it leaves alone (VALID). The test suite runs
every example of every rule, and `rules/<CODE>.md` documents it.

Rules never walk the tree themselves: the analyzer walks each function once, works out where
every value lives, and hands the rules only the events they subscribed to (calls by method or
function name, subscripts, conditions, attribute reads). That keeps the run to one pass however
many rules there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import libcst as cst


@dataclass(frozen=True)
class Invalid:
    """An example that must be flagged; `fixed` is the expected source after `--fix`
    (`--unsafe-fixes` for unsafe fixes), when the rule offers one."""

    code: str
    fixed: str | None = None


@dataclass
class Fix:
    """A mechanical rewrite. `build` is only called when fixes are applied, so the normal run
    pays nothing for it; it returns (node to replace, replacement)."""

    applicability: str  # "safe" or "unsafe"
    title: str
    build: Callable[[], tuple[cst.CSTNode, cst.CSTNode]]


@dataclass
class CallInfo:
    """One call, with where its receiver and arguments live."""

    node: cst.Call
    qualname: str | None  # `torch.nonzero`, `int`, `pkg.mod.helper`; None for method calls
    method: str | None  # attribute name for `x.item()` (also set for `torch.nonzero`)
    receiver: cst.BaseExpression | None  # `x` in `x.item()`; None for module functions
    receiver_where: int | None
    args: list[tuple[cst.BaseExpression, int]] = field(default_factory=list)
    kwargs: dict[str, tuple[cst.BaseExpression, int]] = field(default_factory=dict)
    has_star_args: bool = False

    def kwarg(self, name: str) -> cst.BaseExpression | None:
        found = self.kwargs.get(name)
        return found[0] if found else None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as in the rule page's title
    summary: ClassVar[str]  # one line: what is flagged
    level: ClassVar[str] = "error"
    fix_applicability: ClassVar[str | None] = None  # "safe", "unsafe", "sometimes" or None
    # Which calls reach on_call: `x.name(...)` when name is in METHODS, a module function when
    # its qualified name is in FUNCTIONS (see `handles`).
    METHODS: ClassVar[frozenset[str]] = frozenset()
    FUNCTIONS: ClassVar[frozenset[str]] = frozenset()
    ATTRIBUTES: ClassVar[bool] = False  # wants on_attribute for configured property names
    # A finding that holds only if the tree keeps an attribute on the device (`needs_device`)
    # is no sync for the function's callers, unless the rule says it is one wherever the finding
    # holds: then the whole-program pass keeps its root exactly when the engine keeps the finding
    # (program.py)
    ROOT_ON_CONDITION: ClassVar[bool] = False
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[str | Invalid]] = []

    def __init__(self, config) -> None:
        self.config = config

    def call_names(self) -> set[str] | frozenset[str]:
        """Last name parts of the calls this rule may handle (what the registry indexes by)."""
        return {n.rsplit(".", 1)[-1] for n in self.METHODS | self.FUNCTIONS}

    def handles(self, call: CallInfo) -> bool:
        """Whether on_call wants this call: a method call by its method name, a module function
        by its qualified name (`np.unique` is not `torch.unique`)."""
        if call.receiver is not None:
            return call.method in self.METHODS
        return call.qualname in self.FUNCTIONS

    # Hooks. `ctx` is the analyzer's FunctionContext (see context.py for what it offers).
    def on_call(self, ctx, call: CallInfo) -> None:  # pragma: no cover - interface
        pass

    def on_subscript_read(self, ctx, node: cst.Subscript, base_where: int) -> None:  # pragma: no cover
        pass

    def on_subscript_store(self, ctx, target: cst.Subscript, base_where: int, value: cst.BaseExpression | None, value_where: int) -> None:  # pragma: no cover
        pass

    def on_condition(self, ctx, test: cst.BaseExpression, where: int, context: str) -> None:  # pragma: no cover
        pass

    def on_attribute(self, ctx, node: cst.Attribute, receiver_where: int) -> None:  # pragma: no cover
        pass


def overrides(rule: Rule, hook: str) -> bool:
    return getattr(type(rule), hook) is not getattr(Rule, hook)
