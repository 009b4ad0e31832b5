"""What a `with` block says about the syncs in it, read from its context managers' names
(library facts; syncscope/lint/branches.py marks the lines, and the runtime trap reads the
accepted blocks too: syncscope/runtime/accepted_blocks.py, so both say the same):

* `with torch.cuda.graph(g):` in a function's own body: the function captures a CUDA graph, so
  it runs when a graph is built (start-up, a new shape), not in a step (`graph-captures`);
* `with gpu_sync_allowed():` (vLLM's sync check lets every sync inside pass, on this thread,
  callees included) or `with syncscope.allow_sync("why"):` (the runtime trap marks them allowed):
  the code accepts the syncs inside (`accepted-sync-blocks`). They stay in the lint report,
  marked `accepted` with why, and the trap records them allowed. Not hidden: an accepted sync is
  known debt that the engines' own later fixes removed (vLLM 0.30's `mamba_mixer2.py` held four
  `.tolist()` calls in such a block; later releases dropped them), and the block is no cold
  code: what it calls still syncs for its callers (whose call sites are marked accepted too
  when that is the only sync they reach: syncscope/lint/summaries.py).

A call with a keyword is not read as accepting: a keyword may narrow what it accepts (vLLM's
`gpu_sync_allowed(first_only=True)` lets only the first entry pass, later syncs there are still
reported), nor is a conditional manager (`nullcontext() if pinned else gpu_sync_allowed()`).
"""

from __future__ import annotations

import ast

# The prefix of an accepted sync's reason (branches.py carries the block with the cold lines;
# is_accepted tells them apart).
ACCEPTED = "accepted by the code"
# The managers built in (library facts `accepted-sync-blocks` add a project's own): vLLM's and
# syncscope's, as written after `from ... import name` or `import syncscope`.
ACCEPTING_MANAGERS = frozenset({"gpu_sync_allowed", "allow_sync", "syncscope.allow_sync"})


def dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def captures_graph(function, names: frozenset) -> bool:
    """`function`'s own body (not under an `if`) holds `with torch.cuda.graph(g):`."""
    return any(isinstance(stmt, (ast.With, ast.AsyncWith)) and any(
        isinstance(item.context_expr, ast.Call) and dotted(item.context_expr.func) in names
        for item in stmt.items) for stmt in function.body)


def accepted_block(stmt, names: frozenset) -> str | None:
    """Why the body of `with` statement `stmt` is accepted by the code, or None."""
    if not names or not isinstance(stmt, (ast.With, ast.AsyncWith)) or not stmt.body:
        return None
    for item in stmt.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and not call.keywords:
            name = dotted(call.func)
            if name in names:
                return f"{ACCEPTED}: inside `with {name}(...)`" if call.args else f"{ACCEPTED}: inside `with {name}()`"
    return None


def is_accepted(why: str | None) -> bool:
    return bool(why) and why.startswith(ACCEPTED)
