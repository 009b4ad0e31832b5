"""libcst's parse, without re-checking every node it builds.

Each libcst node checks its own fields when it is made (`CSTNode.__post_init__` calls
`_validate`: no newline in a `SimpleWhitespace`, no empty `Name`...). That guards trees a codemod
builds by hand; a tree the parser builds from source is valid by construction, and libcst's own
comment there says as much ("PERF: ... would allow us to avoid validating the tree when parsing
a file"). The checks were ~3.5% of a cold whole-vLLM lint (py-spy: 9.9 s of 288 s), for nothing.
`_validate` only raises; it sets nothing, so a node made without it is the same node.
"""

from __future__ import annotations

import libcst as cst


def _unchecked(self) -> None:
    pass


def parse_module(source: str) -> cst.Module:
    """`libcst.parse_module`, its nodes not validated. Not for trees built by hand: the check
    is switched off only while the parser runs (a lint is one thread: nothing else builds nodes
    meanwhile)."""
    checked = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _unchecked
    try:
        return cst.parse_module(source)
    finally:
        cst.CSTNode.__post_init__ = checked
