"""One pass over one parsed module: track where values live inside each function and hand the
rules the events they asked for.

The walk is a plain abstract interpretation in source order. Each function gets a fresh
environment (name -> where, see provenance.py); an assignment records where its value lives, a
read looks it up, and what is not bound locally is judged by its annotation or its name. The two
arms of an `if` are walked from the same starting point and then merged (a name keeps the more
device-like of its two values); loops are walked once. One visit per node.

Functions that run once (constructors, weight loading, warm-up, graph capture; configurable) are
skipped unless the whole file is to be linted. Module and class bodies run once at import and are
only scanned for imports and definitions.

The expression half (where a value lives, calls, truth tests) is evaluate.py's
`ExpressionEvaluator`; the per-function state rules see is context.py's `FunctionContext`.
"""

from __future__ import annotations

import libcst as cst

from . import provenance as P
from .context import FunctionContext, RawFinding, _root_value, attribute_source, inherit_closure_sources, is_cast
from .evaluate import ExpressionEvaluator, annotation_where, class_check, element_where
from .syntax_shapes import plain_type_check as _plain_check
from .branch_merge import always_exits, keep_param_sources, merge_branches, merge_names, merge_parts, narrow_plain, param_sources, tensor_check
from .imports import dotted, record_import
from .devices import bind_device
from .list_origins import bound as list_bound, note_call
from .pinned_params import asserted_host
from .place_tests import host_test
from .vocabulary import decorator_kind

