"""What the rules see of the function being walked, and what they record.

`FunctionContext` is the walk's state for one function (where each local name lives, its
annotations, its parameters and what values were computed from) together with the questions rules
ask about it; `RawFinding` is what `report` records. They live apart from the walk (analyzer.py)
and from the expression evaluator (evaluate.py) so that modules the walk itself uses (devices.py,
the rules) can name the context without importing the walk: no import cycle.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from . import provenance as P
from .caller_classes import caller_class
from .imports import dotted
from .list_origins import joined_call, joined_list
from .records import FieldRef
from .rules.base import Fix, Rule
from .vocabulary import (JOINING_FUNCTIONS, PY_METHODS, SEQUENCE_INPUTS, TORCH_FACTORIES, TORCH_HOST_FUNCTIONS,
                         TORCH_NON_TENSOR, pass_through)

# Tensor methods whose result is a boolean mask (see `FunctionContext.is_bool`).
BOOL_METHODS = frozenset(
    "bool eq ne gt lt ge le isnan isinf isfinite logical_and logical_or logical_not logical_xor "
    "isin any all __eq__ __ne__ __lt__ __gt__ __le__ __ge__ isneginf isposinf signbit".split()
)
# Tensor methods whose result holds the receiver's elements, only placed or shaped anew (same
# dtype): a mask reshaped, broadcast or permuted is still a mask.
SHAPE_METHODS = frozenset(
    "unsqueeze squeeze expand expand_as broadcast_to view view_as reshape reshape_as flatten unflatten "
    "permute transpose t movedim narrow select flip roll repeat".split()
)
BUILTIN_NAMES = frozenset(dir(builtins))


# A name is read as English: its last word says what it holds (`keep_indices` are indices, of
# what to keep; `valid_mask` is a mask), after the words that only say where it lives.
_PLACE_WORDS = frozenset(("device", "dev", "gpu", "cuda", "cpu", "host", "buf", "buffer", "tensor", "t", "np"))
_INDEX_NOUNS = frozenset(("indices", "index", "idx", "idxs", "ids", "positions", "pos", "offsets", "slots", "locs", "loc", "perm"))


def _head_noun(words: list[str]) -> str:
    """The last word of a snake_case name that is not a place word (`keep_indices_device` ->
    `indices`), or "" when there is none."""
    for word in reversed(words):
        if word and word not in _PLACE_WORDS:
            return word
    return ""


@dataclass
class RawFinding:
    """One sync a rule reported, before it is placed on a line (worker.py) and judged against
    the other files (engine.py, wholeprogram.py)."""

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
    # the attribute the flagged value was read from (its name, and its owner's class when
    # known), when the finding holds only if the linted tree keeps that attribute on the device
    # (engine.py decides once every file is read); with needs_vector, only if every device
    # tensor it is given is 1-D
    needs_device: FieldRef | None = None
    needs_vector: bool = False
    # (qualified function, parameter, its index, a method) when the stored value is that
    # parameter: the finding holds only if a call in the tree passes a Python number for it
    python_arg: tuple | None = None
    # a root for the callers even with needs_device (Rule.ROOT_ON_CONDITION)
    root_on_condition: bool = False


@dataclass
class FunctionContext:
    """What a rule may ask about the function being walked."""

    # the ModuleAnalyzer walking this function (analyzer.py). Not imported here: the walk
    # imports this module, and rules reach the walk's helpers (`peek`, `index_where`) through it
    analyzer: Any
    qualname: str
    classes: list[str]
    passive: bool = False  # module/class body: only imports and definitions matter
    kind: str = "function"  # "module", "class" or "function"
    env: dict[str, int] = field(default_factory=dict)
    bools: set[str] = field(default_factory=set)
    types: dict[str, str] = field(default_factory=dict)  # name -> annotated class name
    params: list[str] = field(default_factory=list)  # positional first, then keyword-only
    kwonly: set[str] = field(default_factory=set)  # the keyword-only ones (no position)
    reassigned: set[str] = field(default_factory=set)
    copies: dict[str, str] = field(default_factory=dict)  # name -> name it is a host/device copy of
    # name -> (name tested, negated): a local holding a tensor test (`is_t = isinstance(x, torch.Tensor)`)
    tensor_tests: dict[str, tuple[str, bool]] = field(default_factory=dict)
    # names a tensor test holds for in the branch being walked (`if torch.is_tensor(value):`):
    # a tensor there, whatever the callers pass elsewhere (rules/_common.py `python_arg`)
    tensors_here: set[str] = field(default_factory=set)
    # name -> where its items live, for a container of tensors (`batch: list[torch.Tensor]`)
    elements: dict[str, P.Place] = field(default_factory=dict)
    # name -> where each member lives, for a tuple it was assigned (`self._replay = (max(...),
    # torch.tensor(..., device=d))`): unpacking it (`window, groups = self._replay`) binds each
    # target to its own member, not the most device-like one
    parts: dict[str, tuple[P.Place, ...]] = field(default_factory=dict)
    # name -> the parameter it was computed from (`lens = cu_seqlens[1:] - cu_seqlens[:-1]`):
    # a sync on it happens only where a caller passes a device value for that parameter. In a
    # nested function, a name it reads from its enclosing function (a closure) maps to
    # (enclosing function, its parameter): `inherit_closure_sources`
    derived: dict[str, str | tuple[str, str]] = field(default_factory=dict)
    # name -> the function whose result it holds (`lens = helper(cu)` -> "helper")
    origins: dict[str, str] = field(default_factory=dict)
    # list name -> the origin of every item appended to it ("" none yet, None: mixed; list_origins.py)
    appended: dict[str, str | None] = field(default_factory=dict)
    # list name -> HOST when every item appended to it is host data ("" none yet, None: other)
    appended_places: dict[str, P.Place | None] = field(default_factory=dict)
    # lists bound to `[]` that were given an item that may be no Python scalar (a tuple, a
    # tensor, anything unknown): iterating one gives items of unknown place (list_origins.py)
    mixed_items: set[str] = field(default_factory=set)
    # name -> the attribute an unknown value was read from (`buf = req.kv.track_buffer[i]` ->
    # "track_buffer"): see `device_field`
    attr_sources: dict[str, FieldRef] = field(default_factory=dict)
    # name -> where the device a local holds points, for a local bound once to the device of
    # host data (`grid_device = grid.device if isinstance(grid, torch.Tensor) else None`); None
    # once it is bound again (devices.bind_device)
    device_locals: dict[str, P.Place | None] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)  # every local bound so far, on any path
    aliases: dict[str, str] | None = None
    stmt: int = 0
    # inside `if self.x is None: self.x = ...` or a memoized function keyed by a tensor: runs
    # once per object or key, so not reported here, but a sync for its callers (`latent`)
    once_depth: int = 0
    # inside `if key not in CACHE:` / a memoized function of configuration values: runs once
    cold_depth: int = 0
    node: Any = None  # the FunctionDef being walked (what --fix's twin search reads)
    # the names it binds only to Python containers (sequence_names.py), found when first asked
    containers: frozenset | None = None

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

    def holds_container(self, node: cst.BaseExpression) -> bool:
        """Is this a list/tuple/set/dict display or comprehension, or a local every binding of
        which is one (`parts = [t[a:b] for ...]`)? Its truth value is its length."""
        from .sequence_names import container_names, is_container

        shadowed = self.alias_table().__contains__
        if not isinstance(node, cst.Name):
            return is_container(node, shadowed)
        if not isinstance(self.node, cst.FunctionDef):
            return False
        if self.containers is None:
            self.containers = container_names(self.node, self.params, shadowed)
        return node.value in self.containers

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
            if _head_noun(words) in _INDEX_NOUNS:  # `keep_indices_device`: what to keep, by index
                return False
            if "mask" in words or "masks" in words:
                return True
            # a tensor named as a predicate (`is_prefill: torch.Tensor`, `valid`, `keep`) is a
            # boolean mask too; a plain Python flag of that name is not (its where says so)
            predicate = words[0] in ("is", "has") or bool({"valid", "keep", "selected"} & set(words))
            return predicate and name is not None and P.is_tensor_like(self.env.get(name, P.UNKNOWN))
        if isinstance(node, cst.Subscript):
            return self.is_bool(node.value)  # `mask[:, None]`: elements of a mask
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in BOOL_METHODS:
                    return True
                if func.attr.value in ("to", "cuda", "clone", "contiguous"):
                    return self.is_bool(func.value)  # a copy of a mask is a mask
                if func.attr.value in SHAPE_METHODS:
                    return self.is_bool(func.value)  # `mask.unsqueeze(-1).expand_as(x)`: still a mask
            if self.resolve(func) in ("torch.as_tensor", "torch.tensor", "torch.from_numpy") and node.args:
                return self.is_bool(node.args[0].value)
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
        node = _root_value(node, self)
        if isinstance(node, cst.BinaryOperation):
            return self.param_of(node.left) or self.param_of(node.right)
        if isinstance(node, cst.BooleanOperation):
            # `crop[0] > 1 or crop[1] > 1` is one of its operands, as it is: the parameter's data
            # only when both are that parameter's (not a mix of two sources)
            left = self.param_of(node.left)
            return left if left is not None and left == self.param_of(node.right) else None
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

    def origin_of(self, node: cst.BaseExpression | None, read: bool = False) -> str | None:
        """The function (of the linted tree, maybe) whose result a value is computed from:
        `helper(x)[1:].sum()` and `self.plan(x)` come from `helper` and `plan`. With `read` (the
        value a finding reads), a method of a local so computed comes from it too (`col =
        helper(x)[:, 0]; col.min()`); a local bound to such a method's result gets no origin."""
        while True:
            if isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Comparison):
                node = compared(node, self)  # `lens <= 0`, `0 < lens`: the tensor compared
            elif isinstance(node, cst.BinaryOperation):
                node = node.left  # `lens - 1`: torch does not mix devices in one op
            elif isinstance(node, cst.Call) and _given_back(node, self) is not None:
                node = _given_back(node, self)  # `triton.cdiv(helper(x), n)`: where helper's result is
            elif isinstance(node, cst.Call) and self.appended and joined_list(node, self) is not None:
                node = joined_list(node, self)  # `torch.cat(parts)`: where its appended items come from
            elif isinstance(node, cst.Call) and (inner := joined_call(node, self)) is not None:
                found = self.origin_of(inner)  # `torch.stack(helper(x))`: the items helper returns
                return f"{found}#-1" if found and "#" not in found else None
            elif isinstance(node, cst.Call) and _is_module_call(node, self) and _torch_input(node, self) is not None:
                node = _torch_input(node, self)  # `torch.any(lens <= 0)`: where its input is
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and not isinstance(node.func.value, cst.Name) and not _self_field(node.func.value, self):
                node = node.func.value  # a method of a computed value: `helper(x).sum()`
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and read and isinstance(node.func.value, cst.Name) and node.func.value.value in self.origins \
                    and node.func.attr.value not in ("to", "cuda"):
                node = node.func.value  # a method of a local computed so: `col = helper(x)[:, 0]; col.min()`
            else:
                break
        if isinstance(node, cst.Name):
            return self.origins.get(node.value)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = func.value.value
            if owner in self.alias_table() or owner not in ("self", "cls"):
                qualified = self.resolve(func)
                if qualified is None and self._module_class(owner):
                    return func.attr.value  # `Encoder._compute_lengths(x)`: a method of a class of this module
                if qualified is None or qualified.startswith(("torch.", "numpy.", "math.")):
                    return None  # a tensor method, or a library function
            return func.attr.value
        if isinstance(func, cst.Attribute) and _self_field(func.value, self):
            # `self.audio_tower._get_feat_extract_output_lengths(x)`: a method of a submodule
            # held in a field; the run resolves it through the field's class (or not at all: a
            # tensor method of a field, `self.buf.sum()`, names no function of the tree)
            return func.attr.value
        if isinstance(func, cst.Name) and func.value not in BUILTIN_NAMES:
            qualified = self.alias_table().get(func.value, "")
            return None if qualified.startswith(("torch.", "numpy.", "math.")) else func.value
        return None

    def _module_class(self, name: str) -> bool:
        """A name read like a class (`Encoder`) that is no local, parameter or import: a class
        this module defines (its own names are not in the import table)."""
        return name[:1].isupper() and name not in self.env and name not in self.params

    def device_field(self, node: cst.BaseExpression | None) -> FieldRef | None:
        """The attribute a value of unknown place was read from (`self.pool.write_pos[idx]`,
        `buf` bound from `req.kv.track_buffer`), if any: a rule that needs a device tensor may
        report it on the condition that the linted tree keeps that attribute only on the device
        (`report(..., needs_device=...)`: the engine decides once every file is read)."""
        return attribute_source(_root_value(node, self), self)

    def report(self, rule: Rule, node: cst.CSTNode, message: str, *, anchor: str | None = None,
               subject: cst.BaseExpression | None = None, fix: Fix | None = None,
               no_fix: str | None = None, needs_device: FieldRef | None = None, needs_vector: bool = False,
               python_arg: str | None = None, device_of: cst.BaseExpression | None = None) -> None:
        """`device_of`: the `device=` argument of a copy to a device; when it is a field of the
        object (`device=self.dev`), the finding is on the device that field names, "dev.device"
        (dropped where the run finds it is the host's: switch_devices.switch_field_hints; a
        device field is a Python value, so the host hint of the field itself says nothing)."""
        if self.passive or self.cold_depth:
            return
        # every finding of a rule that can fix says what its fix changes, or why there is none
        if fix is not None:
            message = f"{message}; fix ({fix.applicability}): {fix.title}"
        elif no_fix:
            message = f"{message}; no fix: {no_fix}"
        # inside `if x is None: x = ...` or a memoized function: not reported here, but still a
        # sync for whoever calls this function (wholeprogram.py)
        latent = bool(self.once_depth)
        anchors: list[Any] = [node]
        if anchor:
            anchors.append(anchor)
        origin = self.origin_of(subject, read=True)
        subject = _root_value(subject, self)
        field_read = None
        if isinstance(subject, cst.Attribute) and isinstance(subject.value, cst.Name):
            owner = subject.value.value
            owner_class = self.classes[-1] if owner == "self" and self.classes else self.types.get(owner) \
                or (caller_class(getattr(self.analyzer, "file_tree", None), self.qualname, owner)
                    if owner in self.params and owner not in self.reassigned and not self.classes else None)
            if owner_class:
                field_read = (owner_class, subject.attr.value)
        if isinstance(device_of, cst.Attribute) and isinstance(device_of.value, cst.Name) \
                and device_of.value.value == "self" and self.classes:
            field_read = (self.classes[-1], device_of.attr.value + ".device")  # the device it names
        source = self.param_of(subject)
        if isinstance(source, tuple):  # a closure's value: the enclosing function's parameter
            param = source
        else:
            param = (_qualify(self.analyzer.module_name, self.qualname), source) if source is not None else None
        if python_arg is not None:  # python_args.PythonArgs.fed decides
            python_arg = (_qualify(self.analyzer.module_name, self.qualname), python_arg,
                          self.params.index(python_arg) if python_arg not in self.kwonly else -1,
                          bool(self.classes) and self.params[:1] == ["self"])
        found = RawFinding(rule.code, self.qualname, self.stmt, anchors, message, fix, rule.level, field_read, param,
                           origin, needs_device, needs_vector, python_arg, rule.ROOT_ON_CONDITION)
        (self.analyzer.latent if latent else self.analyzer.findings).append(found)


