"""Code that runs on an event, not in an ordinary step, told by the shape of a test (branches.py
reads them with its other cold lines; the words are `[switches] rare-event-*` of the library
facts, read by library.py `rare_event` / `rare_event_function`):
* a block that resets the counter it is tested on runs once per interval (`periodic_counter`);
* a block that compacts a pool because a capacity probe failed runs only under fragmentation
  (`compaction_fallback`);
* a block tested on whether a call replaced a value it saved runs on that call's exception path
  (`replaced_value`);
* the operands of `a and b(...)` after one decided false never run (`short_circuit`);
* the `enabled` switch of a class named for a debug tool is off (`debug_tool`, `ENABLED`).
"""

from __future__ import annotations

import ast
import re

from .library import LibraryFacts
from .nodewalk import own_nodes, every_node

_BINDING_KINDS = frozenset({ast.Assign, ast.Name})

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

# the switch of an object that does its work only when turned on
ENABLED = frozenset({"self.enabled", "self._enabled", "self.is_enabled", "self._is_enabled"})


def debug_tool(name: str, library: LibraryFacts) -> bool:
    """A class named for a debug tool: a debug word among the words of its CamelCase name
    (`DsparkInfoDumper`, `StepTimingCollector`, `GCDebugger`). Its `self.enabled` is the
    tool's switch: SGLang's `DsparkInfoDumper.enabled` is true only when an environment
    variable names components to dump (`SGLANG_DSPARK_DEBUG_DUMP`), and every method that
    syncs returns first when it is off."""
    return any(w.lower() in library.debug_words for w in _CAMEL.findall(name))


def periodic_counter(stmt: ast.If) -> str | None:
    """Why a block runs once per so many calls (else None): `if self.step >= self.interval:`
    whose body sets `self.step = 0` (vLLM's EPLB rearranges the experts every
    `expert_rearrangement_step_interval` steps; a logger flushes every `log_interval` batches).
    The counter is an object's field (it lives across the calls) compared with a limit that is
    not a literal; the reset is a statement of the block itself, not of a nested one. Not `==`
    (a state compared with a value), nor a threshold with no reset (once past it, every call)."""
    test = stmt.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Gt, ast.GtE))):
        return None
    counter, limit = test.left, test.comparators[0]
    if not (isinstance(counter, ast.Attribute) and isinstance(counter.value, ast.Name) and counter.value.id == "self") \
            or isinstance(limit, ast.Constant):
        return None
    for inner in stmt.body:
        if isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Constant) and inner.value.value == 0 \
                and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and t.attr == counter.attr for t in inner.targets):
            return f"runs once every `{ast.unparse(limit)}` calls: it resets the counter `self.{counter.attr}`"
    return None


def rare_block(stmt: ast.If, library: LibraryFacts, before: list = ()) -> str | None:
    """Why the body of an `if` runs only on an event, not in an ordinary call (else None);
    `before`: the statements of its block above it."""
    return periodic_counter(stmt) or compaction_fallback(stmt, library) or replaced_value(stmt, before)


def replaced_value(stmt: ast.If, before: list) -> str | None:
    """Why a block runs only when a call handed back a new object (else None): `if input_ids is
    not original_input_ids:` after `original_input_ids = input_ids` saved the value and a call
    bound the name again (`embedding, input_ids = _embed(..., input_ids)`). The test asks
    whether the call replaced what it was given, which it does only on its own exception path
    (SGLang's multimodal embedding: only a model that prunes video frames rewrites the ids;
    every other returns those it was given). Not when a plain expression binds it again
    (`x = x[mask]` is a new object every time), nor when the saved name is bound again."""
    test = stmt.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Name)):
        return None
    names = {test.left.id, test.comparators[0].id}
    for index in range(len(before) - 1, -1, -1):
        alias = before[index]
        if isinstance(alias, ast.Assign) and len(alias.targets) == 1 and isinstance(alias.targets[0], ast.Name) \
                and isinstance(alias.value, ast.Name) and {alias.targets[0].id, alias.value.id} == names:
            saved, current = alias.targets[0].id, alias.value.id
            binds = [value for later in before[index + 1:] for value in _bindings(later, names)]
            if binds and all(name == current and isinstance(value, ast.Call) for name, value in binds):
                return f"runs only when a call replaced `{current}` (it is no longer `{saved}`, saved before the call)"
            return None
    return None


def _bindings(stmt, names: set) -> list:
    """(name, value) of each binding of one of `names` in a statement, nested blocks included
    (not nested definitions); value is None for a binding other than a plain `=`."""
    nodes = own_nodes([stmt], _BINDING_KINDS, enter_block_definitions=False)
    found, plain = [], set()
    for node in nodes:
        if isinstance(node, ast.Assign):
            for name in (n for target in node.targets for n in every_node(target) if isinstance(n, ast.Name)):
                plain.add(id(name))
                if name.id in names:
                    found.append((name.id, node.value))
    # a `for`, `with ... as`, `:=`, `+=` or annotated binding
    found.extend((node.id, None) for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                 and node.id in names and id(node) not in plain)
    return found


