"""Where a field lives, by the class of the object that holds it.

field_tables.py's `device_attributes` decides by the attribute's name alone: a name the tree
only ever gives device tensors is a device tensor wherever it is read. One class with a field of
the same name that holds something else (SGLang's `MambaStateShape.temporal: tuple[int, int,
int]` next to the pool's `State.temporal`, a device tensor) makes every read of the name
unknown. When the walk can tell the class of the object a value is read from (`FieldRef.owner`:
`self` in a method, a name annotated with a class, then the fields' classes hop by hop), the run
decides with that class's fields instead:

* per file (`owner_facts`, `ast` only): "Class.attr" -> the places stored into it (`self.attr =
  torch.zeros(..., device=d)` in a method of the class, `Class(attr=local_made_on_the_device)`
  anywhere, `attr: tuple[int, int]` in the class body), "Class.attr" -> the classes of what it
  holds (`self.mamba_cache = self.State(...)`, `cache: State`), "Class" -> its bases;
* per run (`OwnerFields.holds`): follow the hops from the owner's class through the fields'
  classes, and keep the finding when every class reached (and every subclass of it that stores
  into the field itself) keeps the attribute only on the device.

Classes are keyed by their short names, as `field_hints` are: two classes of one name pool
their evidence, which can only make a field mixed (not reported), never device.
"""

from __future__ import annotations

import ast

from . import provenance as P
from .classinfo import VECTOR, _from_annotation, add_place, function_statements, local_places, module_statements, self_assignments

UNTYPED = "?"  # a field also given something that is no instance of a class of the tree
_NOT_CLASSES = frozenset("Tensor Optional Union List Dict Tuple Set Any Callable Type Sequence Mapping".split())
MAX_CLASSES = 16  # classes followed per hop: past that the owner is no evidence


def owner_facts(tree: ast.Module) -> dict:
    places: dict[str, set] = {}
    types: dict[str, set] = {}
    bases: dict[str, set] = {}
    for cls in (s for s in module_statements(tree) if isinstance(s, ast.ClassDef)):
        bases[cls.name] = {_short(b) for b in cls.bases if _short(b)}
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                key = f"{cls.name}.{item.target.id}"
                _add_type(types, key, item.annotation, item.value)
                # `temporal: tuple[int, int, int]`; `temporal: torch.Tensor` says no device
                if "Tensor" not in ast.unparse(item.annotation):
                    where = _from_annotation(item.annotation)
                    if where is not None:
                        places.setdefault(key, set()).add(where)
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _method(cls.name, item, places, types)
    for function in (s for s in module_statements(tree)
                     if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))):
        _constructor_keywords(function, places)
    return {"places": {k: frozenset(v) for k, v in places.items()},
            "types": {k: frozenset(v) for k, v in types.items()},
            "bases": {k: frozenset(v) for k, v in bases.items()}}


def _short(node) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _method(cls: str, function, places: dict, types: dict) -> None:
    """`self.attr = value` (or `self.attr: T = value`) in a method of `cls`, nested blocks and
    closures included: `self` is the object of `cls` (or of a subclass)."""
    local = local_places(function)
    first = function.args.posonlyargs + function.args.args
    if not first or first[0].arg != "self":
        return
    for attr, value, annotation in self_assignments(function):
        key = f"{cls}.{attr}"
        if annotation is not None:
            _add_type(types, key, annotation, value)
        elif value is not None:
            _add_type(types, key, None, value)
        found: set = set()
        if value is not None:
            add_place(found, value, local)
        if found:
            places.setdefault(key, set()).update(found)


def _add_type(types: dict, key: str, annotation, value) -> None:
    """The class a field holds: an annotation naming a class, or a call of a class
    (`self.State(...)`, `State(...)`: a capitalized name, Python's convention); `None` says
    nothing; anything else makes the field's class unknown."""
    if annotation is not None:
        node = annotation
        if isinstance(node, ast.Subscript) and _short(node.value) == "Optional":
            node = node.slice
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            node = node.left if not (isinstance(node.left, ast.Constant) and node.left.value is None) else node.right
        name = _short(node)
        types.setdefault(key, set()).add(name if name and name[:1].isupper() and name not in _NOT_CLASSES
                                         else UNTYPED)
        return
    if isinstance(value, ast.Constant) and value.value is None:
        return
    name = _short(value.func) if isinstance(value, ast.Call) else None
    types.setdefault(key, set()).add(name if name and name[:1].isupper() and name not in _NOT_CLASSES
                                     else UNTYPED)


def _constructor_keywords(function, places: dict) -> None:
    """`self.State(conv=conv_state, temporal=temporal_state)`: a keyword of a class's
    constructor fills the field of that name, with what the local was assigned here."""
    local = None
    for stmt in function_statements(function):
        for node in (getattr(stmt, "value", None),):
            if not isinstance(node, ast.Call) or not node.keywords:
                continue
            name = _short(node.func)
            if not name or not name[:1].isupper() or name in _NOT_CLASSES:
                continue
            if local is None:
                local = local_places(function)
            for keyword in node.keywords:
                if keyword.arg is not None:
                    key = f"{name}.{keyword.arg}"
                    found: set = set()
                    add_place(found, keyword.value, local)
                    if found:
                        places.setdefault(key, set()).update(found)


class OwnerFields:
    """The tree's fields per class (every file's `owner_facts`), asked once per conditional
    finding: is this attribute of that owner a device tensor?"""

    def __init__(self, places: dict[str, set], types: dict[str, set], bases: dict[str, set]) -> None:
        """The union of every file's `owner_facts` tables (field_tables.py builds it)."""
        self.places, self.types, self.bases = places, types, bases
        self.subclasses: dict[str, set] = {}
        for cls, parents in self.bases.items():
            for parent in parents:
                self.subclasses.setdefault(parent, set()).add(cls)

    def holds(self, name: str, needs_vector: bool, owner: tuple | None) -> bool:
        if not owner:
            return False
        classes = {owner[0]}
        for hop in owner[1:]:
            reached: set = set()
            for cls in classes:
                held = self._field(self.types, cls, hop)
                if not held or UNTYPED in held:
                    return False
                reached |= held
            if len(reached) > MAX_CLASSES:
                return False
            classes = reached
        for cls in classes:
            wheres = self._field(self.places, cls, name)
            if not wheres or {w for w in wheres if isinstance(w, int)} != {P.DEVICE}:
                return False
            if needs_vector and wheres - {P.DEVICE} != {VECTOR}:
                return False
        return True

    def _field(self, table: dict, cls: str, attr: str) -> set:
        """What `cls` keeps in `attr`: its own evidence or the nearest base's, together with
        what any subclass stores there itself (the object may be one of them)."""
        found: set = set()
        for klass in self._mro(cls):
            own = table.get(f"{klass}.{attr}")
            if own:
                found |= own
                break
        for sub in self._descendants(cls):
            found |= table.get(f"{sub}.{attr}", set())
        return found

    def _mro(self, cls: str) -> list[str]:
        order, pending = [], [cls]
        while pending and len(order) < 32:
            current = pending.pop(0)
            if current not in order:
                order.append(current)
                pending.extend(sorted(self.bases.get(current, ())))
        return order

    def _descendants(self, cls: str) -> set[str]:
        seen, pending = set(), [cls]
        while pending and len(seen) < 64:
            for sub in self.subclasses.get(pending.pop(), ()):
                if sub not in seen and sub != cls:
                    seen.add(sub)
                    pending.append(sub)
        return seen