def _qualify(module: str, qualname: str) -> str:
    return f"{module}.{qualname}" if module else qualname


def inherit_closure_sources(ctx: FunctionContext, outer: FunctionContext, params: cst.Parameters) -> None:
    """A nested function reads its enclosing function's names as they are: one that holds a
    parameter's data of the enclosing function (`draft_tokens` in SGLang's `traverse_tree`,
    read by its recursive `dfs`) is still that parameter's data, so a sync on it happens only
    where the enclosing function's callers pass a device value. Its own parameters shadow them."""
    own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    own |= {star.name.value for star in (params.star_arg, params.star_kwarg) if isinstance(star, cst.Param)}
    here = _qualify(ctx.analyzer.module_name, outer.qualname)
    for name in set(outer.params) | set(outer.derived):
        if name in own or "." in name:
            continue  # `self.x` of a method: the receiver is the nested function's too, left alone
        source = name if name in outer.params and name not in outer.reassigned else outer.derived.get(name)
        if source is None or source in ("self", "cls"):
            continue
        ctx.derived[name] = source if isinstance(source, tuple) else (here, source)


# Attributes that are never tensors, whatever the object (`x.shape`, `self.device`).
_NOT_TENSOR_ATTRS = frozenset("shape dtype device ndim layout is_cuda config data_ptr numel".split())


