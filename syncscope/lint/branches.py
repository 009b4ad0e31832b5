"""Which lines of a file never run in a serving step on a CUDA GPU, and which method calls a
function makes on receivers of unknown class: what the per-step scope (reachability.py) needs
from one file, read from its `ast`.

Branch conditions are evaluated the way mypy evaluates `sys.platform` checks, three-valued,
assuming a CUDA GPU, serving, no debugging (library.py lists the words):
* `if _is_npu:`, `elif is_hip():`, `if current_platform.is_rocm():`, `if envs.VLLM_ROCM_USE_AITER:`
  are false (the body never runs), `if _is_cuda:` true (the `else` never runs);
* `if envs.VLLM_DEBUG_DUMP:`, `if self.debug_mode:`, `if get_bool_env_var("SGLANG_X_DEBUG"):`,
  `if logger.isEnabledFor(...)`, `if self.training:`, `if torch.cuda.is_current_stream_capturing():`
  are false;
* `if not is_pin_memory_available(dev):` (library.py `true-on-cuda`) is false: pinned memory is
  there on a CUDA GPU, its pageable fallback does not run;
* `not`, `and`, `or` combine them (`if _is_cuda or _is_hip:` is true); anything else is unknown;
* a test that the test around it decides once those are read is decided too (implied_tests.py:
  `use_triton = not _HAS_KERNEL or "seq_lens_cpu" in kwargs; if use_triton: if "seq_lens_cpu"
  not in kwargs:` is false on CUDA).
A false `assert`, or a true test whose body returns or raises, makes the rest of its block cold;
an `except` handler is an error path (cold); a function or class named for another platform
(`forward_npu`, `AscendAttentionBackend`) is cold as a whole, as is a class whose `__init__`
always imports another platform's package (platform_imports.py: `import wave_lang...`). A block
the code accepts its syncs in (`with gpu_sync_allowed():`, with_blocks.py) travels with the cold
ranges, marked so: its findings are reported and marked accepted, not cold (ColdLines skips it).

Error paths and dead code (errorpaths.py has the predicates and the whole-program part):
* an `if`/`elif`/`else` block that ends in `raise` (and cannot leave early) runs only on the way
  to an exception: cold; so is a function all of whose paths raise, and (decided over the whole
  program) a block that ends in a call to such a function. Not inside a `try` body: a raise the
  same function catches may be control flow;
* the statements after an unconditional `raise` / `return` / `continue` / `break` never run.

Everything returned is plain tuples: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import functools
import re

from .cache_lookups import GROWTH, by_identity, capacity_of, entry_looked_up
from .capability_tests import available_test, capability_test
from .comparetests import compare_test, precondition
from .errorpaths import always_raises, assert_message, error_block, tail_call_line
from .exprguards import guarded_ifexp, ifexp_guard, nullable_required, or_guard
from .initflags import once_after
from .keyword_dicts import keyword_dicts
from .local_modules import module_receiver, note_import
from .rare_events import ENABLED, compaction_after, debug_tool, rare_block, short_circuit
from .library import LibraryFacts, words
from .modulenames import NoneSites
from .nodewalk import nodes_breadth_first, every_node
from .cuda_dispatch import dispatch_blocks, is_dispatcher
from .memo_params import module_params
from .noneguards import none_guard
from .numberguards import number_guard
from .held_tests import class_fields, foreign_stores, function_locals, module_globals
from .implied_tests import implied_cold
from .platform_imports import foreign_import
from .unbound_names import unbound_on_cuda, unbound_reads
from syncscope.with_blocks import accepted_block, captures_graph

_TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_LONG_PLATFORM = 4  # platform words at least this long also match inside a CamelCase word


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):  # `get_platform().is_hip`: the attribute chain decides
        inner = _dotted(node.func)
        parts.append(inner or "")
        return ".".join(reversed(parts))
    if not isinstance(node, ast.Name):
        return ".".join(reversed(parts)) if parts else None
    parts.append(node.id)
    return ".".join(reversed(parts))


class Conditions:
    """Evaluates a branch test: (True / False / None, why)."""

    def __init__(self, library: LibraryFacts) -> None:
        self.lib = library
        # `self.<field>` -> (value, why) in the class walked: fields set only from a decided
        # test (platform_fields.py: `self.sync_dbo_comm = current_platform.is_rocm()`)
        self.fields: dict[str, tuple[bool, str]] = {}
        self.locals: dict[str, tuple[bool, str]] = {}  # the same for the function's locals
        self.globals: dict[str, tuple[bool, str]] = {}  # and the module's (held_tests.module_globals)
        self.tool_class: str | None = None  # the class walked, when its name is a debug tool's

    def evaluate(self, node) -> tuple[bool | None, str]:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value, why = self.evaluate(node.operand)
            return (None if value is None else not value), why
        if isinstance(node, ast.BoolOp):
            results = [self.evaluate(v) for v in node.values]
            decisive = False if isinstance(node.op, ast.And) else True
            for value, why in results:
                if value is decisive:
                    return decisive, why
            if all(value is (not decisive) for value, _ in results):
                return (not decisive), results[0][1]
            return None, ""
        if isinstance(node, ast.Compare):
            switched = self._switch_on(node)
            if switched is not None:
                return switched
            side = node.comparators[0] if isinstance(node.left, ast.Constant) else node.left
            return compare_test(node, _dotted(side) or "", self.lib)
        if isinstance(node, ast.Call):
            name = _dotted(node.func) or ""
            if any(name == r or name.endswith("." + r) for r in self.lib.env_readers):
                first = node.args[0] if node.args else None
                default = node.args[1] if len(node.args) > 1 else \
                    next((k.value for k in node.keywords if k.arg == "default"), None)
                if default is not None and not (isinstance(default, ast.Constant) and _off(default.value)):
                    return None, ""  # `os.environ.get("X_CHECK", "1")`: on unless turned off
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    if self.lib.has_word(first.value, self.lib.debug_words):
                        return False, f"debug switch `{first.value}`"
                    if self.lib.env_check(first.value):
                        return False, f"check switch `{first.value}` (off by default)"
                return None, ""
            return capability_test(node, name, self.lib.capability_tests) or self._named(name)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._named(_dotted(node) or "")
        return None, ""

    def _named(self, name: str) -> tuple[bool | None, str]:
        value, why = self._by_name(name)
        if value is None and name in self.globals:  # a module name kept from a decided test
            return self.globals[name]
        return value, why

    def _by_name(self, name: str) -> tuple[bool | None, str]:
        if not name:
            return None, ""
        if name.startswith("self.") and name[5:] in self.fields:
            return self.fields[name[5:]]
        if name in self.locals:
            return self.locals[name]
        if self.tool_class and name in ENABLED:  # `if not self.enabled: return` in a `DsparkInfoDumper`
            return False, f"`{name}` of `{self.tool_class}`, a debug tool: off unless turned on"
        if name.endswith(".get") and name[:-4].rsplit(".", 1)[-1].isupper():  # SGLang's `envs.X.get()`
            name = name[:-4]
        for entry in self.lib.false_while_serving:
            if name == entry or name.endswith("." + entry):
                return False, f"`{name}` is false while serving"
        for entry in self.lib.true_on_cuda:
            if name == entry or name.endswith("." + entry):
                return True, f"`{name}` is true on CUDA"
        last = name.rsplit(".", 1)[-1]
        split = words(last)
        if package := available_test(split, self.lib.available_on_cuda):
            return True, f"`{name}` tests that {package} is available: true on CUDA"
        if self.lib.has_word(name, self.lib.debug_words):
            return False, f"debug switch `{name}`"
        if self.lib.has_word(last, self.lib.capture_states):
            return False, f"`{name}`: CUDA-graph capture, which runs once at start-up"
        if name.endswith("cuda.is_available"):
            return True, f"`{name}` is true on CUDA"
        if not split:
            return None, ""
        if event := self.lib.rare_event(last):  # `if scheduler_output.preempted_req_ids:`
            return False, f"`{name}` names an event that is no ordinary step (`{event}`)"
        if last.isupper():  # an environment flag: `envs.VLLM_ROCM_USE_AITER`
            if any(w in self.lib.other_words for w in split):
                return False, f"`{name}` is for another platform than CUDA"
            if self.lib.env_check(last):
                return False, f"check switch `{name}` (off by default)"
            return None, ""
        if split[0] not in self.lib.predicate_prefixes:
            return None, ""
        rest = split[1:]
        if any(w in self.lib.other_words for w in rest) or self.lib.has_word("_".join(rest), self.lib.other_words):
            return False, f"`{name}` is false on CUDA"
        if rest and rest[0] in self.lib.cuda_words and all(w in ("alike", "available", "platform") for w in rest[1:]):
            return True, f"`{name}` is true on CUDA"
        return None, ""

    def _switch_on(self, node: ast.Compare) -> tuple[bool, str] | None:
        """`os.environ.get("SGLANG_X_DEBUG_BOUNDS") == "1"`, `envs.X_DEBUG in ("1", "true")`: a
        switch that is off, compared with a value that turns it on, is false too."""
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.In)):
            return None
        right = node.comparators[0]
        values = right.elts if isinstance(node.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
            else [right]
        if not values or not all(isinstance(v, ast.Constant) and not _off(v.value) for v in values):
            return None
        value, why = self.evaluate(node.left)
        return (False, why) if value is False and why else None


def _off(value) -> bool:
    """A literal that leaves a switch off: None, False, 0, "", "0", "false", "off", "no"."""
    return value in (None, False, 0, "", "0") or str(value).lower() in ("false", "off", "no")


def platform_name(name: str, library: LibraryFacts) -> bool:
    """A function or class named for another platform: `forward_npu`, `AiterMLAImpl`,
    `XPUModelRunner` (but not `gather_to_cpu`: a host copy is what a `_cpu` helper makes)."""
    split = [w.lower() for w in _CAMEL.findall(name)] if not name.islower() else words(name)
    hits = [w for w in split if w in library.other_words]
    lowered = name.lower()
    hits += [w for w in library.other_words if len(w) >= _LONG_PLATFORM and w in lowered]
    if not hits:
        return False
    if set(hits) == {"cpu"}:  # `forward_cpu` is the CPU platform's; `x_to_cpu` is a host copy
        return split[:1] == ["forward"]
    return True


def platform_path(rel: str, library: LibraryFacts) -> str | None:
    """A path component naming another platform (`hardware_backend/npu/`, `rocm_aiter_mla.py`)."""
    parts = rel.replace("\\", "/").split("/")
    for part in parts[:-1]:
        if part in library.other_dirs:
            return part
    for part in parts:
        stem = part[:-3] if part.endswith(".py") else part
        for word in words(stem):
            if word in library.other_path_words:
                return word
    return None


class _Walk:
    def __init__(self, module: str, aliases: dict, library: LibraryFacts) -> None:
        self.module = module
        self.aliases = aliases
        self.lib = library
        self.conditions = Conditions(library)
        self.cold: list[tuple[int, int, str]] = []
        self.dispatch: dict[str, list[tuple[int, str, bool, tuple | None]]] = {}
        # function -> [(start, end, parameter)]: lines that run only when it is None (or a number: numberguards.py)
        self.guards: dict[str, list[tuple[int, int, str]]] = {}
        self.params: dict[str, frozenset] = {}
        # required parameters typed `Optional[X]`: callers pass None to them, so a None-test on
        # one is no guard that "every caller passes it" rules out (callguards.guarded_lines)
        self.nullable: dict[str, frozenset] = {}
        # function -> {name: keys}: locals that hold a dict of known keys, passed as `**name`
        self.kw_dicts: dict[str, object] = {}  # (the function's node until first needed)
        self.functions: dict[str, ast.AST] = {}  # function -> its node
        self.host_functions = _patterns(library.host_functions)
        # error paths (errorpaths.py): functions all of whose paths raise, and per function the
        # blocks that end in a call the whole-program pass may find to be one of them
        self.raising: list[str] = []
        # cuda_dispatch.py: module functions that tell whether their inputs are on CUDA, and per
        # function the blocks a call of such a function decides
        self.dispatchers: list[str] = []
        self.dispatch_tests: dict[str, list[tuple[int, int, int]]] = {}
        self.tails: dict[str, list[tuple[int, int, int]]] = {}
        self.in_try = 0  # depth of `try` bodies around the block walked, in this function
        self.module_names: frozenset = frozenset()  # top-level assigned names (cache_fill)
        self.foreign: frozenset = frozenset()  # attributes stored on receivers other than `self`
        self.none_sites: NoneSites | None = None  # module-level names tested for None
        self.outer = None  # the outermost function around the block walked
        self.local_modules: dict[str, set] = {}  # function -> names its `import m` binds (local_modules.py)

    def qualify(self, local: str) -> str:
        return f"{self.module}.{local}" if self.module else local

    def mark(self, first, last, why: str) -> None:
        start = first.lineno
        end = getattr(last, "end_lineno", None) or last.lineno
        self.cold.append((start, end, why))

    def block(self, body, classes: list[str], function: str | None) -> None:
        last = body[-1] if body else None
        for index, stmt in enumerate(body):
            # the statements after this one: (first, last), or None (no slice: bodies can be long)
            rest = (body[index + 1], last) if index + 1 < len(body) else None
            if isinstance(stmt, _TERMINAL) and rest:
                self.mark(rest[0], rest[1], f"unreachable: after an unconditional `{_keyword(stmt)}`")
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local = f"{function}.{stmt.name}" if function else ".".join(classes + [stmt.name])
                args = stmt.args
                self.params[local] = frozenset(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
                self.nullable[local] = nullable_required(args)
                self.kw_dicts[local] = stmt  # read by keyword_dicts() at its first `**name` call
                self.functions[local] = stmt
                if platform_name(stmt.name, self.lib):
                    self.mark(stmt, stmt, f"`{stmt.name}` runs on another platform than CUDA")
                elif self.host_functions and self.host_functions.match(self.qualify(local)):
                    self.mark(stmt, stmt, f"`{stmt.name}` works on host data (library facts)")
                elif event := self.lib.rare_event_function(stmt.name):
                    self.mark(stmt, stmt, f"`{stmt.name}` runs only on an event that is no ordinary step (`{event}`)")
                elif captures_graph(stmt, self.lib.graph_captures):
                    self.mark(stmt, stmt, f"`{stmt.name}` captures a CUDA graph: runs when a graph is built, not in a step")
                elif function is None and not classes and is_dispatcher(stmt):
                    self.dispatchers.append(self.qualify(local))
                elif always_raises(stmt):
                    self.raising.append(self.qualify(local))
                    self.mark(stmt, stmt, f"error path: every path of `{stmt.name}` raises")
                for decorator in stmt.decorator_list:
                    self.calls(decorator, function)
                outer, self.in_try = self.in_try, 0
                outer_locals, outer_function = self.conditions.locals, self.outer
                self.conditions.locals = function_locals(stmt, self.conditions.evaluate)
                self.outer = outer_function or stmt
                self.block(stmt.body, classes, local)
                self.in_try, self.conditions.locals, self.outer = outer, outer_locals, outer_function
                continue
            if isinstance(stmt, ast.ClassDef):
                if platform_name(stmt.name, self.lib):
                    self.mark(stmt, stmt, f"`{stmt.name}` is for another platform than CUDA")
                elif package := foreign_import(stmt, self.lib.other_packages):  # platform_imports.py
                    self.mark(stmt, stmt, f"`{stmt.name}` imports `{package}` when built: a package of another platform than CUDA")
                outer_fields, outer_locals = self.conditions.fields, self.conditions.locals
                outer_tool = self.conditions.tool_class
                self.conditions.tool_class = stmt.name if debug_tool(stmt.name, self.lib) else outer_tool
                self.conditions.locals = {}
                self.conditions.fields = class_fields(stmt, self.conditions.evaluate, self.foreign)
                self.block(stmt.body, classes + [stmt.name], None)
                self.conditions.fields, self.conditions.locals = outer_fields, outer_locals
                self.conditions.tool_class = outer_tool
                continue
            if isinstance(stmt, (ast.If, ast.While)):
                value, why = self.conditions.evaluate(stmt.test)
                value = None if precondition(stmt, value) else value  # `if t.device.type != "cpu": raise`
                self.calls(stmt.test, function)
                self.cold.extend(short_circuit(stmt.test, self.conditions.evaluate))
                if isinstance(stmt, ast.If):  # `if use_triton: if "x" not in kwargs:` (implied_tests.py)
                    self.cold.extend(implied_cold(stmt, body[index - 1] if index else None, self.conditions.evaluate))
                if function is not None and isinstance(stmt, ast.If):
                    self.guard(stmt, function)
                    number_guard(self, stmt, function)  # `if isinstance(p, (int, float)):`
                    self.none_sites.visit(stmt, rest, self.outer, self.qualify(function))
                if value is False:
                    self.mark(stmt.body[0], stmt.body[-1], why)
                    if isinstance(stmt, ast.If) and stmt.orelse and _terminates(stmt.orelse) and rest:
                        self.mark(rest[0], rest[1], why)
                elif value is True:
                    if stmt.orelse:
                        self.mark(stmt.orelse[0], stmt.orelse[-1], why)
                    if isinstance(stmt, ast.If) and _terminates(stmt.body) and rest:
                        self.mark(rest[0], rest[1], why)
                if isinstance(stmt, ast.If):
                    once = once_after(stmt, body[index + 1:], self.module_names, body[:index]) if function and rest else None
                    if once:
                        self.mark(rest[0], rest[1], once)
                    self.error_paths(stmt, function)
                    if function is not None and (decided := dispatch_blocks(stmt, rest)):
                        self.dispatch_tests.setdefault(self.qualify(function), []).extend(decided)
                    if function is not None and (period := rare_block(stmt, self.lib, body[:index])):
                        self.mark(stmt.body[0], stmt.body[-1], period)
                    if function is not None and rest and (later := compaction_after(stmt, body[index + 1:], self.lib)):
                        self.mark(rest[0], rest[1], later)
                    cache = self.cache_fill(stmt, body[:index], function) if function is not None else None
                    if cache is not None:
                        how = "once per new largest size" if isinstance(stmt.test.ops[0], GROWTH) else "once per key"
                        self.mark(stmt.body[0], stmt.body[-1], f"fills the module's cache `{cache}`: runs {how}")
                self.block(stmt.body, classes, function)
                self.block(stmt.orelse, classes, function)
                continue
            if function is not None and isinstance(stmt, ast.Import):
                note_import(self, stmt, function)
            if (accepted := accepted_block(stmt, self.lib.accepted_sync_blocks)) is not None:
                self.mark(stmt.body[0], stmt.body[-1], accepted)
            if isinstance(stmt, ast.Assert):
                value, why = self.conditions.evaluate(stmt.test)
                if value is False and rest and not precondition(stmt, value):
                    self.mark(rest[0], rest[1], why)
                if (message := assert_message(stmt, rest[0] if rest else None)) is not None:
                    self.mark(message, message, "error path: an `assert`'s message, evaluated only when it fails")
            if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                self.in_try += 1
                self.block(stmt.body, classes, function)
                self.in_try -= 1
                for handler in stmt.handlers:
                    if handler.body:
                        self.mark(handler.body[0], handler.body[-1], "error handler (`except`)")
                    self.block(handler.body, classes, function)
                self.block(stmt.orelse, classes, function)
                self.block(stmt.finalbody, classes, function)
                continue
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    self.block(inner, classes, function)
            if isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    self.block(case.body, classes, function)
            if function is not None and isinstance(getattr(stmt, "value", None), (ast.IfExp, ast.BoolOp)):
                around = (body[index - 1].end_lineno if index else 0, rest[0].lineno if rest else 1 << 30)
                # `cpu if cpu is not None else t.cpu()`, `cache = plan_cache or PlanCache()`: exprguards.py
                found = ifexp_guard(stmt, self.params.get(function, ()), self.nullable.get(function, ()), *around) \
                    if isinstance(stmt.value, ast.IfExp) else or_guard(stmt, self.functions[function],
                                                                       self.nullable.get(function, ()), *around)
                if found is not None:
                    self.guards.setdefault(self.qualify(function), []).append(found)
                if isinstance(stmt.value, ast.IfExp):
                    self.decided_arm(stmt, around)
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.calls(child, function)
                elif isinstance(child, ast.withitem):
                    self.calls(child.context_expr, function)

    def decided_arm(self, stmt, around: tuple) -> None:
        """`cpu = t.cpu() if in_capture else t_cpu`: the arm of a conditional expression whose
        test is decided like an `if` (CUDA-graph capture, another platform, a debug switch) never
        runs while serving, when it has its lines to itself (exprguards.guarded_ifexp)."""
        shaped = guarded_ifexp(stmt, *around)
        if shaped is None:
            return
        value, arm, is_body = shaped
        decided, why = self.conditions.evaluate(value.test)
        if decided is not None and why and decided is not is_body:
            self.mark(arm, arm, why)

    def error_paths(self, stmt: ast.If, function: str | None) -> None:
        """The `if` body / `else` that only lead to an exception: cold now (a `raise`), or once
        the whole program knows the call it ends in always raises (errorpaths.error_lines)."""
        if self.in_try:
            return
        for branch in (stmt.body, stmt.orelse):
            # an `elif` is an `If` of its own in `orelse`: walked (and judged) by itself
            if not branch or (branch is stmt.orelse and len(branch) == 1 and isinstance(branch[0], ast.If)):
                continue
            if error_block(branch):
                self.mark(branch[0], branch[-1], "error path: the block ends in `raise`")
            elif function is not None:
                line = tail_call_line(branch)
                if line is not None:
                    end = getattr(branch[-1], "end_lineno", None) or branch[-1].lineno
                    self.tails.setdefault(self.qualify(function), []).append((branch[0].lineno, end, line))

    def module_params(self, function: str) -> tuple[frozenset, frozenset]:
        """The parameters of `function` declared an `nn.Module`, and those declared a list of them."""
        node, types = self.functions[function], self.lib.module_types
        return module_params(node, self.aliases, types), module_params(node, self.aliases, types, containers=True)

    def cache_fill(self, stmt: ast.If, before: list, function: str) -> str | None:
        """The module-level dict an `if` fills on a miss, else None: `if key not in _CACHE:
        _CACHE[key] = build(...)`, or `geometry = _GEOMETRY.get(key)` then `if geometry is None:
        ... _GEOMETRY[key] = geometry`. The process keeps such a dict for its lifetime, so the
        body runs once per key (a shape, a configuration), not every step; a dict on `self` may
        live only as long as a per-step object (memo.py decides those). A key read from an
        object's identity (`id(t)`, `t.data_ptr()`) is new with each new tensor: no such fill."""
        test = stmt.test
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.NotIn) and isinstance(right, ast.Name):
            cache, key = right.id, test.left
        elif isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None \
                and isinstance(test.left, ast.Name):
            looked_up = entry_looked_up(test.left.id, before)
            if looked_up is None:
                return None
            cache, key = looked_up
        elif isinstance(op, GROWTH):
            # growth: `cap = 0 if cached is None else cached["cap"]` then `if cap < bs:` rebuilds
            # the entry bigger (vLLM/SGLang buffers doubled on demand): once per new largest size
            smaller = test.left if isinstance(op, (ast.Lt, ast.LtE)) else right
            looked_up = capacity_of(smaller, before)
            if looked_up is None:
                return None
            cache, key = looked_up
        else:
            return None
        if cache not in self.module_names or by_identity(key, before, self.module_params(function)):
            return None
        stored = any(isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == cache
                     for node in stmt.body for inner in every_node(node) if isinstance(inner, ast.Assign)
                     for target in inner.targets)
        return cache if stored else None

    def guard(self, stmt: ast.If, function: str) -> None:
        """`if chunk_indices is None: chunk_indices = prepare(...)`: runs only for callers that leave it out."""
        found = none_guard(stmt, self.params.get(function, ()), self.nullable.get(function, ()))
        if found is not None:
            self.guards.setdefault(self.qualify(function), []).append(found)

    def calls(self, node, function: str | None) -> None:
        """Method calls on receivers of unknown class (`self.quant_method.apply(x)`,
        `torch.ops.vllm.unified_attention(...)`), by name, for the dispatch fallback."""
        if function is None:
            return
        for sub in nodes_breadth_first(node, _CALL):
            if not isinstance(sub.func, ast.Attribute):
                continue
            name = sub.func.attr
            if name in self.lib.no_dispatch or name.startswith("__"):
                continue
            receiver = sub.func.value
            if (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and self._bound(receiver.id, function)) or \
                    (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"):
                continue  # `self.m()`: the whole-program pass resolves it through the class
            root = receiver
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            chain = _dotted(sub.func) or ""
            op = ".ops." in f".{chain}"  # `torch.ops.vllm.unified_attention(...)`: a registered function
            if isinstance(root, ast.Name) and root.id in self.aliases and not op or module_receiver(self, receiver, function):
                continue  # a module function: the whole-program pass resolves it by its import
            # the call's shape, so that a target it cannot bind to is not followed (reachability):
            # the arguments it passes at least (`*args`, `**kwargs` may add more, never fewer)
            keywords = tuple(k.arg for k in sub.keywords if k.arg is not None)
            for k in sub.keywords:  # `**kwargs` of a dict with known keys passes those keywords
                if k.arg is None and isinstance(k.value, ast.Name):
                    known = self.kw_dicts.get(function)
                    if known is not None and not isinstance(known, dict):
                        known = self.kw_dicts[function] = keyword_dicts(known)
                    keywords += (known or {}).get(k.value.id, ())
            # open: a `*args`/`**kwargs` may pass more (then a missing argument proves nothing)
            opened = any(isinstance(a, ast.Starred) for a in sub.args) or any(k.arg is None for k in sub.keywords)
            positional = sum(1 for a in sub.args if not isinstance(a, ast.Starred))
            if _base_call(sub, name, function) and self._bound("self", function):
                positional -= 1  # `base_cls.forward(self, x)`: `self` fills the place the receiver would
            shape = (positional, keywords, opened)
            self.dispatch.setdefault(self.qualify(function), []).append((sub.lineno, name, op, shape))


    def _bound(self, name: str, function: str) -> bool:
        """`self` is a parameter of this function or of one it is nested in (a method's); in a
        module function it is a local of unknown class: vLLM's custom ops run
        `self = forward_context.no_compile_layers[layer_name]; self.conv_ssm_forward(...)`."""
        while function:
            if name in self.params.get(function, ()):
                return True
            function = function.rpartition(".")[0]
        return False


def _base_call(call: ast.Call, name: str, function: str) -> bool:
    """`base_cls.forward(self, input_)` in a `forward`: a method's override calling the same
    method through a class (SGLang's `ScaledEmbedding(base_cls)` wraps a class picked at run
    time), so the call passes `self` itself, in the place the receiver fills in a bound call.
    Told by the idiom: the same name as the calling function, `self` as the first argument, and
    a receiver that is a class by its form (`type(x)`, `x.__class__`) or its name (`base_cls`,
    `Base`). Not `self.impl.forward(self, q, kv_cache)`: an instance given the layer."""
    first = call.args[0] if call.args else None
    if not (isinstance(first, ast.Name) and first.id == "self" and function.rsplit(".", 1)[-1] == name):
        return False
    receiver = call.func.value
    if isinstance(receiver, ast.Call):
        return isinstance(receiver.func, ast.Name) and receiver.func.id == "type"
    if isinstance(receiver, ast.Attribute):
        return receiver.attr == "__class__"
    if isinstance(receiver, ast.Name):
        return receiver.id[:1].isupper() or receiver.id.lower().endswith(("cls", "class"))
    return False


_CALL = frozenset({ast.Call})


@functools.lru_cache(maxsize=8)  # one library per run: translating its patterns once, not per file
def _patterns(patterns: tuple) -> re.Pattern | None:
    import fnmatch

    return re.compile("|".join(fnmatch.translate(p) for p in patterns)) if patterns else None


def _module_names(tree: ast.Module) -> frozenset:
    """Names the module binds at its top level by assignment (`_CACHE = {}`)."""
    names = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def _terminates(body) -> bool:
    return bool(body) and isinstance(body[-1], _TERMINAL)


def _keyword(stmt) -> str:
    return {ast.Return: "return", ast.Raise: "raise", ast.Continue: "continue", ast.Break: "break"}[type(stmt)]


def file_branches(tree: ast.Module, module: str, aliases: dict, library: LibraryFacts):
    """(cold line ranges [(start, end, why)], {function: [(line, method name, custom op)]},
    {function: [(start, end, parameter)]} of None-guards on parameters, (functions all of whose
    paths raise, {function: [(start, end, line of the call the block ends in)]}), (the module's
    names bound conditionally or by assignment, {function: [(start, end, qualified name)]} of
    the lines that run only when a module-level name is None): modulenames.py), (functions that
    tell whether their inputs are on CUDA, {function: [(start, end, line of the test's call)]}:
    cuda_dispatch.py)."""
    walk = _Walk(module, aliases, library)
    walk.module_names = _module_names(tree)
    walk.foreign = foreign_stores(tree)
    walk.conditions.globals = module_globals(tree, walk.conditions.evaluate)
    walk.none_sites = sites = NoneSites(tree, module, aliases, walk.conditions.evaluate)
    walk.block(tree.body, [], None)
    walk.cold.extend(unbound_reads(tree, unbound_on_cuda(tree, walk.conditions.evaluate)))  # unbound_names.py
    return tuple(sorted(walk.cold)), walk.dispatch, walk.guards, (tuple(walk.raising), walk.tails), \
        (sites.bindings, sites.guards), (tuple(walk.dispatchers), walk.dispatch_tests)
