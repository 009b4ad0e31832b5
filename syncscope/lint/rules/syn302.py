from __future__ import annotations

from fnmatch import fnmatchcase

from ..imports import dotted
from ._common import owner_matches
from .base import Rule


class ConfiguredSyncingCall(Rule):
    """Calls to functions the project knows to sync, listed under `syncing-functions` in the
    config: a qualified name (`pkg.utils.wait_all`), `Type.method` (matched against the
    receiver's annotation) or `name.method` (matched against the receiver's text)."""

    code = "SYN302"
    name = "configured-syncing-call"
    summary = "A call to a function configured as syncing (`syncing-functions`)"

    VALID = [
        "def f(x):\n    return x.other()\n",
    ]
    # The test configuration lists `mylib.sync_all` and `Runner.flush`.
    INVALID = [
        "from mylib import sync_all\ndef f():\n    sync_all()\n",
        "def f(r: Runner):\n    r.flush()\n",
    ]

    def __init__(self, config):
        super().__init__(config)
        self.patterns = list(config.syncing_functions)
        self.names = frozenset(p.rsplit(".", 1)[-1] for p in self.patterns)

    def call_names(self):
        return self.names

    def handles(self, call):
        return True  # patterns match qualified names and `Type.method` alike (globs allowed)

    def on_call(self, ctx, call):
        for pattern in self.patterns:
            matched = call.qualname is not None and fnmatchcase(call.qualname, pattern)
            if not matched and call.method is not None and "." in pattern:
                owner, name = pattern.rsplit(".", 1)
                matched = name == call.method and owner_matches(ctx, call.receiver, owner)
            if matched:
                ctx.report(
                    self, call.node,
                    f"`{dotted(call.node.func) or call.method}()` is configured as syncing (`{pattern}`)",
                    anchor=(call.method or "") + "(",
                )
                return
