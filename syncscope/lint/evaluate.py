"""Where the value of an expression lives (see provenance.py), and the rule events that reading
it raises: name and attribute reads, indexing, truth tests, calls.

`ExpressionEvaluator` is a mixin of `ModuleAnalyzer` (analyzer.py), which owns the statement walk
and the bindings; this half answers "where is this value" for one expression at a time. It
expects of its host class: `registry`, `hints`, `class_hints`, `module_name`, and `bind` /
`bind_loop_target` (a walrus or a comprehension binds names). `annotation_where` reads a type
annotation the same way, for parameters and annotated assignments.
"""

from __future__ import annotations

import libcst as cst

from . import provenance as P
from .context import BUILTIN_NAMES, FunctionContext
from .devices import copy_target, device_where, is_non_blocking
from .imports import dotted
from .list_origins import joined_place
from .param_items import items_source
from .pinned_params import stated_host
from .syntax_shapes import plain_string as _string, plain_type_check, target_names
from .rules.base import CallInfo
from .vocabulary import (COMBINING_BUILTINS, HOST_DEVICE_KEYWORD, HOST_METHODS, HOST_MODULES, HOST_RESULT_FORMATS, HOST_RESULT_KEYWORD,
                         KEYED_READ_METHODS, NEW_TENSOR_METHODS, PY_ATTRS, PY_BUILTINS, PY_METHODS,
                         PY_MODULES, SAME_PLACE_ATTRS, TORCH_FACTORIES, TORCH_HOST_FUNCTIONS, annotation_place,
                         compares_dtypes, element_place, entry_place, factory_place, named_attr_place,
                         pass_through,
                         torch_gives_python, type_place, CONTAINERS)