def attribute_source(node, ctx: FunctionContext) -> FieldRef | None:
    """The attribute an expression reads (`obj.a.b` -> "b", `getattr(obj, "b", None)` -> "b"),
    or the one a local name was bound from; None for module attributes (`torch.int32`). With
    the owner's class when the object's class is known (`_owner`)."""
    if isinstance(node, cst.Name):
        return ctx.attr_sources.get(node.value)
    if isinstance(node, cst.Attribute):
        root = node
        hops = []
        while isinstance(root, cst.Attribute):
            hops.append(root.attr.value)
            root = root.value
        if isinstance(root, cst.Name) and root.value in ctx.alias_table() and root.value not in ctx.env:
            return None
        attr = node.attr.value
        if attr in _NOT_TENSOR_ATTRS:
            return None
        return FieldRef(attr, _owner(root, hops[:0:-1], ctx))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1].value, cst.SimpleString):
        name = node.args[1].value.evaluated_value
        return FieldRef(name) if isinstance(name, str) and name.isidentifier() else None
    return None


def _owner(root, hops: list[str], ctx: FunctionContext) -> tuple | None:
    """(class, attribute, ...) of the object an attribute is read from: `self` in a method is
    the method's class, a name annotated with a class is that class (short names, as the tree's
    class facts are keyed: owner_fields.py); `self.mamba_cache.temporal` -> ("MambaPool",
    "mamba_cache"). None when the root's class is not known."""
    if not isinstance(root, cst.Name) or root.value in ctx.reassigned:
        return None
    if root.value == "self" and ctx.classes and ctx.params[:1] == ["self"]:
        cls = ctx.classes[-1]
    else:
        cls = ctx.types.get(root.value)
    return (cls.rsplit(".", 1)[-1], *hops) if cls else None