class ModuleAnalyzer(ExpressionEvaluator):
    """Walks one module's statements (or one function parsed on its own, `run_function`) and
    collects `findings` and `latent` syncs."""

    def __init__(self, module: cst.Module, spans: list[tuple[int, int, int]], config, registry,
                 module_name: str, is_package: bool) -> None:
        self.module = module
        self.spans = spans
        self.config = config
        self.registry = registry
        self.hints = config.name_hints
        self.module_name = module_name
        self.is_package = is_package
        self.aliases: dict[str, str] = {}
        # (class, attribute) -> where, from `self.x = ...` assignments anywhere in the class
        self.class_hints: dict[tuple[str, str], P.Place] = {}
        self.findings: list[RawFinding] = []
        # syncs not reported where they are (lazy-init branches, memoized functions) but
        # counted for the callers of their function (wholeprogram.py)
        self.latent: list[RawFinding] = []
        self.counter = 0
        self._eval_dispatch = self._expression_handlers()

    # -- statement counting: keeps us aligned with lines.spans_of ----------------
    def enter(self) -> int:
        index = self.counter
        self.counter += 1
        return index

    def skip_subtree(self, index: int) -> None:
        """Jump over the statements nested in statement `index` without visiting them."""
        if index < len(self.spans):
            self.counter = index + self.spans[index][2]

    # -- module / class level ------------------------------------------------------------
    def run(self) -> None:
        top = FunctionContext(self, "<module>", [], passive=not self.config.all_functions, kind="module")
        for stmt in self.module.body:
            self.visit_stmt(stmt, top)

    def run_function(self, node: cst.FunctionDef, classes: list[str]) -> None:
        """Walk one function parsed on its own (see worker.py): `classes` are the classes that
        enclose it in the real module."""
        outer = FunctionContext(self, ".".join(classes) or "<module>", list(classes), passive=True,
                                kind="class" if classes else "module")
        self.visit_function(node, outer)

    def is_cold(self, node: cst.FunctionDef, classes: list[str] = ()) -> bool:
        if self.config.all_functions:
            return False
        if self.config.cold_function(node.name.value) or any(self.config.cold_class(c) for c in classes):
            return True
        return any(_decorator_kind(d) == "kernel" for d in node.decorators)  # device code

    def visit_function(self, node: cst.FunctionDef, outer: FunctionContext) -> None:
        index = self.enter()
        name = node.name.value
        if outer.kind == "module":
            qualname = name
        elif outer.kind == "class":
            qualname = ".".join(outer.classes + [name])
        else:
            qualname = f"{outer.qualname}.{name}"
        if self.is_cold(node, outer.classes):
            self.skip_subtree(index)
            return
        ctx = FunctionContext(self, qualname, outer.classes, aliases=outer.aliases, node=node)
        if outer.kind == "function":  # a closure sees its enclosing function's names
            ctx.env = dict(outer.env)
            ctx.bools = set(outer.bools)
            ctx.types = dict(outer.types)
        # `async_tensor_h2d(data, ...)` is handed host data. A function named for the host data
        # it returns (`lens_list(cu_seqlens)`, `_mask_cpu(mask)`) may well make that host copy
        # from a device argument: its parameters are what its callers pass (their evidence
        # drops the findings on a parameter every caller passes host data for).
        host_function = "h2d" in name.lower()
        self._bind_params(node.params, ctx, host_function=host_function)
        if outer.kind == "function":
            inherit_closure_sources(ctx, outer, node.params)
        memo = [d for d in node.decorators if _decorator_kind(d) == "memo"]
        if memo or _fills_cache(node):
            # a memoizing function runs its work once per key: once per object for a cached
            # property, once per step when a tensor is part of the key (its callers still sync
            # then: latent), else once per configuration (cold: dropped)
            per_object = any((dotted(d.decorator) or "").endswith("cached_property") for d in memo)
            keyed_by_tensor = any(P.is_tensor_like(ctx.env.get(p, P.PY)) for p in ctx.params)
            if per_object or keyed_by_tensor or _keys_by_identity(node, ctx.params):
                ctx.once_depth = 1
            else:
                ctx.cold_depth = 1
        ctx.stmt = index
        self.visit_block(node.body, ctx)

    def visit_class(self, node: cst.ClassDef, outer: FunctionContext) -> None:
        self.enter()
        classes = outer.classes + [node.name.value]
        ctx = FunctionContext(self, ".".join(classes), classes, passive=not self.config.all_functions,
                              kind="class", aliases=outer.aliases)
        self.visit_block(node.body, ctx)

    def _bind_params(self, params: cst.Parameters, ctx: FunctionContext, host_function: bool = False) -> None:
        ordered = list(params.posonly_params) + list(params.params)
        extra = list(params.kwonly_params)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                extra.append(star)
        for param in ordered + extra:
            name = param.name.value
            # a keyword-only parameter is what its callers pass, as a positional one is
            if param in ordered or param in params.kwonly_params:
                ctx.params.append(name)
                if param not in ordered:
                    ctx.kwonly.add(name)
            where = self._where_of_param(param, ctx)
            if host_function and P.device_unknown(where):
                where = P.HOST  # `_mask_cpu(...)`: a function named for the host works on host data
            ctx.env[name] = where
            ctx.reassigned.discard(name)

    def _where_of_param(self, param: cst.Param, ctx: FunctionContext) -> P.Place:
        name = param.name.value
        by_name = self.hints.where(name)
        if by_name == P.HOST:
            return P.HOST
        if name in ("self", "cls"):
            return P.UNKNOWN
        if param.annotation is None:
            return by_name
        return self._where_of_annotation(param.annotation.annotation, name, ctx, by_name)

    def _where_of_annotation(self, ann: cst.BaseExpression, name: str, ctx: FunctionContext, by_name: P.Place) -> P.Place:
        where, type_name = annotation_where(ann)
        if type_name:
            ctx.types[name] = type_name
        items = element_where(ann)
        if items is not None:
            ctx.elements[name] = items
        if where is None:
            return by_name
        if where == P.TENSOR:
            return P.join(by_name, P.TENSOR)
        return where

    # -- statements ----------------------------------------------------------------------
    def visit_block(self, block: cst.BaseSuite, ctx: FunctionContext) -> None:
        if isinstance(block, cst.SimpleStatementSuite):
            for small in block.body:
                self.visit_small(small, ctx)
        else:
            for stmt in block.body:
                self.visit_stmt(stmt, ctx)

    def visit_stmt(self, stmt: cst.CSTNode, ctx: FunctionContext) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.visit_small(small, ctx)
            return
        if isinstance(stmt, cst.FunctionDef):
            self.visit_function(stmt, ctx)
            return
        if isinstance(stmt, cst.ClassDef):
            self.visit_class(stmt, ctx)
            return
        ctx.stmt = self.enter()
        active = not ctx.passive
        if isinstance(stmt, cst.If):
            if active:
                self.condition(stmt.test, ctx, "if")
            lazy = _lazy_init_target(stmt) if active else None
            once = lazy is not None and lazy.startswith("self.")
            cold = lazy is not None and not once
            before_env, before_bools = (dict(ctx.env), set(ctx.bools)) if active else (None, None)
            before_sources = param_sources(ctx) if active else None
            before_names = (set(ctx.reassigned), dict(ctx.derived)) if active else None
            before_parts = dict(ctx.parts) if active else None
            ctx.once_depth += once
            ctx.cold_depth += cold
            checked, negated = tensor_check(stmt.test, ctx) if active else (None, False)
            if checked is not None and negated:
                ctx.env[checked] = P.PY  # `if not isinstance(x, torch.Tensor):` x is no tensor here
            plain, plain_negated = _plain_check(stmt.test) if active else (None, False)  # its `not`: the else
            on_host, host_if_true = host_test(stmt.test) if active else (None, False)
            on_host = on_host if on_host in ctx.env else None  # both arms must bind it to merge
            if on_host is not None and host_if_true:
                ctx.env[on_host] = P.HOST  # `if x.is_cpu:` x is host data here
            narrowed = class_check(stmt.test) if active else None
            if narrowed is not None:  # `elif isinstance(cu_seqlens, SingletonCache):` no tensor here
                ctx.env[narrowed[0]] = narrowed[1]
                type_before, items_before = ctx.types.get(narrowed[0]), ctx.elements.get(narrowed[0])
                if narrowed[2]:
                    ctx.types[narrowed[0]] = narrowed[2]
                if narrowed[3] and items_before is None:  # `isinstance(phs, list)`: its items may be tensors
                    ctx.elements[narrowed[0]] = P.UNKNOWN
            proven = _proven(checked, not negated, ctx)  # a tensor in the body (`if torch.is_tensor(x):`)
            self.visit_block(stmt.body, ctx)
            ctx.tensors_here.discard(proven)
            if narrowed is not None:  # the class holds in this branch only
                for table, before in ((ctx.types, type_before), (ctx.elements, items_before)):
                    if before is None:
                        table.pop(narrowed[0], None)
                    else:
                        table[narrowed[0]] = before
            ctx.once_depth -= once
            ctx.cold_depth -= cold
            if active:  # walk the other branch from the same starting point, then merge
                taken_env, taken_bools, taken_parts = ctx.env, ctx.bools, ctx.parts
                taken_sources = param_sources(ctx)
                taken_names = (ctx.reassigned, ctx.derived)
                ctx.env, ctx.bools, ctx.parts = dict(before_env), set(before_bools), dict(before_parts)
                # the other branch starts from the names as they were before the `if` too
                ctx.reassigned, ctx.derived = set(before_names[0]), dict(before_names[1])
                if checked is not None and not negated:
                    ctx.env[checked] = P.PY  # the `else` of `if isinstance(x, torch.Tensor):`
                if plain is not None and plain_negated:
                    narrow_plain(ctx, plain)  # the `else` of `if not isinstance(x, list):`
                if on_host is not None and not host_if_true:
                    ctx.env[on_host] = P.HOST  # the `else` of `if not x.is_cpu:` / `if x.is_cuda:`
            if isinstance(stmt.orelse, cst.If):
                self.visit_stmt(stmt.orelse, ctx)
            elif isinstance(stmt.orelse, cst.Else):
                proven = _proven(checked, negated, ctx)  # the `else` of `if not torch.is_tensor(x):`
                self.visit_block(stmt.orelse.body, ctx)
                ctx.tensors_here.discard(proven)
            if active and always_exits(stmt.body):
                # `if mode > 0: kv = kv.to(device); return plan(kv)`: only the other path reaches
                # the code after the `if`, so the names are as that path leaves them
                pass
            elif active:
                else_sources = param_sources(ctx)
                merge_names(ctx, before_names, taken_names, taken_env, before_env)
                keep_param_sources(ctx, before_sources, (taken_sources, taken_env), (else_sources, ctx.env))
                merge_parts(ctx, taken_env, taken_parts)
                merge_branches(ctx, taken_env, taken_bools)
        elif isinstance(stmt, cst.For):
            if active:
                self.bind_loop(stmt.target, stmt.iter, ctx)
            self.visit_block(stmt.body, ctx)
            if stmt.orelse is not None:
                self.visit_block(stmt.orelse.body, ctx)
        elif isinstance(stmt, cst.While):
            if active:
                self.condition(stmt.test, ctx, "while")
            self.visit_block(stmt.body, ctx)
            if stmt.orelse is not None:
                self.visit_block(stmt.orelse.body, ctx)
        elif isinstance(stmt, cst.With):
            if active:
                for item in stmt.items:
                    where = self.eval(item.item, ctx)
                    if item.asname is not None:
                        self.bind(item.asname.name, where, None, ctx)
            self.visit_block(stmt.body, ctx)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            self.visit_block(stmt.body, ctx)
            for handler in stmt.handlers:
                if active and handler.name is not None:
                    self.bind(handler.name.name, P.PY, None, ctx)
                self.visit_block(handler.body, ctx)
            if stmt.orelse is not None:
                self.visit_block(stmt.orelse.body, ctx)
            if stmt.finalbody is not None:
                self.visit_block(stmt.finalbody.body, ctx)
        elif isinstance(stmt, cst.Match):
            if active:
                self.eval(stmt.subject, ctx)
            for case in stmt.cases:
                self.visit_block(case.body, ctx)
        else:  # an unknown compound statement: keep the line table aligned
            self.skip_subtree(ctx.stmt)

    def visit_small(self, small: cst.BaseSmallStatement, ctx: FunctionContext) -> None:
        ctx.stmt = self.enter()
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            if ctx.kind != "function":
                record_import(small, self.aliases, self.module_name, self.is_package)
            else:  # a local import only binds inside this function
                if ctx.aliases is None:
                    ctx.aliases = dict(self.aliases)
                record_import(small, ctx.aliases, self.module_name, self.is_package)
            return
        if ctx.passive:
            return
        if isinstance(small, cst.Expr):
            self.eval(small.value, ctx)
            note_call(small.value, ctx)
        elif isinstance(small, cst.Assign):
            self.assign([t.target for t in small.targets], small.value, ctx)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.assign([small.target], small.value, ctx)
            elif isinstance(small.target, cst.Name):
                name = small.target.value
                ctx.env[name] = self._where_of_annotation(small.annotation.annotation, name, ctx, self.hints.where(name))
        elif isinstance(small, cst.AugAssign):
            value = self.eval(small.value, ctx)
            if isinstance(small.target, cst.Subscript):
                self._eval_subscript_parts(small.target, ctx)
            else:
                target = self.eval(small.target, ctx)
                self.bind(small.target, P.combine(target, value), None, ctx)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                self.eval(small.value, ctx)
        elif isinstance(small, cst.Assert):
            self.condition(small.test, ctx, "assert")
            asserted_host(small.test, ctx)  # `assert x.is_cpu`: host data (pinned_params.py)
            if small.msg is not None:
                self.eval(small.msg, ctx)
        elif isinstance(small, cst.Raise):
            if small.exc is not None:
                self.eval(small.exc, ctx)
        elif isinstance(small, cst.Del):
            pass

    # -- assignment ----------------------------------------------------------------------
    def assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression, ctx: FunctionContext) -> None:
        # `a, b = x_cpu, y` binds pairwise, so each side keeps its own provenance
        if (len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List))
                and isinstance(value, (cst.Tuple, cst.List))
                and len(targets[0].elements) == len(value.elements)
                and not any(isinstance(e, cst.StarredElement) for e in value.elements)):
            for target_el, value_el in zip(targets[0].elements, value.elements):
                where = self.eval(value_el.value, ctx)
                self.bind(target_el.value, where, value_el.value, ctx)
            return
        parts = self._tuple_parts(value, ctx)
        where = P.combine(P.PY, *parts) if parts is not None else self.eval(value, ctx)
        if parts is None and isinstance(value, (cst.Name, cst.Attribute)):
            parts = ctx.parts.get(dotted(value) or "")  # `window, groups = self._replay`
        for target in targets:
            if parts is not None and isinstance(target, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(parts) \
                    and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                for element, part in zip(target.elements, parts):
                    self.bind(element.value, part, None, ctx)
                continue
            self.bind(target, where, value, ctx)
            if parts is not None and isinstance(target, (cst.Name, cst.Attribute)) and dotted(target):
                ctx.parts[dotted(target)] = parts
            if isinstance(target, (cst.Tuple, cst.List)):
                origin = ctx.origin_of(value)  # `a, b = helper(x)`: element k of its result
                for position, element in enumerate(target.elements):
                    if origin is not None and "#" not in origin and isinstance(element.value, cst.Name):
                        ctx.origins[element.value.value] = f"{origin}#{position}"

    def bind(self, target: cst.BaseExpression, where: P.Place, value: cst.BaseExpression | None, ctx: FunctionContext) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            self._bind_name(name, where, value, ctx)
        elif isinstance(target, cst.Attribute):
            name = dotted(target)
            self.eval(target.value, ctx)
            if name is not None:
                self._bind_name(name, where, value, ctx)
        elif isinstance(target, (cst.Tuple, cst.List)):
            # `T, H, W = row` of a parameter's row, `h, w = sizes[i]` of a row of a parameter: still
            # the parameter's data (its callers tell)
            named = value if isinstance(value, cst.Name) or _row_of_name(value) else None
            for element in target.elements:
                self.bind(element.value, where, named, ctx)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, where, None, ctx)
        elif isinstance(target, cst.Subscript):
            base = self._eval_subscript_parts(target, ctx)
            for rule in self.registry.subscript_store:
                rule.on_subscript_store(ctx, target, base, value, where)

    def _bind_name(self, name: str, where: P.Place, value: cst.BaseExpression | None, ctx: FunctionContext) -> None:
        ctx.parts.pop(name, None)  # `assign` records the members of a tuple literal after this
        list_bound(ctx, name, value)
        # a name's own convention wins over data flow: `x_cpu = ...` is a host mirror
        if self.hints.overrides(name.rsplit(".", 1)[-1], where):
            where = P.HOST
        # a value copied to the device (`lens = lens.to(device=x.device)`) is on the device
        # whatever the callers pass: no longer the parameter's data
        source = ctx.param_of(value) if value is not None and (where not in (P.PY, P.DEVICE) or is_cast(value)) else None
        ctx.env[name] = where
        bind_device(ctx, name, value)
        attr = attribute_source(_root_value(value, ctx), ctx) if value is not None and where == P.UNKNOWN else None
        if attr is not None:
            ctx.attr_sources[name] = attr
        else:
            ctx.attr_sources.pop(name, None)
        ctx.reassigned.add(name)
        if source is not None:  # `grid_thw = grid_thw[grid_thw > 0]` stays the parameter's data
            ctx.derived[name] = source
        else:
            ctx.derived.pop(name, None)
        origin = ctx.origin_of(value) if value is not None and where != P.PY else None
        if origin is not None:
            ctx.origins[name] = origin
        else:
            ctx.origins.pop(name, None)
        ctx.copies.pop(name, None)
        for other, source in list(ctx.copies.items()):
            if source == name:
                del ctx.copies[other]
        for test, (checked, _) in list(ctx.tensor_tests.items()):
            if name in (test, checked):  # the flag or the value it tested changed
                del ctx.tensor_tests[test]
        ctx.elements.pop(name, None)
        if isinstance(value, cst.Call) and is_cast(value):
            items = element_where(value.args[0].value)  # `cast(list[torch.Tensor], batch)`
            if items is not None:
                ctx.elements[name] = items
        tested = tensor_check(value, ctx) if value is not None else (None, False)
        if tested[0] is not None:  # `gate_stream = isinstance(alpha, torch.Tensor)`: `if gate_stream:` tests alpha
            ctx.tensor_tests[name] = tested
        if value is not None and ctx.is_bool(value):
            ctx.bools.add(name)
        else:
            ctx.bools.discard(name)
        if isinstance(value, cst.Call):  # remember streams and events for SYN502/SYN503
            made_by = (ctx.resolve(value.func) or dotted(value.func) or "").rsplit(".", 1)[-1]
            if made_by in ("Event", "ExternalEvent"):
                ctx.types[name] = "Event"
            elif made_by in ("Stream", "current_stream", "default_stream", "ExternalStream"):
                ctx.types[name] = "Stream"
        # `a = b.to(device)` / `a = b.cpu()`: a and b hold the same values (for fix safety)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in ("to", "cpu", "cuda") and isinstance(value.func.value, cst.Name):
            ctx.copies[name] = value.func.value.value

    def _tuple_parts(self, value: cst.BaseExpression, ctx: FunctionContext) -> tuple[P.Place, ...] | None:
        """Where each member of a tuple literal lives (evaluating each member once, as reading
        the whole tuple would), or None for anything else."""
        if not isinstance(value, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        return tuple(self.eval(e.value, ctx) for e in value.elements)

    def bind_loop_target(self, target: cst.BaseExpression, where: P.Place, ctx: FunctionContext) -> None:
        if isinstance(target, cst.Name):
            ctx.env[target.value] = where
            ctx.reassigned.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_loop_target(element.value, where, ctx)


def _proven(checked: str | None, holds: bool, ctx) -> str | None:
    """Note that `checked` is a tensor in the branch about to be walked (a tensor test on it that
    holds there); the name to forget after it, None when there is none or an outer branch
    noted it already."""
    if checked is None or not holds or checked in ctx.tensors_here:
        return None
    ctx.tensors_here.add(checked)
    return checked


def _decorator_kind(decorator: cst.Decorator) -> str | None:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return decorator_kind(dotted(expr) or "")


def _fills_cache(node: cst.FunctionDef) -> bool:
    """Does the function store its result in a cache (`_CACHE[key] = t` at its top level)?"""
    if not isinstance(node.body, cst.IndentedBlock):
        return False
    for line in node.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Subscript) and _names_a_cache(target.target.value):
                        return True
    return False


