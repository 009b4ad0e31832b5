"""One pass over one parsed module: track where values live inside each function and hand the
rules the events they asked for.

The walk is a plain abstract interpretation in source order. Each function gets a fresh
environment (name -> where, see provenance.py); an assignment records where its value lives, a
read looks it up, and what is not bound locally is judged by its annotation or its name. Branches
are not merged: the last assignment above a use wins, which is what serving code's straight-line
builders need and keeps the walk to one visit per node.

Functions that run once (constructors, weight loading, warm-up, graph capture; configurable) are
skipped unless the whole file is to be linted. Module and class bodies run once at import and are
only scanned for imports and definitions.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from . import provenance as P
from .imports import dotted, record_import
from .devices import copy_target, device_where, is_non_blocking
from .rules.base import CallInfo, Fix, Rule

# Tensor attributes and methods that give plain Python values (no tensor, no sync).
PY_ATTRS = frozenset(
    "shape dtype device ndim is_cuda is_cpu is_sparse layout requires_grad itemsize nbytes is_leaf "
    "is_quantized is_meta names".split()
)
PY_METHODS = frozenset(
    "size dim numel element_size nelement is_contiguous data_ptr stride storage_offset get_device "
    "is_pinned is_floating_point is_complex untyped_storage __len__ startswith endswith join "
    "format split strip lower upper keys items values".split()
)
BOOL_METHODS = frozenset(
    "bool eq ne gt lt ge le isnan isinf isfinite logical_and logical_or logical_not logical_xor "
    "isin any all __eq__ __ne__ __lt__ __gt__ __le__ __ge__ isneginf isposinf signbit".split()
)
# torch functions that make a tensor from nothing: their device is where `device=` says, the
# host otherwise (the `_like` family copies its argument's device instead).
TORCH_FACTORIES = frozenset(
    "tensor as_tensor zeros ones empty full arange linspace logspace eye rand randn randint "
    "randperm empty_strided frombuffer asarray zeros_like ones_like empty_like full_like rand_like "
    "randn_like randint_like".split()
)
# torch namespaces whose calls return streams, events, devices, flags: never tensors.
TORCH_NON_TENSOR = (
    "torch.cuda.",
    "torch.accelerator.",
    "torch.distributed.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.device",
    "torch.Size",
    "torch.is_",
    "torch.get_",
    "torch.set_",
    "torch.finfo",
    "torch.iinfo",
    "torch.numel",
    "torch.no_grad",
    "torch.inference_mode",
    "torch.Generator",
    "torch.dtype",
    "torch.library.",
    "torch.ops.",
    "torch.jit.",
    "torch.fx.",
    "torch.nn.Module",
    "torch.nn.Parameter",
    "torch.profiler.",
    "torch.autograd.",
    "torch.cpu.",
    "torch.backends.",
    "torch.version",
    "torch.manual_seed",
    "torch.use_deterministic_algorithms",
)
PREDICATE_PREFIXES = ("is_", "has_", "get_", "supports_", "can_")
BUILTIN_NAMES = frozenset(dir(builtins))
PY_BUILTINS = frozenset(
    "len range isinstance issubclass hasattr callable id hash str repr format bytes int float bool "
    "complex dict set frozenset tuple list sorted reversed enumerate zip type chr ord bin hex oct "
    "divmod round abs print memoryview bytearray".split()
)
TYPE_HOST_HINTS = ("ndarray", "NDArray", "array")
TYPE_PY_HINTS = frozenset(
    "int float bool str bytes list List tuple Tuple dict Dict set Set frozenset Sequence Iterable "
    "Mapping Callable Any None Optional Union Literal Iterator Generator type".split()
)
# Decorators of functions that are not host code run every step: Triton/JIT/CuTe kernels
# (device code: `@triton.jit`, `@cute.kernel`), never walked, and memoized functions and cached
# properties (run once per argument), walked for their callers' sake only (see `report`).
KERNEL_DECORATOR_WORDS = ("jit", "autotune", "heuristics", "triton", "kernel")
MEMO_DECORATOR_WORDS = ("cache",)


def decorator_kind(name: str) -> str | None:
    """"kernel", "memo" or None for a decorator's dotted name."""
    name = name.lower()
    if any(word in name for word in KERNEL_DECORATOR_WORDS):
        return "kernel"
    if any(word in name for word in MEMO_DECORATOR_WORDS):
        return "memo"
    return None