def _self_field(node, ctx: FunctionContext) -> bool:
    """`self.audio_tower` (at any depth): a field of the function's own receiver."""
    if not isinstance(node, cst.Attribute) or not ctx.params or ctx.params[0] not in ("self", "cls"):
        return False
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == ctx.params[0] and node.value not in ctx.reassigned


def _root_value(node, ctx: FunctionContext | None = None):
    """The name a value is computed from through tensor methods and indexing: `mask.sum()`
    and `x[:n]` come from `mask` and `x` (used to tell that a helper syncs on a parameter).
    With the function's context, a torch operation comes from its input tensor too:
    `torch.sum(ent)` is `ent`'s data (torch does not move an op's result off its input's device),
    while a torch factory (`torch.tensor(x)`) or a call naming a `device=` makes new data."""
    while True:
        if is_cast(node):  # `cast(list[torch.Tensor], counts)` is `counts` itself, retyped
            node = node.args[1].value
        elif ctx is not None and isinstance(node, cst.Call) and _given_back(node, ctx) is not None:
            node = _given_back(node, ctx)  # `triton.cdiv(x, n)`: x's data (vocabulary.PASS_THROUGH)
        elif ctx is not None and isinstance(node, cst.Call) and _is_module_call(node, ctx):
            first = _torch_input(node, ctx)
            if first is None:
                return node
            node = first
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and node.func.value.value in ("self", "cls"):
            # `self.get_mapped_blocks(ids)`: the result of a method of the object, not the object's
            # own data; where it lives is that method's return to tell (`origin_of`)
            return node
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value not in ("cpu", "numpy") and node.func.attr.value not in PY_METHODS:
            # `x.numel()`, `x.size(0)`, `x.item()` are no longer `x`: Python values (a size is
            # host metadata of any tensor)
            node = node.func.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, (cst.Comparison,)):
            node = compared(node, ctx)
        elif isinstance(node, cst.UnaryOperation):
            node = node.expression
        else:
            return node