class ExpressionEvaluator:
    """The expression half of the walk (a mixin: see the module docstring)."""

    def _expression_handlers(self) -> dict:
        """Handler of each expression node type (`eval` dispatches), as plain functions taking the
        analyzer: a table of bound methods kept on the analyzer would make a reference cycle
        (analyzer -> table -> method -> analyzer) that keeps every function's libcst tree alive
        until the cyclic collector runs, which lint workers switch off for speed (measured: the
        workers grew to ~290 MB each on vLLM's tree; 12,141 of 12,527 objects left per file were
        such trees)."""
        cls = type(self)
        return {
            cst.Name: cls._eval_name,
            cst.Attribute: cls._eval_attribute,
            cst.Call: cls._eval_call,
            cst.Subscript: cls._eval_subscript,
            cst.BinaryOperation: cls._eval_binary,
            cst.Comparison: cls._eval_comparison,
            cst.UnaryOperation: cls._eval_unary,
            cst.BooleanOperation: cls._eval_boolean,
            cst.IfExp: cls._eval_ifexp,
            cst.Integer: _py_handler, cst.Float: _py_handler, cst.Imaginary: _py_handler, cst.SimpleString: _py_handler,
            cst.ConcatenatedString: _py_handler, cst.Ellipsis: _py_handler,
            cst.FormattedString: cls._eval_fstring,
            cst.List: cls._eval_sequence, cst.Tuple: cls._eval_sequence, cst.Set: cls._eval_sequence,
            cst.Dict: cls._eval_dict,
            cst.ListComp: cls._eval_comp, cst.SetComp: cls._eval_comp, cst.GeneratorExp: cls._eval_comp,
            cst.DictComp: cls._eval_comp,
            cst.Lambda: _unknown_handler,
            cst.Await: cls._eval_await,
            cst.Yield: cls._eval_yield,
            cst.NamedExpr: cls._eval_walrus,
            cst.StarredElement: cls._eval_starred,
        }

    # -- expressions ---------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression, ctx: FunctionContext) -> P.Place:
        handler = self._eval_dispatch.get(type(node))
        if handler is None:
            return P.UNKNOWN
        return handler(self, node, ctx)

    def condition(self, test: cst.BaseExpression, ctx: FunctionContext, context: str) -> None:
        """A value used as a truth value: `bool()` is called on it."""
        if isinstance(test, cst.BooleanOperation):
            self.condition(test.left, ctx, context)
            self.condition(test.right, ctx, context)
            return
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self.condition(test.expression, ctx, context)
            return
        where = self.eval(test, ctx)
        for rule in self.registry.condition:
            rule.on_condition(ctx, test, where, context)

    def _eval_name(self, node: cst.Name, ctx: FunctionContext) -> P.Place:
        value = node.value
        if value in ("True", "False", "None"):
            return P.PY
        found = ctx.env.get(value)
        if found is not None:
            return found
        if value in ctx.alias_table():
            return P.PY  # a module or an imported function
        return self.hints.where(value)

    def _eval_attribute(self, node: cst.Attribute, ctx: FunctionContext) -> P.Place:
        attr = node.attr.value
        name = dotted(node)
        if name is not None:
            found = ctx.env.get(name)
            if found is not None:
                return found
            root = name.split(".", 1)[0]
            if root in ctx.alias_table() and root not in ctx.env:
                return P.PY  # `torch.float16`, `np.int32`: module attributes
        if name is not None and name.count(".") == 1 and self.class_hints:
            owner = name.split(".", 1)[0]
            owner_class = ctx.classes[-1] if owner == "self" and ctx.classes else ctx.types.get(owner)
            hinted = self.class_hints.get((owner_class, attr)) if owner_class else None
            if hinted is not None:
                return hinted
        receiver = self.eval(node.value, ctx)
        if attr in self.registry.attribute_names:
            for rule in self.registry.attribute:
                rule.on_attribute(ctx, node, receiver)
        if attr in PY_ATTRS:
            return P.PY
        if attr in SAME_PLACE_ATTRS:
            return receiver
        by_name = self.hints.attr_where(attr)
        if by_name != P.UNKNOWN:
            return by_name
        if receiver == P.HOST:
            return P.HOST  # a field of host data (`frame.values`, `arr.flat`) is host data too
        return P.UNKNOWN

    def _eval_subscript_parts(self, node: cst.Subscript, ctx: FunctionContext) -> P.Place:
        base = self.eval(node.value, ctx)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self.eval(element.slice.value, ctx)
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.eval(part, ctx)
        return base

    def _eval_subscript(self, node: cst.Subscript, ctx: FunctionContext) -> P.Place:
        base = self._eval_subscript_parts(node, ctx)
        for rule in self.registry.subscript_read:
            rule.on_subscript_read(ctx, node, base)
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            key = node.slice[0].slice.value  # `mm_kwargs["image_grid_thw"]`: a field read by name
            keyed = entry_place(node.value, _string(key), self.hints)
            return keyed if keyed is not None else base
        return base

    def index_where(self, node: cst.Subscript, ctx: FunctionContext) -> list[tuple[cst.BaseExpression | None, P.Place]]:
        """(expression, where) of each index element; slices give (None, PY). Rules call this;
        it re-evaluates only names and attributes, which has no side effects."""
        out = []
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                value = element.slice.value
                out.append((value, self.peek(value, ctx)))
            else:
                out.append((None, P.PY))
        return out

    def peek(self, node: cst.BaseExpression, ctx: FunctionContext) -> P.Place:
        """Where a simple expression lives, without emitting events."""
        if isinstance(node, cst.Name):
            return self._eval_name(node, ctx)
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return P.PY
        if isinstance(node, cst.Attribute):
            name = dotted(node)
            if name is not None and name in ctx.env:
                return ctx.env[name]
            if node.attr.value in PY_ATTRS:
                return P.PY
            by_name = self.hints.where(node.attr.value)
            if by_name != P.UNKNOWN:
                return by_name
            return P.UNKNOWN
        if isinstance(node, cst.UnaryOperation):
            return self.peek(node.expression, ctx)
        if isinstance(node, cst.Comparison):
            return P.combine(self.peek(node.left, ctx), *(self.peek(c.comparator, ctx) for c in node.comparisons))
        if isinstance(node, cst.BinaryOperation):
            return P.combine(self.peek(node.left, ctx), self.peek(node.right, ctx))
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in HOST_METHODS:
                    return P.HOST
                if method in PY_METHODS:
                    return P.PY
                if method == "cuda":
                    return P.DEVICE
                if ctx.resolve(func) is None:
                    return self.peek(func.value, ctx)
            if isinstance(func, cst.Name) and func.value in PY_BUILTINS and func.value not in ctx.env:
                return P.PY
            qual = ctx.resolve(func)
            if qual is not None and qual.startswith("numpy."):
                return P.HOST
            return P.UNKNOWN
        if isinstance(node, cst.Subscript):
            return self.peek(node.value, ctx)
        return P.UNKNOWN

    def _eval_binary(self, node: cst.BinaryOperation, ctx: FunctionContext) -> P.Place:
        left, right = self.eval(node.left, ctx), self.eval(node.right, ctx)
        # torch does not mix devices: an operand combined with a host tensor is on the host too
        if left == P.HOST and P.device_unknown(right):
            self._learn_host(node.right, ctx)
        elif right == P.HOST and P.device_unknown(left):
            self._learn_host(node.left, ctx)
        return P.combine(left, right)

    def _learn_host(self, node: cst.BaseExpression, ctx: FunctionContext) -> None:
        name = dotted(node)
        if name is not None and not isinstance(node, cst.Call):
            ctx.env[name] = P.HOST

    def _eval_comparison(self, node: cst.Comparison, ctx: FunctionContext) -> P.Place:
        wheres = [self.eval(node.left, ctx)] + [self.eval(c.comparator, ctx) for c in node.comparisons]
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
            return P.PY
        if compares_dtypes(ctx.resolve(n) for n in (node.left, *(c.comparator for c in node.comparisons))):
            return P.PY  # `x == torch.float8_e4m3fn`: x is a dtype, the result a Python bool
        if any(isinstance(n, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
               for n in (node.left, *(c.comparator for c in node.comparisons))):
            return P.PY  # `self.result == "tensor"`: a string compared, a Python bool (no tensor op takes one)
        return P.combine(*wheres)

    def _eval_unary(self, node: cst.UnaryOperation, ctx: FunctionContext) -> P.Place:
        if isinstance(node.operator, cst.Not):
            self.condition(node.expression, ctx, "not")
            return P.PY
        return self.eval(node.expression, ctx)

    def _eval_boolean(self, node: cst.BooleanOperation, ctx: FunctionContext) -> P.Place:
        # `a or b` calls bool(a); b is returned as it is
        self.condition(node.left, ctx, node.operator.__class__.__name__.lower())
        return P.combine(P.PY, self.eval(node.right, ctx))

    def _eval_ifexp(self, node: cst.IfExp, ctx: FunctionContext) -> P.Place:
        self.condition(node.test, ctx, "ternary")
        narrowed = class_check(node.test)
        if narrowed is None:
            body, orelse = self.eval(node.body, ctx), self.eval(node.orelse, ctx)
            # `grid_thws.tolist() if not isinstance(grid_thws, list) else grid_thws`: where the
            # test fails, the name is a plain Python value; only when the other branch gives
            # Python values too (a list may hold tensors; `.tolist()` says they are numbers)
            checked, negated = plain_type_check(node.test)
            if checked is not None and negated and body == P.PY and dotted(node.orelse) == checked:
                orelse = P.PY
            return P.combine(body, orelse)
        # `grid_thws if isinstance(grid_thws, list) else grid_thws.tolist()`: a list in the body
        name, before = narrowed[0], ctx.env.get(narrowed[0])
        ctx.env[name] = narrowed[1]
        body = self.eval(node.body, ctx)
        if before is None:
            ctx.env.pop(name, None)
        else:
            ctx.env[name] = before
        return P.combine(body, self.eval(node.orelse, ctx))

    def _eval_fstring(self, node: cst.FormattedString, ctx: FunctionContext) -> P.Place:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.eval(part.expression, ctx)
        return P.PY

    def _eval_sequence(self, node, ctx: FunctionContext) -> P.Place:
        wheres = [self.eval(e.value, ctx) for e in node.elements]
        # a literal list of Python values is host data (what `torch.tensor([...])` copies)
        return P.combine(P.PY, *wheres)

    def _eval_dict(self, node: cst.Dict, ctx: FunctionContext) -> P.Place:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key, ctx)
            self.eval(element.value, ctx)
        return P.PY

    def _eval_comp(self, node, ctx: FunctionContext) -> P.Place:
        saved, derived = dict(ctx.env), dict(ctx.derived)
        clause = node.for_in
        while clause is not None:
            parts = self.iter_parts(clause.iter, ctx)  # `for vecs, f in zip(embeddings, flags)`
            if parts is None and isinstance(clause.target, (cst.Tuple, cst.List)):
                parts = self._row_parts(clause.iter, len(clause.target.elements), ctx)
            if parts is not None and isinstance(clause.target, (cst.Tuple, cst.List)) \
                    and len(clause.target.elements) == len(parts) \
                    and not any(isinstance(e, cst.StarredElement) for e in clause.target.elements):
                for element, where in zip(clause.target.elements, parts):
                    self.bind_loop_target(element.value, where, ctx)
            else:
                where = P.combine(*parts) if parts else self._iter_where(clause.iter, ctx)
                self.bind_loop_target(clause.target, where, ctx)
                source = items_source(ctx.param_of(clause.iter)) if where not in (P.PY, P.DEVICE) else None
                for name in target_names(clause.target) if source is not None else ():
                    ctx.derived[name] = source  # `[int(c.item()) for c in counts]` (param_items.py)
            for cond in clause.ifs:
                self.condition(cond.test, ctx, "comprehension")
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.eval(node.key, ctx)
            result = self.eval(node.value, ctx)
        else:
            result = self.eval(node.elt, ctx)
        ctx.env, ctx.derived = saved, derived
        return result

    def _iter_where(self, node: cst.BaseExpression, ctx: FunctionContext) -> P.Place:
        """Where the items of an iteration live."""
        parts = self.iter_parts(node, ctx)
        if parts is not None:
            return P.combine(*parts) if parts else P.UNKNOWN
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in ctx.env:
            name = node.func.value
            if name == "range":
                self.eval(node, ctx)
                return P.PY
            if name in ("reversed", "sorted", "list", "tuple"):
                wheres = [self.eval(a.value, ctx) for a in node.args]
                return P.combine(*wheres) if wheres else P.UNKNOWN
        where = self.eval(node, ctx)
        if isinstance(node, cst.Name) and node.value in ctx.elements:
            return ctx.elements[node.value]  # `for t in batch` with `batch: list[torch.Tensor]`: tensors
        if where == P.PY and isinstance(node, cst.Name) and node.value in ctx.mixed_items:
            return P.UNKNOWN  # a local list given tuples or tensors: its items are no Python numbers (list_origins.py)
        return where

    def iter_parts(self, node: cst.BaseExpression, ctx: FunctionContext) -> list[P.Place] | None:
        """Where each part of an item of `zip(a, b)` / `enumerate(x)` lives (`for i, (h, w) in
        enumerate(sizes.tolist())`: `i` is an int, `h` and `w` Python numbers), else None."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in ctx.env
                and node.func.value in ("zip", "enumerate")) or any(a.star or a.keyword for a in node.args):
            return None
        # a Python container's items are not known to be Python numbers (`tuple(f(x) for x in
        # xs)` may hold tensors): only what the container is says where its items live
        wheres = [P.UNKNOWN if w == P.PY else w for w in (self.eval(a.value, ctx) for a in node.args)]
        return [P.PY, *wheres[:1]] if node.func.value == "enumerate" else wheres

    def bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression, ctx: FunctionContext) -> None:
        """Bind a `for` target, part by part when it unpacks a `zip` or `enumerate` item."""
        parts = self.iter_parts(iterable, ctx)
        if parts is None and isinstance(target, (cst.Tuple, cst.List)):
            parts = self._row_parts(iterable, len(target.elements), ctx)
        if parts is not None and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(parts) \
                and not any(isinstance(e, cst.StarredElement) for e in target.elements):
            for element, where in zip(target.elements, parts):
                self.bind(element.value, where, None, ctx)
            if isinstance(iterable, cst.Call) and iterable.func.value == "zip":  # `for e, row in zip(embeds, grid_thw):` rows of a tensor
                for element, arg in zip(target.elements, iterable.args):  # parameter: the callers tell (below)
                    source = ctx.param_of(arg.value) if self.peek(arg.value, ctx) == P.TENSOR else None
                    for name in target_names(element.value) if source is not None else ():
                        if ctx.env.get(name) not in (P.PY, P.DEVICE):
                            ctx.derived[name] = source
            return
        where = P.combine(*parts) if parts else self._iter_where(iterable, ctx)
        self.bind(target, where, None, ctx)
        # the rows of a tensor parameter (`for t, h, w in grid_thw:`) are still what the callers
        # passed: a sync on `h` happens only where a caller passes device data (vLLM
        # OpenPangu-VL's `rot_pos_emb`, whose only callers pass the keep_on_cpu
        # `image_grid_thw`). Not the items of a list (`multimodal_positions: list[Tensor]`): a
        # caller passing a list says nothing of where its items live
        tensor_rows = parts is None and self.peek(iterable, ctx) == P.TENSOR
        source = ctx.param_of(iterable) if parts is None and where not in (P.PY, P.DEVICE) else None
        if not tensor_rows:  # a container's items: host only where its callers pass host memory
            source = items_source(source)
        if source is not None:
            for name in target_names(target):
                if ctx.env.get(name) not in (P.PY, P.DEVICE):
                    ctx.derived[name] = source

    def _row_parts(self, node: cst.BaseExpression, width: int, ctx: FunctionContext) -> list[P.Place] | None:
        """`for weight, gain_center, name in ((w1, g1, "post"), (w2, g2, "pre")):` iterates a
        literal of literal rows of `width` members: where each column lives, joined over the rows
        (`gain_center` is the float parameters, not the tensors beside them). None otherwise."""
        if not isinstance(node, (cst.Tuple, cst.List)) or not node.elements:
            return None
        rows = [e.value for e in node.elements]
        if any(isinstance(e, cst.StarredElement) for e in node.elements) or not all(
                isinstance(r, (cst.Tuple, cst.List)) and len(r.elements) == width
                and not any(isinstance(m, cst.StarredElement) for m in r.elements) for r in rows):
            return None
        columns = [[self.eval(m.value, ctx) for m in row.elements] for row in rows]
        return [P.join(*column) for column in zip(*columns)]

    def _eval_await(self, node: cst.Await, ctx: FunctionContext) -> P.Place:
        return self.eval(node.expression, ctx)

    def _eval_yield(self, node: cst.Yield, ctx: FunctionContext) -> P.Place:
        if isinstance(node.value, cst.BaseExpression):
            self.eval(node.value, ctx)
        elif isinstance(node.value, cst.From):
            self.eval(node.value.item, ctx)
        return P.UNKNOWN

    def _eval_walrus(self, node: cst.NamedExpr, ctx: FunctionContext) -> P.Place:
        where = self.eval(node.value, ctx)
        self.bind(node.target, where, node.value, ctx)
        return where

    def _eval_starred(self, node: cst.StarredElement, ctx: FunctionContext) -> P.Place:
        return self.eval(node.value, ctx)

    # -- calls ---------------------------------------------------------------------------
    def _eval_call(self, node: cst.Call, ctx: FunctionContext) -> P.Place:
        func = node.func
        qualname: str | None = None
        method: str | None = None
        receiver: cst.BaseExpression | None = None
        receiver_where: P.Place | None = None
        if isinstance(func, cst.Name):
            name = func.value
            if name in ctx.env:
                qualname = None  # a local variable holding a callable
            elif name in ctx.alias_table():
                qualname = ctx.alias_table()[name]
            elif name in BUILTIN_NAMES:
                qualname = name
            else:
                qualname = f"{self.module_name}.{name}" if self.module_name else name
        elif isinstance(func, cst.Attribute):
            method = func.attr.value
            qualname = ctx.resolve(func)
            if qualname is None:
                receiver = func.value
                receiver_where = self.eval(receiver, ctx)
                if isinstance(receiver, cst.Name) and receiver.value == "self" and ctx.classes:
                    qualname = ".".join(filter(None, [self.module_name, *ctx.classes, method]))
        else:
            self.eval(func, ctx)

        args: list[tuple[cst.BaseExpression, P.Place]] = []
        kwargs: dict[str, tuple[cst.BaseExpression, P.Place]] = {}
        star = False
        for arg in node.args:
            where = self.eval(arg.value, ctx)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = (arg.value, where)
            elif arg.star:
                star = True
            else:
                args.append((arg.value, where))
        info = CallInfo(node, qualname, method, receiver, receiver_where, args, kwargs, star)
        callee = method or (qualname or "").rsplit(".", 1)[-1]
        if "h2d" in callee.lower() and args:  # `async_tensor_h2d(x, ...)`: x lives on the host
            name = dotted(args[0][0])
            if name is not None and P.device_unknown(args[0][1]):
                ctx.env[name] = P.HOST

        last = method if method is not None else (qualname.rsplit(".", 1)[-1] if qualname else None)
        if last is not None:
            rules = self.registry.by_name.get(last)
            if rules:
                for rule in rules:
                    if rule.handles(info):
                        rule.on_call(ctx, info)
        return (ctx.appended_places and joined_place(info, ctx)) or self._call_result(info, ctx)  # list_origins.py: `torch.cat(parts)`

    def _call_result(self, info: CallInfo, ctx: FunctionContext) -> P.Place:
        qualname, method = info.qualname, info.method
        if _string(info.kwarg(HOST_RESULT_KEYWORD)) in HOST_RESULT_FORMATS or \
                _string(info.kwarg(HOST_DEVICE_KEYWORD[0])) == HOST_DEVICE_KEYWORD[1]:
            return P.HOST  # `processor(image, return_tensors="pt")`, `alloc(n, device="cpu")`: on the host
        if info.receiver is not None:
            r = info.receiver_where if info.receiver_where is not None else P.UNKNOWN
            if method in PY_METHODS:  # `.item()`, `.tolist()`: Python numbers; a fill, not a copy
                return P.PY
            if method in HOST_METHODS:
                return P.HOST
            if method in KEYED_READ_METHODS and info.args:  # `kwargs.pop("tgt_sizes", None)`
                keyed = entry_place(info.receiver, _string(info.args[0][0]), self.hints)
                if keyed is not None:
                    return keyed
            if method in ("to", "cuda"):
                target = copy_target(info, ctx) if method == "to" else P.DEVICE
                if target == P.DEVICE and is_non_blocking(info) and P.device_unknown(r):
                    # nobody copies device memory to the device with non_blocking=True: the
                    # source is a (pinned) host tensor, from here on
                    name = dotted(info.receiver)
                    if name is not None:
                        ctx.env[name] = P.HOST
                        stated_host(ctx, name)  # and from the function's entry, for a parameter
                return target if target is not None else r
            if method in NEW_TENSOR_METHODS:
                return r if r != P.PY else P.TENSOR
            if r in (P.HOST, P.TENSOR, P.DEVICE):
                return r
            if self.hints.where(method) == P.HOST:
                return P.HOST  # `buffer.to_numpy()`, `batch.copy_to_cpu()`
            return P.UNKNOWN if r != P.PY else P.PY
        if qualname is None:
            return P.UNKNOWN
        if not qualname.startswith(("torch.", "numpy.")) and \
                self.hints.where(qualname.rsplit(".", 1)[-1]) == P.HOST:
            return P.HOST  # `async_copy_to_np(x)`, `to_cpu(x)`: named for what they return
        if not qualname.startswith(("torch.", "numpy.")) and qualname.rsplit(".", 1)[-1].lower().endswith("h2d"):
            return P.DEVICE  # `async_tensor_h2d(x_cpu, device)`: a copy to the device
        if qualname.startswith("torch."):
            short = qualname.rsplit(".", 1)[-1]
            if torch_gives_python(qualname):
                return P.PY
            if short in TORCH_FACTORIES:
                device = info.kwarg("device")
                return factory_place(short, None if device is None else (device_where(device, ctx) or P.DEVICE),
                                     info.args[0][1] if info.args else None)
            if short in TORCH_HOST_FUNCTIONS:
                return P.HOST
            device = info.kwarg("device")
            if device is not None:
                # any torch function told where to build its result puts it there
                # (`torch.normal(mean, std, size=(1,), device="cpu")`, `torch.tril_indices(n, n, device=d)`)
                return device_where(device, ctx) or P.DEVICE
            wheres = [w for _, w in info.args] + [w for _, w in info.kwargs.values()]
            if any(w == P.DEVICE for w in wheres):
                return P.DEVICE
            if info.args and info.args[0][1] == P.HOST:
                # the input tensor of a torch op (`F.pad(index, (0, pad_w))`, `torch.cat(host_items)`)
                # is on the host, and torch does not mix devices: the other operands (sizes, pads
                # computed from parameters) cannot move the result to the device
                return P.HOST
            if any(P.device_unknown(w) for w in wheres):
                return P.TENSOR
            if any(w == P.HOST for w in wheres):
                return P.HOST
            return P.TENSOR
        if qualname.startswith(HOST_MODULES):
            return P.HOST
        if qualname == "getattr" and len(info.args) > 1 and named_attr_place(_string(info.args[1][0]), self.hints):
            return P.HOST  # `getattr(item, "grid_thw", None)` of a carrier object (carrier_fields.py)
        position = pass_through(qualname)
        if position is not None:
            return info.args[position][1] if len(info.args) > position else P.UNKNOWN
        if qualname.startswith(PY_MODULES):
            return P.PY
        if qualname in PY_BUILTINS:
            return P.PY
        if qualname in COMBINING_BUILTINS:
            wheres = [w for _, w in info.args]
            return P.PY if all(w == P.PY for w in wheres) else P.combine(*wheres)
        return P.UNKNOWN


def class_check(test: cst.BaseExpression) -> tuple[str, P.Place, str, bool] | None:
    """`isinstance(x, SingletonCache)`, `isinstance(x, (int, float))`: in the branch where the
    test holds, x is an object of those classes, no tensor. Returns (name tested, where it
    lives, its class when one class of the program is named, whether it may be a container of
    anything: `list`, `tuple`, ...), or None when a class may be a
    tensor (`torch.Tensor`, `nn.Parameter`, a subclass named `...Tensor`) or the test is other."""
    if not (isinstance(test, cst.Call) and dotted(test.func) == "isinstance" and len(test.args) == 2):
        return None
    name = dotted(test.args[0].value)
    kinds = test.args[1].value
    members = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    lasts = [(dotted(m) or "").rsplit(".", 1)[-1] for m in members]
    if name is None or not all(lasts) or any(last.endswith(("Tensor", "Parameter")) for last in lasts):
        return None
    wheres = [type_place(last) for last in lasts]
    if any(w is not None and w >= P.UNKNOWN for w in wheres):
        return None
    classes = [last for last, w in zip(lasts, wheres) if w is None]
    return (name, P.join(*(w if w is not None else P.PY for w in wheres)), classes[0] if len(classes) == 1 else "",
            any(last in CONTAINERS for last in lasts))


def element_where(node: cst.BaseExpression) -> P.Place | None:
    """Where the items of a value of this annotated type live (vocabulary.element_place)."""
    return element_place(node, _annotation_shape)


def annotation_where(node: cst.BaseExpression) -> tuple[P.Place | None, str]:
    """Where a value of this annotated type lives, and its class name (vocabulary.annotation_place)."""
    return annotation_place(node, _annotation_shape)


def _annotation_shape(node: cst.BaseExpression) -> tuple:
    if isinstance(node, cst.SimpleString):
        try:
            node = cst.parse_expression(str(node.evaluated_value))
        except Exception:
            return "", None
    if isinstance(node, (cst.Name, cst.Attribute)):
        return "name", dotted(node) or ""
    if isinstance(node, cst.Subscript):
        return "generic", dotted(node.value) or "", [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return "union", None, [node.left, node.right]
    return "", None


def _py_handler(_analyzer, node, ctx) -> P.Place:
    return P.PY


def _unknown_handler(_analyzer, node, ctx) -> P.Place:
    return P.UNKNOWN
