"""What makes a memo on `self` rebuild: tests that keep what is cached, or grow it, for memo.py.

A long-lived object's cache is rebuilt when its key changes. memo.py already takes a key that is
an object's identity (`cached[0] == id(pool)`). Two more keys change at most a few times in a
server's life, never back and forth with each step's shape:

* **big enough**: `if self.pe is not None and self.pe.size(1) >= x.size(1): return` then rebuild
  for `x.size(1)` (vLLM phi4mm's positional table): every rebuild is larger than the last, so it
  runs once per new largest size; and the same growth as its own test, `if max_t >
  self.max_temporal_size: self.max_temporal_size = max_t; rebuild` (MiniCPM-V's resampler in
  vLLM and SGLang), also with an `or` over the parts of the size (`max_h > self.max_size[0] or
  max_w > self.max_size[1]`);
* **the same device**: `if cache is not None and cache.device == device: return cache` (SGLang's
  QSA indexer keeps its rope axis map on the device it serves on).

Not a key: equality with a size (`cached[0] == bs`, `self.bs != bs`), which flips whenever the
batch does; a test whose smaller side is not the cached field itself.
"""

from __future__ import annotations

import ast

from .cache_lookups import by_identity
from .nodewalk import every_node


def _field_of(node, local: dict) -> str | None:
    """The memo field an expression reads, down its attributes, subscripts and calls:
    `self.pe.size(1)`, `cached.shape[0]`, `self.max_size[0]` (`cached = self.x` before)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        inner = node.func if isinstance(node, ast.Call) else node.value
        if isinstance(node, ast.Attribute) and isinstance(inner, ast.Name) and inner.id == "self":
            return node.attr
        node = inner
    if isinstance(node, ast.Name):
        return local.get(node.id)
    return None


def _larger_side(test) -> tuple | None:
    """(larger, smaller) of a one-operator `>`/`>=`/`<`/`<=` comparison."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        return test.left, right
    if isinstance(op, (ast.Lt, ast.LtE)):
        return right, test.left
    return None


def kept_while(test, field: str, local: dict) -> bool:
    """A test, after `v is not None and`, that keeps the cached `field` while it is big enough
    (its size on the larger side) or on the same device (`v.device == device`)."""
    sides = _larger_side(test)
    if sides is not None:
        return _field_of(sides[0], local) == field and _field_of(sides[1], local) is None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        for mine, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            if isinstance(mine, ast.Attribute) and mine.attr == "device" and _field_of(mine, local) == field \
                    and _field_of(other, local) is None:
                return True
    return False


