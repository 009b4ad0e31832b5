"""Values built once and kept on a long-lived object: lines that fill a memo on `self`.

A per-step method often builds something on first use and keeps it:

    def _get_context(self):
        context = self.context
        if context is not None:            # every later call returns here
            return context
        context = Context.create(...)       # runs once per object
        self.context = context
        return context

    if not hasattr(self, "_ptrs"): self._ptrs = torch.tensor([...], device=...)
    if not hasattr(self, "freqs"): self.register_buffer("freqs", build(...))   # a setter stores it
    if self._addresses != pointers: ...; self._addresses = pointers   # pointers: data_ptr()s of its buffers
    meta = self._meta.get(key); if meta is None: ...; self._meta[key] = meta  # the same kind of key
    plan = self.plans.get(key); if plan is None: ...; self.plans[key] = plan  # any key but an identity
    if self.step_index is None: self._init_step_index(t)   # the method named for the field fills it
    if self.step_index is None: self._step_index = find(t)  # a property `step_index` reads `_step_index`
    if bs not in self.meta: self._build(bs, ...)   # `_build` stores `self.meta[bs]` (callee_fills.py)

    @cached_property
    def precomputed_freqs_cis(self): ...                     # the whole body, on first read

What such a fill does runs once per object; the `_addresses` and `_meta` forms once per key, a
key built only of the addresses and layouts of the object's own buffers (memo_keys.py
`of_addresses`). `if self.x is None or bs != self.bs:` is not one: what forces the rebuild may
change every step.
Whether that is once or every step depends on how long the object lives: the analyzer keeps a
lazy field of a per-step object (vLLM's `CommonAttentionMetadata.seq_lens_cpu`) as a sync for
its callers. Here the fill is cold only in a class that serves steps itself: it (or an in-tree
base) defines a per-step root method (`forward`, `build`, `step`, ...: library facts `[roots]
hot`), or it is known to be an `nn.Module` (a submodule with helper methods only), so its objects
are built at start-up (a module, a metadata builder, a scheduler) and live across steps. Read from each file's `ast` (`file_memos`), decided over the whole tree
(`memo_lines`). Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import fnmatch
import re

from .ast_annotations import dotted
from .lines import last_line
from .memo_funcs import MEMOIZED, module_aliases, value_memo
from .memo_keys import changed_field, dict_entry, grown_field, kept_while, looked_up
from .memo_owners import BuiltOnce
from .memo_params import PARAM, module_params, param_memo
from .memo_carriers import CARRIED, carried_lines, carried_memo
from .modules import ModuleKinds
from .callee_fills import FILLED_KEY, called_method, mark_called
from .root_fills import FILLED, fallback_why, mark_filled, own_stores
from .nodewalk import every_node


def _self_field(node) -> str | None:
    """`self.x` -> "x"; `getattr(self, "x", None)` -> "x"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return node.args[1].value
    return None


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _missing(test, local: dict) -> str | None:
    """The field a test finds missing: `self.x is None`, `v is None` (`v = self.x` before),
    `not hasattr(self, "x")`, `key not in self._cache`; of `key not in self._a or key not in
    self._b` (two memos filled together), the first: each part only says a memo is missing, so
    the body runs once per key as well (a part that tests something else, `bs != self.bs`, may
    hold every step: no memo)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        fields = [_missing(part, local) for part in test.values]
        return fields[0] if all(fields) else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = test.operand
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "hasattr" \
                and len(inner.args) == 2 and isinstance(inner.args[0], ast.Name) and inner.args[0].id == "self" \
                and isinstance(inner.args[1], ast.Constant) and isinstance(inner.args[1].value, str):
            return inner.args[1].value
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.Is) and _is_none(right):
        if isinstance(test.left, ast.Name):
            return local.get(test.left.id)
        return _self_field(test.left)
    if isinstance(op, ast.NotIn):
        return _self_field(right)
    return None


def _tested_key(test) -> str | None | bool:
    """What a missing-memo test looks up, for callee_fills.py: the key's name (`bs not in
    self.F`), None for a test of None or `hasattr`, False for any other (`(a, b) not in self.F`,
    an `or` of tests)."""
    if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.NotIn):
        return test.left.id if isinstance(test.left, ast.Name) else False
    return False if isinstance(test, ast.BoolOp) else None


def _present(test, local: dict) -> str | None:
    """The field a test finds already built: `v is not None [and v[0] == key]` (`v = self.x`
    before), `self.x is not None`."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    first = parts[0]
    if not (isinstance(first, ast.Compare) and len(first.ops) == 1 and isinstance(first.ops[0], ast.IsNot)
            and _is_none(first.comparators[0])):
        return None
    field = local.get(first.left.id) if isinstance(first.left, ast.Name) else _self_field(first.left)
    # a key checked too must name an object, not a size: `cached[0] == id(pool)` (a pool lives
    # as long as the memo's owner), not `cached[0] == bs` (rebuilt whenever the batch changes);
    # or keep what is there while it is big enough, or on the same device (memo_keys.py)
    if field is None or not all(_identity_key(part) or kept_while(part, field, local) for part in parts[1:]):
        return None
    return field


def _identity_key(test) -> bool:
    """`cached[0] == id(pool)`, `key == x.data_ptr()`: a comparison with an object's identity."""
    if not isinstance(test, ast.Compare):
        return False
    for node in [test.left, *test.comparators]:
        if isinstance(node, ast.Call) and ((isinstance(node.func, ast.Name) and node.func.id == "id")
                                           or (isinstance(node.func, ast.Attribute) and node.func.attr == "data_ptr")):
            return True
    return False


def _fills(body, name: str, setters: frozenset = frozenset(), key: str | None | bool = False) -> str | bool:
    """The block stores `self.<name>` (or `self.<name>[key]`, `setattr(self, "<name>", v)`,
    `self.register_buffer("<name>", v)`: a setter of library facts `[fields] setters`): True;
    or calls a method of `self` named for the field (`self._init_step_index(...)` fills
    `self.step_index`): that method's name (memo_lines drops it when the method runs every step
    anyway); else, for a test of a missing `key` (a name) or of None (`key` None), the first call
    of a method of `self` it could hand the fill to (callee_fills.py reads what that stores)."""
    called = None
    for node in every_node(ast.Module(body=list(body), type_ignores=[])):
        if _set_by_name(node, setters) == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    target = target.value
                if _self_field(target) == name:
                    return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" \
                and _named_for(node.func.attr, name):
            return node.func.attr
        elif called is None and key is not False:
            called = called_method(node, key)
    return called or False


def _set_by_name(node, setters: frozenset) -> str | None:
    """`setattr(self, "a", v)`, `self.register_buffer("a", v)`: "a"."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func, args = node.func, node.args
    if isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 \
            and isinstance(args[0], ast.Name) and args[0].id == "self":
        args = args[1:]
    elif not (isinstance(func, ast.Attribute) and func.attr in setters and isinstance(func.value, ast.Name)
              and func.value.id == "self" and len(args) >= 2):
        return None
    return args[0].value if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str) else None


_MEMOIZED_WHY = "runs once per key: `{}` is memoized and every parameter is declared a Python value"
GROWN = "<grown>"  # in place of the filling method: the block grows the field (memo_keys.grown_field)
TWIN = "<twin>"  # the block stores `self._x` for a test of `self.x`, a property of the class (memo_lines)
KEYED = "<keyed>"  # the block rebuilds the field when a key of addresses changes (memo_keys.changed_field)
PER_KEY = "<per-key>"  # the block fills one entry of a dict on `self` for a new key (memo_keys.dict_entry)
_BUILD_WORDS = frozenset(("init", "build", "create", "compute", "make", "setup", "prepare"))


def _named_for(method: str, field: str) -> bool:
    """`_init_step_index` builds `step_index`: a building verb and every word of the field."""
    method_words = [w for w in method.lower().split("_") if w]
    field_words = [w for w in field.lower().split("_") if w]
    return bool(field_words) and bool(_BUILD_WORDS & set(method_words)) and \
        all(w in method_words for w in field_words)


def _entry_kind(left, local: dict) -> str | None:
    """KEYED or PER_KEY when the tested local holds a dict's entry looked up so, else None."""
    if not isinstance(left, ast.Name):
        return None
    return KEYED if (KEYED, left.id) in local else PER_KEY if (PER_KEY, left.id) in local else None


def _block(body, local: dict, out: list, setters: frozenset) -> None:
    local = dict(local)  # `v = self.x` seen so far in this block
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            # `v = self._meta.get(key)` with a key of addresses: `v` is that memo's entry
            field = _self_field(stmt.value)
            keyed = looked_up(stmt.value, body[:index]) if field is None else None
            # `plan = self.plans.get(key)` with any other key but an identity: one entry per key
            per_key = dict_entry(stmt.value, body[:index]) if field is None and keyed is None else None
            name = stmt.targets[0].id
            if field is not None or keyed is not None or per_key is not None:
                local[name] = field or keyed or per_key
            else:
                local.pop(name, None)
            for marker, on in ((KEYED, keyed is not None), (PER_KEY, per_key is not None)):
                if on:
                    local[(marker, name)] = True
                else:
                    local.pop((marker, name), None)
        if isinstance(stmt, ast.If):
            # not `if self.x is None or bs != self.bs:`: what forces a rebuild may change every step
            missing = _missing(stmt.test, local)
            how = _fills(stmt.body, missing, setters, _tested_key(stmt.test)) if missing else False
            if not how and missing and not missing.startswith("_") and _fills(stmt.body, f"_{missing}") is True:
                how = TWIN  # `if self.step_index is None: self._step_index = ...` (memo_lines: a property)
            if how:
                # `if self.x is None: self.x = build()`: the body fills the memo (once per key
                # where `v = self._meta.get(key)` looked it up by a key of addresses)
                if how is True:
                    left = stmt.test.left if isinstance(stmt.test, ast.Compare) else None
                    how = _entry_kind(left, local)
                out.append((stmt.body[0].lineno, last_line(stmt.body[-1]), missing, how))
                _block(stmt.orelse, local, out, setters)
                continue
            changed = changed_field(stmt.test, body[:index])
            if changed is not None and _fills(stmt.body, changed, setters) is True:
                # `if self._addresses != pointers: ...; self._addresses = pointers`: once per new key
                out.append((stmt.body[0].lineno, last_line(stmt.body[-1]), changed, KEYED))
                _block(stmt.orelse, local, out, setters)
                continue
            grown = grown_field(stmt.test, local)
            if grown is not None and _fills(stmt.body, grown) is True:
                # `if n > self.max_n: self.max_n = n; rebuild`: once per new largest size
                out.append((stmt.body[0].lineno, last_line(stmt.body[-1]), grown, GROWN))
                _block(stmt.orelse, local, out, setters)
                continue
            present = _present(stmt.test, local)
            rest = body[index + 1:]
            how = _fills(rest, present, setters) if present and rest and stmt.body and isinstance(stmt.body[-1], ast.Return) \
                else False
            if how:
                # `if v is not None: return v` then build and store: the rest of the block fills it
                first = stmt.test.values[0] if isinstance(stmt.test, ast.BoolOp) else stmt.test
                out.append((rest[0].lineno, last_line(rest[-1]), present, how if isinstance(how, str) else
                            _entry_kind(first.left, local)))
                return
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) \
                    and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                _block(inner, local, out, setters)
        for handler in getattr(stmt, "handlers", ()):
            _block(handler.body, local, out, setters)


def file_memos(tree: ast.Module, module: str, setters: frozenset = frozenset(), aliases: dict | None = None,
               module_types: tuple = ()) -> dict[str, list]:
    """{method: [(start, end, field, method that fills it or None)]}: the lines of each method
    that fill a memo on `self`; `setters`: methods that store the field their first argument
    names (library facts `[fields] setters`). Also, in any function, the lines that fill a field
    of a parameter declared as a module (`module_types`, names resolved through `aliases`:
    memo_params.py), marked PARAM."""
    found: dict[str, list] = {}
    type_aliases: list = []  # the module's type aliases, read on the first memoized function

    def walk(body, prefix: str, in_class: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{prefix}{stmt.name}.", True)
                named = f"{module}.{prefix}{stmt.name}." if module else f"{prefix}{stmt.name}."
                mark_filled(stmt, named, found)
                mark_called(stmt, named, found, own_stores)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out: list = []
                held = param_memo(stmt, module_params(stmt, aliases or {}, module_types))
                if held is not None:
                    out.append(held)
                carried = carried_memo(stmt, aliases or {}, module)
                if carried is not None:
                    out.append(carried)
                if stmt.decorator_list:
                    if not type_aliases:
                        type_aliases.append(module_aliases(tree))
                    keyed = value_memo(stmt, type_aliases[0])
                    if keyed is not None:
                        out.append(keyed)
                if not in_class:
                    if out:
                        local = f"{prefix}{stmt.name}"
                        found[f"{module}.{local}" if module else local] = out
                    continue
                if any((dotted(d) or "").rsplit(".", 1)[-1] == "cached_property" for d in stmt.decorator_list):
                    # `@cached_property`: the body fills the instance's `__dict__` on first read
                    out.append((stmt.body[0].lineno, last_line(stmt.body[-1]), stmt.name, None))
                _block(stmt.body, {}, out, setters)
                if out:
                    local = f"{prefix}{stmt.name}"
                    found[f"{module}.{local}" if module else local] = out

    walk(tree.body, "", False)
    return found


def memo_lines(program, results: dict, library, cold_name=None, given: frozenset = frozenset(),
               texts=None) -> dict[str, list]:
    """{path: [(start, end, why)]}: the memo fills of classes that serve steps (see above), or
    whose objects the tree builds only in code that runs once (memo_owners.py; `cold_name`:
    the names of such code, config.cold_function; `given`: (function, parameter) every call
    passes, callguards.guarded_lines); a dict a context parameter carries for a long-lived
    owner (memo_carriers.py; `texts`: the linted files' texts, text_scans.TextScans)."""
    memos: dict[str, list] = {}
    for result in results.values():
        memos.update(getattr(result, "memos", None) or {})
    if not memos or not library.hot_roots:
        return {}
    roots = re.compile("|".join(fnmatch.translate(p) for p in library.hot_roots))
    module_method = re.compile("|".join(fnmatch.translate(p) for p in library.module_methods)) \
        if library.module_methods else None
    kinds = ModuleKinds(program, results, library)
    # classes that define a per-step root method themselves: `build`, `step`, ...; a module
    # method (`forward`, `_forward_*`) only where the class is known to be a module (an
    # unfollowed base such as `nn.Module`): SGLang's per-step `ForwardBatch` has a helper
    # `_forward_num_tokens`
    serving: set[str] = set()
    for qualname in program.functions:
        owner, _, short = qualname.rpartition(".")
        if owner not in program.classes or not roots.match(short):
            continue
        if module_method is None or not module_method.match(short) or kinds.known_module(owner):
            serving.add(owner)
    bases: dict[str, tuple] = {}
    for result in results.values():
        bases.update(getattr(result, "bases", None) or {})

    subclasses: dict[str, list[str]] = {}
    for cls, items in bases.items():
        for base in items or ():
            inner = program.chase(base, True) if base else None
            if inner and inner != cls:
                subclasses.setdefault(inner, []).append(cls)

    def up(cls: str, depth: int = 0) -> str | None:
        """The class or an in-tree base that has a per-step method; or the class itself when it
        is known to be an `nn.Module` (vLLM's `Rope2DPosEmb`, a submodule with no `forward`:
        modules are built with the model and live across steps)."""
        if cls in serving or (depth == 0 and kinds.known_module(cls)):
            return cls
        for base in bases.get(cls) or () if depth < 16 else ():
            inner = program.chase(base, True) if base else None
            if inner and inner != cls:
                found = up(inner, depth + 1)
                if found:
                    return found
        return None

    def has_property(cls: str, name: str, depth: int = 0) -> bool:
        """`cls` or an in-tree base defines a property `name` (`step_index`, which returns
        `self._step_index`)."""
        if (program.functions.get(f"{cls}.{name}") or {}).get("property"):
            return True
        for base in bases.get(cls) or () if depth < 16 else ():
            inner = program.chase(base, True) if base else None
            if inner and inner != cls and has_property(inner, name, depth + 1):
                return True
        return False

    def serves(cls: str) -> str | None:
        """`up`, or for a mixin (`class DSparkDraftMixin:` whose methods a model class inherits)
        every in-tree subclass serves steps: its objects are those subclasses'."""
        found = up(cls)
        if found is None and subclasses.get(cls):
            below = [serves(sub) if sub != cls else None for sub in subclasses[cls]]
            if all(below):
                found = below[0]
        return found

    built = BuiltOnce(program, results, bases, subclasses, cold_name, given)
    found: dict[str, list] = {}
    carried: dict[tuple, str | None] = {}  # (class, field) -> owners: one text scan per class
    for qualname, items in memos.items():
        owner = qualname.rpartition(".")[0]
        if qualname not in program.functions:
            continue
        for start, end, field, method in items:
            if method == PARAM:
                # the module a function is handed lives across steps (memo_params.py)
                found.setdefault(program.path_of[qualname], []).append(
                    (start, end, f"runs once per module: fills `{field}` on first use, and "
                                 f"`{field.split('.')[0]}` is declared an nn.Module, built with the model, "
                                 f"so it lives across steps"))
            elif method == MEMOIZED and owner not in program.classes:
                # a module function memoized on Python values (memo_funcs.py)
                found.setdefault(program.path_of[qualname], []).append((start, end, _MEMOIZED_WHY.format(field)))
            elif isinstance(method, str) and method.startswith(CARRIED):
                # a dict every construction of the parameter's class takes from a long-lived owner
                cls_name, _, entry = method[len(CARRIED):].partition("|")
                if (cls_name, entry) not in carried:
                    carried[(cls_name, entry)] = carried_lines(program, results, texts, serves, cls_name, entry)
                owners = carried[(cls_name, entry)]
                if owners is not None:
                    found.setdefault(program.path_of[qualname], []).append(
                        (start, end, f"runs once per key: fills an entry of `{field}`, the dict every "
                                     f"`{cls_name.rpartition('.')[2]}` is built with from `{owners}`, "
                                     f"which lives across steps"))
        items = [item for item in items if item[3] != PARAM and not str(item[3]).startswith(CARRIED)
                 and (item[3] != MEMOIZED or owner in program.classes)]
        if not items or owner not in program.classes:
            continue
        server = serves(owner)
        once = built.why(owner, serves) if server is None else None
        if server is None and once is None:
            continue  # an object of unknown lifetime (may be built every step): its fill stays
        short = owner.rsplit(".", 1)[-1]
        lives = once if once is not None else \
            f"serves steps (`{server.rsplit('.', 1)[-1]}` has a per-step method)" if server in serving \
            else "is an nn.Module"
        across = ", so its objects live across steps" if once is not None else ", so it lives across them"
        for start, end, field, method in items:
            if isinstance(method, str) and method.startswith(FILLED_KEY):
                if roots.match(method[len(FILLED_KEY):]):
                    continue  # a per-step root stores the entry: it runs every step anyway
                method = PER_KEY  # the called method stores the entry the test misses (callee_fills.py)
            if isinstance(method, str) and method.startswith(FILLED):
                why = fallback_why(method, field, roots)  # a lazy call of a per-step root (root_fills.py)
                if why is not None:
                    found.setdefault(program.path_of[qualname], []).append((start, end, why))
                    continue
                method = method[len(FILLED):]
            if method == TWIN and not has_property(owner, field):
                continue  # `self.x` is no property that reads `self._x`: a different field
            if method == MEMOIZED:
                found.setdefault(program.path_of[qualname], []).append(
                    (start, end, f"{_MEMOIZED_WHY.format(field)}, and `{short}` {lives}{across}"))
                continue
            if method == GROWN:
                how = f"runs once per new largest size: grows `self.{field}` past its cached size"
            elif method == KEYED:
                how = f"runs once per key: rebuilds `self.{field}` when the addresses of its own buffers change"
            elif method == PER_KEY:
                how = f"runs once per key: fills the entry of `self.{field}` that a new key misses"
            elif method == TWIN:
                how = f"runs once per object: fills `self._{field}`, which the property `{field}` reads, on first use"
            elif method is not None and roots.match(method):
                continue  # a per-step root that does not store the field itself: per step anyway
            else:
                how = f"runs once per object: fills `self.{field}` on first use"
            found.setdefault(program.path_of[qualname], []).append(
                (start, end, f"{how}, and `{short}` {lives}{across}"))
    return found
