"""The plain records a lint run passes between its stages: a finding placed on its lines, a call
site the whole-program pass resolves, a sync root, a step of a call chain.

They are named tuples: as cheap to build and to pickle (the cache keeps them, worker processes
send them back) as the bare tuples they replace, but read by name. Stages that add a fact to a
record add a field here, never a table keyed by the record's position in some list.
"""

from __future__ import annotations

from typing import NamedTuple


class ChainStep(NamedTuple):
    """One call on the way from a flagged call site down to the line that syncs."""

    path: str
    line: int
    function: str  # qualified
    note: str  # "calls `f`", or the root's code and short message


class FieldRef(NamedTuple):
    """The attribute a value of unknown place was read from: its name, and the class of the
    object it was read from with the attribute hops in between, when the walk can tell
    (`self.mamba_cache.temporal` in a method of `MambaPool` -> ("MambaPool", "mamba_cache")).
    The run decides from every file whether that is a device tensor (owner_fields.py)."""

    name: str
    owner: tuple | None = None


class FileFinding(NamedTuple):
    """A finding placed on a file's lines (worker.py, wholeprogram.py), on its way to becoming
    an engine `Finding` once selection and suppressions are applied."""

    code: str
    line: int
    column: int
    stmt_start: int
    stmt_end: int
    function: str  # as written in its module (`Class.method`), or "<module>"
    message: str
    fix: str | None  # "safe", "unsafe" or None
    level: str
    # SYN601/SYN602: the ChainSteps from this site down to the root
    chain: tuple = ()
    # (class, attribute) the flagged value was read from: dropped when another file's class
    # keeps that attribute on the host (engine.py)
    field: tuple[str, str] | None = None
    # (qualified function, parameter) it flags: dropped when every call in the tree passes
    # host data for it (wholeprogram.py)
    param: tuple[str, str] | None = None
    # the name of the call whose result it flags (wholeprogram.py decides with its summary)
    origin: str | None = None
    # why it runs every step: the path from a per-step root, ((function, path, line), ...), root
    # first; or why it does not (reachability.py; engine.py's Scope fills both)
    per_step: tuple = ()
    cold: str | None = None
    # (attribute, 1-D only, owner): it holds only if the linted tree keeps that attribute on the
    # device (and only 1-D tensors in it, when the second item is True), by its name anywhere in
    # the tree or in the owner's class (`FieldRef.owner`); engine.py decides
    device_condition: tuple[str, bool, tuple | None] | None = None
    # (qualified function, parameter, its index, a method) when the stored value is that
    # parameter: it holds only if a per-step call in the tree passes a Python number for it
    # (python_args.py)
    python_arg: tuple | None = None
    # why the code accepts this sync: it sits in a block that accepts its syncs (with_blocks.py)
    accepted: str | None = None


def diagnostic(code: str, message: str, line: int = 1, column: int = 1, *, level: str = "error",
               fix: str | None = None) -> FileFinding:
    """A finding about the file itself (SYN001 unreadable, SYN002 syntax, SYN003 internal error,
    SYN900 unused suppression): on a line, not in a function."""
    return FileFinding(code, line, column, line, line, "<module>", message, fix, level)


class Root(NamedTuple):
    """A sync in a function's own body (a rule's finding, or a latent one), as the
    whole-program pass sees it: unconditional, on a parameter, or on a call's result."""

    code: str
    line: int
    stmt_start: int
    stmt_end: int
    message: str
    param: str | None  # the parameter the flagged value is computed from
    origin: str | None  # the name of the call whose result it flags (`name` or `name#k`)
    # a FileFinding.device_condition: a sync only where it holds (Rule.ROOT_ON_CONDITION)
    condition: tuple | None = None


class CallRecord(NamedTuple):
    """A call (or an attribute read that may be a property) to resolve against the tree
    (facts.py records, wholeprogram.py resolves)."""

    line: int
    column: int
    stmt_start: int
    stmt_end: int
    target: tuple  # (FUNC, qualname) | (METHOD, receiver, name) | (PROP, receiver or None, attr)
    args: tuple  # (position or None, keyword or None, Fact); position -1 is the receiver
    name: str  # the callee's name as written
