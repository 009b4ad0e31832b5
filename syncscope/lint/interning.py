"""One object for each equal string, number and frozen set across the files' results.

A worker's result reaches the run through a pipe, and a file's cached facts through their own
pickle: each arrives with its own copies of the names it mentions (module and class names,
qualified functions, parameters, line numbers above 256). On whole vLLM 0.33.0 the parent held
643,000 strings (50 MB) for 111,000 distinct values and 619,000 int objects (16.5 MB) for the
whole run. `Interner.result` rebuilds a result's containers around one shared object per value.
Values are equal before and after, and a container the result held twice (a fact kept in two
places) is still one object after, so nothing that reads or changes them can tell.

Plain tuples of names, whole numbers and None (and of such tuples) are shared the same way:
(`("f", "torch.cat")`, `(0, None)`, a line range): 1.8 million tuples on whole vLLM, many of
them equal. Only those: a tuple holding `1.0`, `True` or an `IntEnum` member is equal to one
holding `1`, so sharing them could hand a reader the other type. Tuples cannot change, so a
shared one cannot be told from a copy.
"""

from __future__ import annotations

from dataclasses import fields


class Interner:
    """Shared per run; one table per type, so `1`, `1.0` and `True` (equal, and equal hashes)
    never stand in for each other."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.ints: dict[int, int] = {}
        self.frozensets: dict[frozenset, frozenset] = {}
        self.tuples: dict[tuple, tuple] = {}  # only the shareable ones (module docstring)
        self.shared: set[int] = set()  # their ids: a tuple that holds a list cannot be looked up

    def result(self, result, names=None):
        """Intern the fields `names` (default: every field) of a RawResult in place; returns it."""
        done: dict[int, object] = {}  # id of a container of this result -> its rebuilt one
        for name in names if names is not None else [item.name for item in fields(result)]:
            value = getattr(result, name)
            if value is not None and type(value) is not bool:
                setattr(result, name, self.value(value, done))
        return result

    def value(self, value, done: dict):
        kind = type(value)
        if kind is str:
            return self.strings.setdefault(value, value)
        if kind is int:
            return value if -5 <= value <= 256 else self.ints.setdefault(value, value)  # CPython's own small ints
        if kind is float or kind is bool or value is None:
            return value
        found = done.get(id(value))
        if found is not None:
            return found
        if kind is tuple:
            items, shareable = self._items(value, done)
            new = tuple(items) if value else value
            if shareable:
                new = self.tuples.setdefault(new, new)
                self.shared.add(id(new))
        elif kind is dict:
            keys, _ = self._items(value, done)
            items, _ = self._items(value.values(), done)
            new = dict(zip(keys, items))
        elif kind is list:
            value[:] = self._items(value, done)[0]
            new = value
        elif kind is frozenset:
            new = self.frozensets.get(value)
            if new is None:
                new = self.frozensets[value] = frozenset(self._items(value, done)[0])
        elif isinstance(value, tuple):  # a NamedTuple record (records.py)
            new = tuple.__new__(kind, self._items(value, done)[0])
        elif kind is set:
            new = set(self._items(value, done)[0])
        else:
            return value  # enum members and other objects: shared already
        done[id(value)] = new  # the old container stays alive in `value`'s owner until replaced
        return new

    def _items(self, values, done: dict) -> tuple[list, bool]:
        """[self.value(item) for item in values], and whether a tuple of them may be shared (all
        plain names, whole numbers, None or shared tuples). The common items (names, numbers,
        None) are handled here rather than by a call each: there are millions of them."""
        strings, ints, shared = self.strings, self.ints, self.shared
        out = []
        shareable = True
        for item in values:
            kind = type(item)
            if kind is str:
                item = strings.setdefault(item, item)
            elif kind is int:  # exactly: `bool` and `IntEnum` members are ints too, and not shared
                if not -5 <= item <= 256:
                    item = ints.setdefault(item, item)
            elif item is not None:
                item = self.value(item, done)
                if shareable and id(item) not in shared:
                    shareable = False
            out.append(item)
        return out, shareable