def compared(node: cst.Comparison, ctx: FunctionContext | None):
    """The operand a comparison's result lives with: its left one, unless that is a Python value
    (a number, or a name the walk holds one in) and one other operand is not (`src_size ==
    tgt_size[0]` with `src_size = int(...)`: `tgt_size`'s data, so a sync only where a caller
    passes a tensor on the device for it)."""
    if ctx is None or not _python_value(node.left, ctx):
        return node.left
    others = [c.comparator for c in node.comparisons if not _python_value(c.comparator, ctx)]
    return others[0] if len(others) == 1 else node.left


def _python_value(node: cst.BaseExpression, ctx: FunctionContext) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    return isinstance(node, cst.Name) and ctx.env.get(node.value) == P.PY


def is_cast(node) -> bool:
    """`cast(T, x)` / `typing.cast(T, x)`: `x` at runtime."""
    if not isinstance(node, cst.Call) or len(node.args) != 2 or any(a.keyword or a.star for a in node.args):
        return False
    func = node.func
    return (isinstance(func, cst.Name) and func.value == "cast") or \
        (isinstance(func, cst.Attribute) and func.attr.value == "cast" and isinstance(func.value, cst.Name)
         and func.value.value in ("typing", "t"))


def _given_back(node: cst.Call, ctx: FunctionContext) -> cst.BaseExpression | None:
    """The argument a library call gives back, as it is or by arithmetic that keeps its place
    (vocabulary.PASS_THROUGH: `triton.cdiv(x, n)` -> `x`), or None."""
    position = pass_through(ctx.resolve(node.func)) if _is_module_call(node, ctx) else None
    if position is None or len(node.args) <= position or any(a.keyword or a.star for a in node.args[:position + 1]):
        return None
    return node.args[position].value