def grown_field(test, local: dict) -> str | None:
    """The field a test finds too small: `n > self.cap`, `self.cap < n`, or an `or` of such tests
    on the same field (`h > self.max_size[0] or w > self.max_size[1]`)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    found = set()
    for part in parts:
        sides = _larger_side(part)
        if sides is None or _field_of(sides[0], local) is not None:
            return None
        field = _field_of(sides[1], local)
        if field is None:
            return None
        found.add(field)
    return found.pop() if len(found) == 1 else None


# A key of addresses: `if self._addresses != pointers: ...; self._addresses = pointers` with
# `pointers = tuple(c.data_ptr() for c in caches)` and `caches = [a.kv_cache for a in
# self.attns]`; `meta = self._meta.get(key)` with such a key. The key changes only when one of
# the object's own buffers is reallocated: the rebuild runs once, or on that rare change. Not a
# key of addresses: one that holds any value besides identities (`id(x)`, `x.data_ptr()`) and
# layouts (`x.shape`, `x.stride()`, `x.dtype`, `x.device`), such as a batch's lengths; one whose
# identities are of objects not read from `self` (a step's input tensor is new every step).
_LAYOUT_FIELDS = frozenset(("shape", "dtype", "device"))
_LAYOUT_CALLS = frozenset(("stride", "size"))
_DEPTH = 8


def _assigned(name: str, before: list):
    """The value of the last `name = value` among the statements before."""
    for stmt in reversed(before):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target = stmt.target
        else:
            continue
        if isinstance(target, ast.Name) and target.id == name:
            return stmt.value
    return None


def _bind(node, before: list, bound: dict) -> dict:
    """The names a comprehension binds, each to the iterable it walks (`for a, b in zip(x, y)`:
    both to the zip)."""
    bound = dict(bound)
    for generator in node.generators:
        for name in every_node(generator.target):
            if isinstance(name, ast.Name):
                bound[name.id] = (generator.iter, dict(bound))
    return bound


def _on_self(node, before: list, bound: dict, depth: int = 0) -> bool:
    """The object (or every item of the collection) is read from a field of `self`:
    `self.layers[0].attn`, a local assigned such, an item of a comprehension over such."""
    if depth > _DEPTH:
        return False
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) \
                and not all(isinstance(b, ast.Constant) or b is None
                            for b in (node.slice.lower, node.slice.upper, node.slice.step)):
            return False  # `self.buf[:n]`: a view whose size may change with each step
        node = node.value
    if isinstance(node, ast.Name):
        if node.id == "self":
            return True
        if node.id in bound:
            source, outer = bound[node.id]
            return _on_self(source, before, outer, depth + 1)
        value = _assigned(node.id, before)
        return value is not None and _on_self(value, before, {}, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_on_self(item, before, bound, depth + 1) for item in node.elts)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _on_self(node.elt, before, _bind(node, before, bound), depth + 1)
    if isinstance(node, ast.IfExp):
        return _on_self(node.body, before, bound, depth + 1) and _on_self(node.orelse, before, bound, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("zip", "tuple", "list") \
            and node.args and not node.keywords:
        return all(_on_self(arg, before, bound, depth + 1) for arg in node.args)
    return False


def _addresses(node, before: list, bound: dict, depth: int = 0) -> int | None:
    """How many identities a key of addresses holds (None: it holds something else)."""
    if depth > _DEPTH:
        return None
    if isinstance(node, ast.Constant):
        return 0
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "id" and len(node.args) == 1:
            return 1 if _on_self(node.args[0], before, bound) else None
        if isinstance(func, ast.Attribute) and func.attr == "data_ptr" and not node.args:
            return 1 if _on_self(func.value, before, bound) else None
        if isinstance(func, ast.Attribute) and func.attr in _LAYOUT_CALLS:
            return 0 if _on_self(func.value, before, bound) else None
        if isinstance(func, ast.Name) and func.id in ("tuple", "list") and len(node.args) == 1:
            return _addresses(node.args[0], before, bound, depth + 1)
        return None
    if isinstance(node, ast.Attribute) and node.attr in _LAYOUT_FIELDS:
        return 0 if _on_self(node.value, before, bound) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Constant, ast.Slice)):
        return _addresses(node.value, before, bound, depth + 1)
    if isinstance(node, ast.Name) and node.id not in bound:
        value = _assigned(node.id, before)
        return None if value is None else _addresses(value, before, {}, depth + 1)
    parts = None
    if isinstance(node, (ast.Tuple, ast.List)):
        parts = [(item, bound) for item in node.elts]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [(node.left, bound), (node.right, bound)]
    elif isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        parts = [(node.elt, _bind(node, before, bound))]
    elif isinstance(node, ast.IfExp):
        parts = [(node.body, bound), (node.orelse, bound)]
    if parts is None:
        return None
    counts = [_addresses(part, before, inner, depth + 1) for part, inner in parts]
    return None if None in counts else sum(counts)


def of_addresses(key, before: list) -> bool:
    """A key built only of the identities and layouts of objects read from `self`, with at least
    one identity (see above)."""
    return bool(_addresses(key, before, {}))


def changed_field(test, before: list) -> str | None:
    """The field a test finds stale: `self.k != key` or `self.k is not key` (either side) where
    the key is one of addresses."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.NotEq, ast.IsNot))):
        return None
    for mine, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if isinstance(mine, ast.Attribute) and isinstance(mine.value, ast.Name) and mine.value.id == "self" \
                and of_addresses(other, before):
            return mine.attr
    return None


def looked_up(value, before: list) -> str | None:
    """`self.c.get(key)` (or `.get(key, None)`) with a key of addresses: "c"."""
    found = _self_get(value)
    return found[0] if found is not None and of_addresses(found[1], before) else None


def dict_entry(value, before: list) -> str | None:
    """`self.c.get(key)` (or `.get(key, None)`) with a key that reads no object's identity
    (`id(t)`, `t.data_ptr()`: new with each new tensor): "c". The dict keeps one entry per key
    (a shape, a configuration), so its miss runs once per new key, as a module-level dict's
    (branches.cache_fill); `key not in self.c` (memo._missing) is the same fill."""
    found = _self_get(value)
    return found[0] if found is not None and not by_identity(found[1], before) else None


def _self_get(value) -> tuple[str, ast.AST] | None:
    """("c", key) of `self.c.get(key)` or `self.c.get(key, None)`."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get" \
            and 1 <= len(value.args) <= 2 and not value.keywords:
        owner = value.func.value
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self" \
                and (len(value.args) == 1 or (isinstance(value.args[1], ast.Constant) and value.args[1].value is None)):
            return owner.attr, value.args[0]
    return None