@dataclass
class RawFinding:
    code: str
    function: str
    stmt: int  # index into the statement spans
    anchors: list[Any]  # strings, or nodes whose first line of code is the anchor
    message: str
    fix: Fix | None = None
    level: str = "error"
    # (class, attribute) the flagged value was read from, when known: the run drops the finding
    # if another file's class says that attribute lives on the host (see engine.py)
    field: tuple[str, str] | None = None
    # (qualified function, parameter) when the flagged value is that parameter: the run drops
    # the finding if every call in the linted tree passes host data for it (see wholeprogram.py)
    param: tuple[str, str] | None = None
    # the name of the call in this function whose result the flagged value is computed from
    # (`lens = helper(cu); lens.tolist()`): the run decides with the callee's return summary
    origin: str | None = None


@dataclass
class FunctionContext:
    """What a rule may ask about the function being walked."""

    analyzer: "ModuleAnalyzer"
    qualname: str
    classes: list[str]
    passive: bool = False  # module/class body: only imports and definitions matter
    kind: str = "function"  # "module", "class" or "function"
    env: dict[str, int] = field(default_factory=dict)
    bools: set[str] = field(default_factory=set)
    types: dict[str, str] = field(default_factory=dict)  # name -> annotated class name
    params: list[str] = field(default_factory=list)
    reassigned: set[str] = field(default_factory=set)
    copies: dict[str, str] = field(default_factory=dict)  # name -> name it is a host/device copy of
    # name -> the parameter it was computed from (`lens = cu_seqlens[1:] - cu_seqlens[:-1]`):
    # a sync on it happens only where a caller passes a device value for that parameter
    derived: dict[str, str] = field(default_factory=dict)
    # name -> the function whose result it holds (`lens = helper(cu)` -> "helper")
    origins: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] | None = None
    stmt: int = 0
    # inside `if self.x is None: self.x = ...` or a memoized function keyed by a tensor: runs
    # once per object or key, so not reported here, but a sync for its callers (`latent`)
    once_depth: int = 0
    # inside `if key not in CACHE:` / a memoized function of configuration values: runs once
    cold_depth: int = 0

    # -- questions rules ask -------------------------------------------------------------
    @property
    def config(self):
        return self.analyzer.config

    def alias_table(self) -> dict[str, str]:
        return self.aliases if self.aliases is not None else self.analyzer.aliases

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Qualified name of an imported thing (`torch.cuda.synchronize`), else None."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.alias_table().get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def is_bool(self, node: cst.BaseExpression) -> bool:
        """Does this expression look like a boolean mask?"""
        if isinstance(node, cst.Comparison):
            return not any(
                isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons
            )
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self.is_bool(node.expression)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self.is_bool(node.left) or self.is_bool(node.right)
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node)
            if name is not None and name in self.bools:
                return True
            last = name.rsplit(".", 1)[-1] if name else (node.attr.value if isinstance(node, cst.Attribute) else "")
            words = last.lower().strip("_").split("_")
            return "mask" in words or "masks" in words
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in BOOL_METHODS:
                    return True
                if func.attr.value == "to" and any(dotted(a.value) in ("torch.bool", "bool") for a in node.args):
                    return True
        return False

    def host_twin(self, node: cst.BaseExpression) -> tuple[str, bool] | None:
        """A host-side twin of a device value in scope (`mask` -> `mask_cpu`), and whether it is
        provably a copy of it (a local `mask = mask_cpu.to(...)` or `mask_cpu = mask.cpu()`)
        rather than only named like one."""
        if not isinstance(node, cst.Name):
            return None
        name = node.value
        for suffix in self.config.twin_suffixes:
            twin = name + suffix
            if twin in self.env or twin in self.params:
                proven = self.copies.get(name) == twin or self.copies.get(twin) == name
                return twin, proven
        return None

    def param_of(self, node: cst.BaseExpression | None) -> str | None:
        """The parameter a value is computed from, if it is only that parameter's data. A field
        of `self` counts as the receiver's: where the object lives decides (a host copy of an
        output object, `out_cpu.tolists()`, holds host tensors)."""
        node = _root_value(node)
        if isinstance(node, cst.BinaryOperation):
            return self.param_of(node.left) or self.param_of(node.right)
        if isinstance(node, cst.Attribute) and self.classes and self.params and self.params[0] in ("self", "cls"):
            base = node
            while isinstance(base, cst.Attribute):
                base = base.value
            if isinstance(base, cst.Name) and base.value == self.params[0] and base.value not in self.reassigned:
                return base.value
        if not isinstance(node, cst.Name):
            return None
        name = node.value
        if name in self.params and name not in self.reassigned:
            return name
        return self.derived.get(name)

    def origin_of(self, node: cst.BaseExpression | None) -> str | None:
        """The function (of the linted tree, maybe) whose result a value is computed from:
        `helper(x)[1:].sum()` and `self.plan(x)` come from `helper` and `plan`."""
        while True:
            if isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and not isinstance(node.func.value, cst.Name):
                node = node.func.value  # a method of a computed value: `helper(x).sum()`
            else:
                break
        if isinstance(node, cst.Name):
            return self.origins.get(node.value)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            if func.value.value in self.alias_table() or func.value.value not in ("self", "cls"):
                qualified = self.resolve(func)
                if qualified is None or qualified.startswith(("torch.", "numpy.", "math.")):
                    return None  # a tensor method, or a library function
            return func.attr.value
        if isinstance(func, cst.Name) and func.value not in BUILTIN_NAMES:
            qualified = self.alias_table().get(func.value, "")
            return None if qualified.startswith(("torch.", "numpy.", "math.")) else func.value
        return None

    def report(self, rule: Rule, node: cst.CSTNode, message: str, *, anchor: str | None = None,
               subject: cst.BaseExpression | None = None, fix: Fix | None = None) -> None:
        if self.passive or self.cold_depth:
            return
        # inside `if x is None: x = ...` or a memoized function: not reported here, but still a
        # sync for whoever calls this function (wholeprogram.py)
        latent = bool(self.once_depth)
        anchors: list[Any] = [node]
        if anchor:
            anchors.append(anchor)
        origin = self.origin_of(subject)
        subject = _root_value(subject)
        field_read = None
        if isinstance(subject, cst.Attribute) and isinstance(subject.value, cst.Name):
            owner = subject.value.value
            owner_class = self.classes[-1] if owner == "self" and self.classes else self.types.get(owner)
            if owner_class:
                field_read = (owner_class, subject.attr.value)
        source = self.param_of(subject)
        param = (_qualify(self.analyzer.module_name, self.qualname), source) if source is not None else None
        found = RawFinding(rule.code, self.qualname, self.stmt, anchors, message, fix, rule.level, field_read, param,
                           origin)
        (self.analyzer.latent if latent else self.analyzer.findings).append(found)