def _is_module_call(node: cst.Call, ctx: FunctionContext) -> bool:
    """`torch.sum(x)`, `np.asarray(x)`: a function of an imported module, not a method of a value."""
    func = node.func
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func is not node.func and func.value in ctx.alias_table() \
        and func.value not in ctx.env and func.value not in ctx.params


def _torch_input(node: cst.Call, ctx: FunctionContext) -> cst.BaseExpression | None:
    """The input tensor of a torch operation (`torch.sum(ent)` -> `ent`); None for anything
    that makes new data or is no torch tensor op (factories, `from_numpy`, `device=`, numpy)."""
    qualified = ctx.resolve(node.func)
    if qualified is None or not qualified.startswith("torch.") or qualified.startswith(TORCH_NON_TENSOR):
        return None
    short = qualified.rsplit(".", 1)[-1]
    # `torch.cat(parts)`: the input is a sequence, and a caller passing a list (a Python value
    # to the whole-program pass) says nothing of where its items live
    if short in JOINING_FUNCTIONS or short in SEQUENCE_INPUTS:
        # `torch.cat([start >> s, end >> s])`: a literal list of tensors, which torch joins only
        # on one device, so the first is where the result is (a list passed in says nothing)
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        if short in JOINING_FUNCTIONS and isinstance(first, (cst.List, cst.Tuple)) and first.elements \
                and not isinstance(first.elements[0], cst.StarredElement):
            return first.elements[0].value
        return None
    if short in TORCH_FACTORIES or short in TORCH_HOST_FUNCTIONS or not node.args or node.args[0].keyword is not None \
            or node.args[0].star or any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
        return None
    return node.args[0].value
