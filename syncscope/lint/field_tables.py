"""The tree's field tables that a run judges the findings by, as one union over every file's
result: which attribute names only ever hold device tensors (`device_attributes`), what each
class keeps in its fields (`owner_fields.OwnerFields`) and which class fields are kept on the
host (`host_fields`). Every table is a union, so it does not matter in which order the results
come. With a head start (a run on a few staged files, head_start.py) the engine builds them
from the cached results of the rest of the project while the child still analyzes the staged
ones, and adds the staged files' results when they come (~0.07 s of a warm vLLM run were these
unions, after the child's answer); otherwise it builds them after the whole-program pass, which
then does not run beside them."""

from __future__ import annotations

from . import provenance as P
from .classinfo import VECTOR
from .owner_fields import OwnerFields
from .switch_devices import switch_field_hints


class FieldTables:
    def __init__(self) -> None:
        self.attr_places: dict[str, set] = {}  # attribute name -> where any file stores into it
        self.owner_tables: tuple[dict, dict, dict] = ({}, {}, {})  # OwnerFields' places, types, bases
        self.hinted_host: set[str] = set()  # "Class.attr" some file keeps on the host
        self.hinted_other: set[str] = set()  # ... and those some file keeps elsewhere

    @classmethod
    def of(cls, results: dict) -> FieldTables:
        tables = cls()
        for result in results.values():
            tables.add(result)
        return tables

    def add(self, result) -> None:
        for name, wheres in result.attr_places.items():
            self.attr_places.setdefault(name, set()).update(wheres)
        facts = getattr(result, "owner_fields", None) or {}
        for table, into in zip(("places", "types", "bases"), self.owner_tables):
            for key, values in facts.get(table, {}).items():
                into.setdefault(key, set()).update(values)
        self.add_field_hints(result)

    def add_field_hints(self, result) -> None:
        for key, where in (getattr(result, "field_hints", None) or {}).items():
            (self.hinted_host if P.known_host(where) else self.hinted_other).add(key)

    def device_attributes(self) -> tuple[set, set]:
        """Attribute names that the tree only ever gives device tensors (a torch factory with
        `device=`, `.to(device)`, `.cuda()`), in any file and on any object, and those of them
        whose tensors are all 1-D: a finding that holds only for a device value read from one of
        them (`RawFinding.needs_device`) is kept."""
        places = self.attr_places
        device = {name for name, wheres in places.items() if {w for w in wheres if isinstance(w, int)} == {P.DEVICE}}
        vector = {name for name in device if places[name] - {P.DEVICE} == {VECTOR}}
        return device, vector

    def owner_fields(self) -> OwnerFields:
        return OwnerFields(*self.owner_tables)

    def host_fields(self, results: dict) -> set[str]:
        """"Class.attr" that some file's class keeps on the host or as a Python value and no
        file's class keeps on the device (the engine drops a finding on such a read). `results`:
        the same results, for the fields on the host by default (switch_devices.py)."""
        return (set(switch_field_hints(results)) | self.hinted_host) - self.hinted_other


def condition_holds(condition, device_attrs: set, vector_attrs: set, owners: OwnerFields) -> bool:
    """Whether a finding's `device_condition` holds: by the attribute's name anywhere in the
    tree, or else by its owner's class (a field of that name in another class holds something
    else: owner_fields.py). None: no condition."""
    if condition is None:
        return True
    name, needs_vector, owner = condition
    return name in (vector_attrs if needs_vector else device_attrs) or owners.holds(name, needs_vector, owner)


class HeldConditions:
    """`condition_holds` over the whole tree's tables, built on the first question: the
    whole-program pass asks it of the few roots that carry a condition (Rule.ROOT_ON_CONDITION),
    before the engine builds its own tables."""

    def __init__(self, results: dict) -> None:
        self._results = results
        self._tables: tuple | None = None

    def __call__(self, condition) -> bool:
        if condition is None:
            return True
        if self._tables is None:
            tables = FieldTables.of(self._results)
            self._tables = (*tables.device_attributes(), tables.owner_fields())
        return condition_holds(condition, *self._tables)
