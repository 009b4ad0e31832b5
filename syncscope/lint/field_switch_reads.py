"""What field_switches.py reads of the per-file tables in the pass: the parts of a file's table
(FileFields.table), each file's flag_passes with the values that table adds, and the stores of a
family's classes from their files read again (the table keeps only the constructor's)."""

from __future__ import annotations


def sections(table: tuple) -> list:
    """FileFields.table's parts: [guards, inits, others, returns, kwargs, passes]."""
    if not table:
        return [()] * 6
    parts, at = [], 6
    for size in table[:6]:
        parts.append(table[at:at + size])
        at += size
    return parts


class PassesRead:
    """Each file's flag_passes with the values FileFields.call recorded added (a file's view
    built when it is first read): `.get(path)`, as flag_lines' table of files."""

    def __init__(self, results: dict) -> None:
        self.results, self.memo = results, {}

    def get(self, path: str, default=None) -> dict:
        found = self.memo.get(path)
        if found is None:
            result = self.results.get(path)
            found = dict(getattr(result, "flag_passes", None) or {})
            extra = sections(getattr(result, "field_switches", None) or ())[5]
            for at in range(0, len(extra), 4):
                line, column, key, kind = extra[at:at + 4]
                star, items, forwards = found.get((line, column), (False, {}, False))
                found[(line, column)] = (star, {**items, key: kind}, forwards)
            self.memo[path] = found
        return found


class FamilyStores:
    """Every `self.F` store of the classes of a family (FileFields.stores), from their files
    read again: asked only for a field every construction turns on."""

    def __init__(self, program, results: dict, stores_of) -> None:
        self.program, self.results, self.stores_of = program, results, stores_of
        self.paths: dict[str, list] | None = None
        self.read: dict[str, dict] = {}

    def __call__(self, cls: str) -> dict:
        if self.paths is None:
            self.paths = {}
            for path, result in self.results.items():
                for qualname in result.classes:
                    self.paths.setdefault(qualname, []).append(path)
        stores: dict[str, dict] = {}
        for path in sorted({p for k in self.program._family(cls) for p in self.paths.get(k, ())}):
            if path not in self.read:
                self.read[path] = self.stores_of(path)
            for k, fields in self.read[path].items():
                mine = stores.setdefault(k, {})
                for name, param in fields.items():
                    mine[name] = param if mine.get(name, param) == param else ""
        return stores