def _keys_by_identity(node: cst.FunctionDef, params: list[str]) -> bool:
    """Does the function read `id(p)` of one of its parameters (`key = id(cu_seqlens)`)? A memo
    keyed by an argument's identity misses for every new object, and serving code hands it a
    fresh tensor every step (SGLang's KDA prefill repacks `cu_seqlens` under `id(cu_seqlens)`):
    it runs once per object, as one keyed by a tensor, not once per configuration."""
    wanted = set(params)
    for call in _calls_in(node.body):
        if isinstance(call.func, cst.Name) and call.func.value == "id" and len(call.args) == 1:
            arg = call.args[0].value
            if isinstance(arg, cst.Name) and arg.value in wanted:
                return True
    return False


def _calls_in(node: cst.CSTNode):
    """The calls inside a node, not descending into nested functions or classes."""
    for child in node.children:
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(child, cst.Call):
            yield child
        yield from _calls_in(child)


def _names_a_cache(node: cst.BaseExpression) -> bool:
    """`_CACHE`, `self._graph_cache`, `_padded_input_cache`: a dict that memoizes. Not a buffer
    that only has the word inside (`pool.replayssm_cache_base[idx] = 0` is a per-step store)."""
    last = (dotted(node) or "").rsplit(".", 1)[-1].lower().strip("_")
    return last.split("_")[-1] in ("cache", "memo", "cached")