class ModuleAnalyzer:
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
        self.class_hints: dict[tuple[str, str], int] = {}
        self.findings: list[RawFinding] = []
        # syncs not reported where they are (lazy-init branches, memoized functions) but
        # counted for the callers of their function (wholeprogram.py)
        self.latent: list[RawFinding] = []
        self.counter = 0
        self._eval_dispatch = {
            cst.Name: self._eval_name,
            cst.Attribute: self._eval_attribute,
            cst.Call: self._eval_call,
            cst.Subscript: self._eval_subscript,
            cst.BinaryOperation: self._eval_binary,
            cst.Comparison: self._eval_comparison,
            cst.UnaryOperation: self._eval_unary,
            cst.BooleanOperation: self._eval_boolean,
            cst.IfExp: self._eval_ifexp,
            cst.Integer: _py, cst.Float: _py, cst.Imaginary: _py, cst.SimpleString: _py,
            cst.ConcatenatedString: _py, cst.Ellipsis: _py,
            cst.FormattedString: self._eval_fstring,
            cst.List: self._eval_sequence, cst.Tuple: self._eval_sequence, cst.Set: self._eval_sequence,
            cst.Dict: self._eval_dict,
            cst.ListComp: self._eval_comp, cst.SetComp: self._eval_comp, cst.GeneratorExp: self._eval_comp,
            cst.DictComp: self._eval_comp,
            cst.Lambda: _unknown,
            cst.Await: self._eval_await,
            cst.Yield: self._eval_yield,
            cst.NamedExpr: self._eval_walrus,
            cst.StarredElement: self._eval_starred,
        }

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
        ctx = FunctionContext(self, qualname, outer.classes, aliases=outer.aliases)
        if outer.kind == "function":  # a closure sees its enclosing function's names
            ctx.env = dict(outer.env)
            ctx.bools = set(outer.bools)
            ctx.types = dict(outer.types)
        # `_mask_cpu(...)` works on host data; `async_tensor_h2d(data, ...)` is handed host data
        host_function = self.hints.where(name) == P.HOST or "h2d" in name.lower()
        self._bind_params(node.params, ctx, host_function=host_function)
        memo = [d for d in node.decorators if _decorator_kind(d) == "memo"]
        if memo or _fills_cache(node):
            # a memoizing function runs its work once per key: once per object for a cached
            # property, once per step when a tensor is part of the key (its callers still sync
            # then: latent), else once per configuration (cold: dropped)
            per_object = any((dotted(d.decorator) or "").endswith("cached_property") for d in memo)
            keyed_by_tensor = any(ctx.env.get(p, P.PY) >= P.TENSOR for p in ctx.params)
            if per_object or keyed_by_tensor:
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
            if param in ordered:
                ctx.params.append(name)
            where = self._where_of_param(param, ctx)
            if host_function and where in (P.UNKNOWN, P.TENSOR):
                where = P.HOST  # `_mask_cpu(...)`: a function named for the host works on host data
            ctx.env[name] = where
            ctx.reassigned.discard(name)

    def _where_of_param(self, param: cst.Param, ctx: FunctionContext) -> int:
        name = param.name.value
        by_name = self.hints.where(name)
        if by_name == P.HOST:
            return P.HOST
        if name in ("self", "cls"):
            return P.UNKNOWN
        if param.annotation is None:
            return by_name
        return self._where_of_annotation(param.annotation.annotation, name, ctx, by_name)

    def _where_of_annotation(self, ann: cst.BaseExpression, name: str, ctx: FunctionContext, by_name: int) -> int:
        where, type_name = annotation_where(ann)
        if type_name:
            ctx.types[name] = type_name
        if where is None:
            return by_name
        if where == P.TENSOR:
            return max(by_name, P.TENSOR)
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
            ctx.once_depth += once
            ctx.cold_depth += cold
            self.visit_block(stmt.body, ctx)
            ctx.once_depth -= once
            ctx.cold_depth -= cold
            if active:  # walk the other branch from the same starting point, then merge
                taken_env, taken_bools = ctx.env, ctx.bools
                ctx.env, ctx.bools = dict(before_env), set(before_bools)
            if isinstance(stmt.orelse, cst.If):
                self.visit_stmt(stmt.orelse, ctx)
            elif isinstance(stmt.orelse, cst.Else):
                self.visit_block(stmt.orelse.body, ctx)
            if active:
                _merge_branches(ctx, taken_env, taken_bools)
        elif isinstance(stmt, cst.For):
            if active:
                self.bind(stmt.target, self._iter_where(stmt.iter, ctx), None, ctx)
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
        where = self.eval(value, ctx)
        for target in targets:
            self.bind(target, where, value, ctx)
            if isinstance(target, (cst.Tuple, cst.List)):
                origin = ctx.origin_of(value)  # `a, b = helper(x)`: element k of its result
                for position, element in enumerate(target.elements):
                    if origin is not None and isinstance(element.value, cst.Name):
                        ctx.origins[element.value.value] = f"{origin}#{position}"

    def bind(self, target: cst.BaseExpression, where: int, value: cst.BaseExpression | None, ctx: FunctionContext) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            self._bind_name(name, where, value, ctx)
        elif isinstance(target, cst.Attribute):
            name = dotted(target)
            self.eval(target.value, ctx)
            if name is not None:
                self._bind_name(name, where, value, ctx)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, where, None, ctx)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, where, None, ctx)
        elif isinstance(target, cst.Subscript):
            base = self._eval_subscript_parts(target, ctx)
            for rule in self.registry.subscript_store:
                rule.on_subscript_store(ctx, target, base, value, where)

    def _bind_name(self, name: str, where: int, value: cst.BaseExpression | None, ctx: FunctionContext) -> None:
        # a name's own convention wins over data flow: `x_cpu = ...` is a host mirror
        if self.hints.where(name.rsplit(".", 1)[-1]) == P.HOST and where != P.PY:
            where = P.HOST
        source = ctx.param_of(value) if value is not None and where != P.PY else None
        ctx.env[name] = where
        ctx.reassigned.add(name)
        if source is not None and source != name:
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

    # -- expressions ---------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression, ctx: FunctionContext) -> int:
        handler = self._eval_dispatch.get(type(node))
        if handler is None:
            return P.UNKNOWN
        return handler(node, ctx)

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

    def _eval_name(self, node: cst.Name, ctx: FunctionContext) -> int:
        value = node.value
        if value in ("True", "False", "None"):
            return P.PY
        found = ctx.env.get(value)
        if found is not None:
            return found
        if value in ctx.alias_table():
            return P.PY  # a module or an imported function
        return self.hints.where(value)

    def _eval_attribute(self, node: cst.Attribute, ctx: FunctionContext) -> int:
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
        if attr in ("T", "mT", "H", "data", "real", "imag"):
            return receiver
        by_name = self.hints.where(attr)
        if by_name != P.UNKNOWN:
            return by_name
        return P.UNKNOWN

    def _eval_subscript_parts(self, node: cst.Subscript, ctx: FunctionContext) -> int:
        base = self.eval(node.value, ctx)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self.eval(element.slice.value, ctx)
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.eval(part, ctx)
        return base

    def _eval_subscript(self, node: cst.Subscript, ctx: FunctionContext) -> int:
        base = self._eval_subscript_parts(node, ctx)
        for rule in self.registry.subscript_read:
            rule.on_subscript_read(ctx, node, base)
        return base

    def index_where(self, node: cst.Subscript, ctx: FunctionContext) -> list[tuple[cst.BaseExpression | None, int]]:
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

    def peek(self, node: cst.BaseExpression, ctx: FunctionContext) -> int:
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
                if method in ("item",):
                    return P.PY
                if method in ("cpu", "numpy", "tolist", "pin_memory"):
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

    def _eval_binary(self, node: cst.BinaryOperation, ctx: FunctionContext) -> int:
        left, right = self.eval(node.left, ctx), self.eval(node.right, ctx)
        # torch does not mix devices: an operand combined with a host tensor is on the host too
        if left == P.HOST and right in (P.UNKNOWN, P.TENSOR):
            self._learn_host(node.right, ctx)
        elif right == P.HOST and left in (P.UNKNOWN, P.TENSOR):
            self._learn_host(node.left, ctx)
        return P.combine(left, right)

    def _learn_host(self, node: cst.BaseExpression, ctx: FunctionContext) -> None:
        name = dotted(node)
        if name is not None and not isinstance(node, cst.Call):
            ctx.env[name] = P.HOST

    def _eval_comparison(self, node: cst.Comparison, ctx: FunctionContext) -> int:
        wheres = [self.eval(node.left, ctx)] + [self.eval(c.comparator, ctx) for c in node.comparisons]
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
            return P.PY
        return P.combine(*wheres)

    def _eval_unary(self, node: cst.UnaryOperation, ctx: FunctionContext) -> int:
        if isinstance(node.operator, cst.Not):
            self.condition(node.expression, ctx, "not")
            return P.PY
        return self.eval(node.expression, ctx)

    def _eval_boolean(self, node: cst.BooleanOperation, ctx: FunctionContext) -> int:
        # `a or b` calls bool(a); b is returned as it is
        self.condition(node.left, ctx, node.operator.__class__.__name__.lower())
        return P.combine(P.PY, self.eval(node.right, ctx))

    def _eval_ifexp(self, node: cst.IfExp, ctx: FunctionContext) -> int:
        self.condition(node.test, ctx, "ternary")
        return P.combine(self.eval(node.body, ctx), self.eval(node.orelse, ctx))

    def _eval_fstring(self, node: cst.FormattedString, ctx: FunctionContext) -> int:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.eval(part.expression, ctx)
        return P.PY

    def _eval_sequence(self, node, ctx: FunctionContext) -> int:
        wheres = [self.eval(e.value, ctx) for e in node.elements]
        # a literal list of Python values is host data (what `torch.tensor([...])` copies)
        return P.combine(P.PY, *wheres)

    def _eval_dict(self, node: cst.Dict, ctx: FunctionContext) -> int:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key, ctx)
            self.eval(element.value, ctx)
        return P.PY

    def _eval_comp(self, node, ctx: FunctionContext) -> int:
        saved = dict(ctx.env)
        clause = node.for_in
        while clause is not None:
            self.bind_loop_target(clause.target, self._iter_where(clause.iter, ctx), ctx)
            for cond in clause.ifs:
                self.condition(cond.test, ctx, "comprehension")
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.eval(node.key, ctx)
            result = self.eval(node.value, ctx)
        else:
            result = self.eval(node.elt, ctx)
        ctx.env = saved
        return result

    def bind_loop_target(self, target: cst.BaseExpression, where: int, ctx: FunctionContext) -> None:
        if isinstance(target, cst.Name):
            ctx.env[target.value] = where
            ctx.reassigned.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_loop_target(element.value, where, ctx)

    def _iter_where(self, node: cst.BaseExpression, ctx: FunctionContext) -> int:
        """Where the items of an iteration live."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in ctx.env:
            name = node.func.value
            if name == "range":
                self.eval(node, ctx)
                return P.PY
            if name in ("zip", "enumerate", "reversed", "sorted", "list", "tuple"):
                wheres = [self.eval(a.value, ctx) for a in node.args]
                return P.combine(*wheres) if wheres else P.UNKNOWN
        where = self.eval(node, ctx)
        return where

    def _eval_await(self, node: cst.Await, ctx: FunctionContext) -> int:
        return self.eval(node.expression, ctx)

    def _eval_yield(self, node: cst.Yield, ctx: FunctionContext) -> int:
        if isinstance(node.value, cst.BaseExpression):
            self.eval(node.value, ctx)
        elif isinstance(node.value, cst.From):
            self.eval(node.value.item, ctx)
        return P.UNKNOWN

    def _eval_walrus(self, node: cst.NamedExpr, ctx: FunctionContext) -> int:
        where = self.eval(node.value, ctx)
        self.bind(node.target, where, node.value, ctx)
        return where

    def _eval_starred(self, node: cst.StarredElement, ctx: FunctionContext) -> int:
        return self.eval(node.value, ctx)

    # -- calls ---------------------------------------------------------------------------
    def _eval_call(self, node: cst.Call, ctx: FunctionContext) -> int:
        func = node.func
        qualname: str | None = None
        method: str | None = None
        receiver: cst.BaseExpression | None = None
        receiver_where: int | None = None
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

        args: list[tuple[cst.BaseExpression, int]] = []
        kwargs: dict[str, tuple[cst.BaseExpression, int]] = {}
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
            if name is not None and args[0][1] in (P.UNKNOWN, P.TENSOR):
                ctx.env[name] = P.HOST

        last = method if method is not None else (qualname.rsplit(".", 1)[-1] if qualname else None)
        if last is not None:
            rules = self.registry.by_name.get(last)
            if rules:
                for rule in rules:
                    if rule.handles(info):
                        rule.on_call(ctx, info)
        return self._call_result(info, ctx)

    def _call_result(self, info: CallInfo, ctx: FunctionContext) -> int:
        qualname, method = info.qualname, info.method
        if info.receiver is not None:
            r = info.receiver_where if info.receiver_where is not None else P.UNKNOWN
            if method == "item":
                return P.PY
            if method == "tolist":
                return P.PY  # Python numbers: storing one is a fill, not a host tensor copy
            if method in ("cpu", "numpy", "pin_memory"):
                return P.HOST
            if method in ("to", "cuda"):
                target = copy_target(info, ctx) if method == "to" else P.DEVICE
                if target == P.DEVICE and is_non_blocking(info) and r in (P.UNKNOWN, P.TENSOR):
                    # nobody copies device memory to the device with non_blocking=True: the
                    # source is a (pinned) host tensor, from here on
                    name = dotted(info.receiver)
                    if name is not None:
                        ctx.env[name] = P.HOST
                return target if target is not None else r
            if method in PY_METHODS:
                return P.PY
            if method in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
                return r if r >= P.HOST else P.TENSOR
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
        if qualname.startswith("torch."):
            short = qualname.rsplit(".", 1)[-1]
            if qualname.startswith(TORCH_NON_TENSOR) or short.lstrip("_").startswith(PREDICATE_PREFIXES) \
                    or short[:1].isupper():
                return P.PY  # flags, queries and classes (`torch.cuda.is_available`, `_SymmetricMemory`)
            if short in TORCH_FACTORIES:
                device = info.kwarg("device")
                if device is not None:
                    return device_where(device, ctx) or P.DEVICE
                if short.endswith("_like") and info.args:
                    return info.args[0][1]
                if short == "as_tensor" and info.args:
                    return info.args[0][1] if info.args[0][1] >= P.HOST else P.HOST
                return P.HOST
            if short == "from_numpy":
                return P.HOST
            wheres = [w for _, w in info.args] + [w for _, w in info.kwargs.values()]
            if any(w == P.DEVICE for w in wheres):
                return P.DEVICE
            if any(w in (P.TENSOR, P.UNKNOWN) for w in wheres):
                return P.TENSOR
            if any(w == P.HOST for w in wheres):
                return P.HOST
            return P.TENSOR
        if qualname.startswith(("numpy.", "array.")):  # array.array is host memory too
            return P.HOST
        if qualname.startswith("math."):
            return P.PY
        if qualname in PY_BUILTINS:
            return P.PY
        if qualname in ("min", "max", "sum"):
            wheres = [w for _, w in info.args]
            return P.PY if all(w == P.PY for w in wheres) else P.combine(*wheres)
        return P.UNKNOWN


def _decorator_kind(decorator: cst.Decorator) -> str | None:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return decorator_kind(dotted(expr) or "")


def _qualify(module: str, qualname: str) -> str:
    return f"{module}.{qualname}" if module else qualname


def _merge_branches(ctx: FunctionContext, other_env: dict[str, int], other_bools: set[str]) -> None:
    """After `if`/`else`: a name may hold either branch's value, so keep the more device-like
    one (a device mask on one path is a sync on that path) and any boolean-mask flag."""
    env = ctx.env
    for name, where in other_env.items():
        mine = env.get(name)
        if mine is None or where > mine:
            env[name] = where
    ctx.bools |= other_bools


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
                    if isinstance(target.target, cst.Subscript) and \
                            "cache" in (dotted(target.target.value) or "").lower():
                        return True
    return False


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


def _root_value(node):
    """The name a value is computed from through tensor methods and indexing: `mask.sum()`
    and `x[:n]` come from `mask` and `x` (used to tell that a helper syncs on a parameter)."""
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value not in ("cpu", "numpy", "tolist", "item"):
            node = node.func.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, (cst.Comparison,)):
            node = node.left
        elif isinstance(node, cst.UnaryOperation):
            node = node.expression
        else:
            return node


def _py(node, ctx) -> int:
    return P.PY


def _unknown(node, ctx) -> int:
    return P.UNKNOWN


CONTAINERS = frozenset("list List tuple Tuple Sequence MutableSequence Iterable Iterator dict Dict Mapping "
                       "MutableMapping set Set frozenset FrozenSet deque Generator Callable type".split())


def annotation_where(node: cst.BaseExpression) -> tuple[int | None, str]:
    """Where a value of this annotated type lives, and its class name when it is a class:
    `torch.Tensor | None` -> TENSOR; `list[torch.Tensor]` -> PY (a list's truth value is its
    length, no sync); `np.ndarray` -> HOST; `CommonAttentionMetadata` -> (None, that name)."""
    if isinstance(node, cst.SimpleString):
        try:
            node = cst.parse_expression(str(node.evaluated_value))
        except Exception:
            return None, ""
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = dotted(node) or ""
        last = name.rsplit(".", 1)[-1]
        if last == "Tensor" or last == "Parameter":
            return P.TENSOR, ""
        if last in TYPE_HOST_HINTS:
            return P.HOST, ""
        if last in TYPE_PY_HINTS or last in CONTAINERS:
            return P.PY, ""
        return None, last
    if isinstance(node, cst.Subscript):
        head = (dotted(node.value) or "").rsplit(".", 1)[-1]
        if head in CONTAINERS:
            return P.PY, ""
        if head in TYPE_HOST_HINTS:
            return P.HOST, ""
        if head in ("Optional", "Union", "Annotated"):
            members = [annotation_where(e.slice.value) for e in node.slice if isinstance(e.slice, cst.Index)]
            if head == "Annotated":
                members = members[:1]
            return _union(members)
        return None, head
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _union([annotation_where(node.left), annotation_where(node.right)])
    return None, ""


def _union(members: list[tuple[int | None, str]]) -> tuple[int | None, str]:
    """`X | None`: None adds nothing; the most device-like member wins."""
    wheres = [w for w, _ in members if w is not None]
    names = [n for _, n in members if n]
    known = [w for w in wheres if w != P.PY] or wheres
    if names and not any(w != P.PY for w in wheres):
        return None, names[0]
    return (max(known) if known else None), (names[0] if names else "")