def compaction_fallback(stmt: ast.If, library: LibraryFacts) -> str | None:
    """Why a block runs only when a pool is too fragmented for its fast path (else None): the
    test says a capacity probe failed (`if not self._can_reserve_without_compaction(counts):`,
    `if n > self.largest_free_run():`: a call under `not`, or a size compared with a call), and
    a statement of the block itself compacts (`self._compact()`, `if not _relieve_for_alloc(self,
    n): return None`: a call named with a word of `[switches] rare-event-compaction`, as the
    statement, the value it returns or the test of an `if` of the block).
    Compaction restores room the free total already has, so the fast path serves every
    reservation until frees leave holes it cannot use (SGLang's unified host pool waits on every
    transfer's event before it moves pages). Not a compaction that no failed probe guards (an
    allocator's eager compaction on every free), nor one in a nested block's body (what decides
    it is another test)."""
    test = stmt.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        probe = isinstance(test.operand, ast.Call)
    else:
        probe = _size_probe(test, fits=False)
    if not probe:
        return None
    if any(_compacts(inner, library) for inner in stmt.body):
        return f"compacts the pool only when `{ast.unparse(test)}`: a fast path failed under fragmentation"
    return None


def compaction_after(stmt: ast.If, following: list, library: LibraryFacts) -> str | None:
    """Why the statements after `stmt` run only when a capacity probe failed (else None): the
    early-return twin of `compaction_fallback`. `stmt` returns when a size probe says the
    allocation fits (`if need_tokens <= self.available_size(): return True`: a size compared
    with a call; no `else`), and a statement after it, at its own level, compacts (SGLang's
    unified pool: `return _relieve_for_alloc(self, need_tokens)`, the shortfall ladder that
    flushes a neighbour's holes and moves a floating band). What follows the early return runs
    only on the shortfall, so it is the same event as the block of `if n > free(): compact()`.
    Not a probe whose body falls through (the code after it runs either way), nor one that
    raises (an error check: vLLM's `if torch.cuda.is_current_stream_capturing(): raise ...`
    before per-step planning), nor a bare call (`if self.is_empty(): return` says nothing of
    a shortfall), nor a compaction only in a nested block's body."""
    if stmt.orelse or not stmt.body or not isinstance(stmt.body[-1], ast.Return) or not _size_probe(stmt.test, fits=True):
        return None
    if any(_compacts(inner, library) for inner in following):
        return f"compacts the pool only when `{ast.unparse(stmt.test)}` is false: a fast path failed under fragmentation"
    return None


def _size_probe(test, fits: bool) -> bool:
    """A size compared with a call that says the size does not fit (`n > self.free_run()`,
    `self.available_size() < need`) or, with `fits`, that it fits (`need <= self.available_size()`,
    `self.free_run() >= n`). Not `if self._shortfall(n) > 0: return False`, a lack compared
    with a literal."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Lt, ast.LtE)):
        left, right = right, left  # now `left > right` (or >=)
    elif not isinstance(op, (ast.Gt, ast.GtE)):
        return False
    # `size > call()` does not fit; `call() > size` (or >=) fits. The size is a name or an
    # expression, not a literal (`self._shortfall(n) > 0` measures a lack, not a room).
    room, size = (left, right) if fits else (right, left)
    return isinstance(room, ast.Call) and not isinstance(size, (ast.Call, ast.Constant))


def _compacts(stmt, library: LibraryFacts) -> bool:
    """A statement that calls a compaction for its effect: the call is the statement, the
    value it returns, or the test of an `if` (under `not` or not): a success flag. Not a value
    assigned (`indptr, last = compact_page_metadata(positions, n)` computes data)."""
    if isinstance(stmt, ast.If):
        call = stmt.test
    elif isinstance(stmt, (ast.Expr, ast.Return)):
        call = stmt.value
    else:
        return False
    if isinstance(call, ast.UnaryOp) and isinstance(call.op, ast.Not):
        call = call.operand
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return library.has_word(name, library.rare_event_compaction)


def short_circuit(test, evaluate) -> list[tuple[int, int, str]]:
    """The lines of the operands of `a and b(...)` after one that `evaluate` decides false (of
    `or`: true), which never run: vLLM's EPLB calls `self._all_ranks_result_ready(state)` (an
    all-reduce and an `.item()`) only `if state.rebalanced and ...`. A line that an operand
    before them, one that calls something, shares stays."""
    if not isinstance(test, ast.BoolOp):
        return []
    decisive = isinstance(test.op, ast.Or)
    for index, operand in enumerate(test.values[:-1]):
        value, why = evaluate(operand)
        if value is not decisive:
            continue
        busy = {line for before in test.values[:index + 1] if _calls_any(before)
                for line in range(before.lineno, (before.end_lineno or before.lineno) + 1)}
        cold = []
        for after in test.values[index + 1:]:
            lines = [n for n in range(after.lineno, (after.end_lineno or after.lineno) + 1) if n not in busy]
            if lines and _calls_any(after):
                cold.append((lines[0], lines[-1], f"not evaluated: {why}"))
        return cold
    return []


def _calls_any(node) -> bool:
    return any(isinstance(n, ast.Call) for n in every_node(node))