def _lazy_init_target(stmt: cst.If) -> str | None:
    """`if x is None: ... x = ...` (or `if key not in cache: ... cache[key] = ...`): a branch that
    fills a cache, so what it does runs once rather than every step. Returns what it fills
    (`self._seq_lens_cpu`: once per object; `_CACHE`: once per key), else None."""
    test = stmt.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    op = test.comparisons[0].operator
    if isinstance(op, cst.Is) and isinstance(test.comparisons[0].comparator, cst.Name) \
            and test.comparisons[0].comparator.value == "None":
        wanted = dotted(test.left)
    elif isinstance(op, cst.NotIn):
        wanted = dotted(test.comparisons[0].comparator)
    else:
        return None
    if wanted is None or not isinstance(stmt.body, cst.IndentedBlock):
        return None
    for line in _simple_lines(stmt.body.body):
        for small in line.body:
            targets = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign):
                targets = [small.target]
            for target in targets:
                if isinstance(target, cst.Subscript):
                    target = target.value
                    base = dotted(target) or ""
                    if "cache" in base.lower() and not base.startswith("self."):
                        return base  # `v = CACHE.get(k); if v is None: CACHE[k] = ...`
                if dotted(target) == wanted:
                    return wanted
    return None


def _simple_lines(body):
    """Simple statement lines of a block, also inside nested `with`/`if`/`try` blocks."""
    for line in body:
        if isinstance(line, cst.SimpleStatementLine):
            yield line
        elif isinstance(line, (cst.With, cst.If, cst.Try)) and isinstance(line.body, cst.IndentedBlock):
            yield from _simple_lines(line.body.body)


def _row_of_name(node) -> bool:
    """`sizes[i]`: one row of a named value, by an index (not a slice, not a key string)."""
    return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1 \
        and isinstance(node.slice[0].slice, cst.Index) and not isinstance(node.slice[0].slice.value, cst.SimpleString)
