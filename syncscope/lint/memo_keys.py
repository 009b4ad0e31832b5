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
