"""Runs the pure-Python forms of tests/line_forms.py on a stand-in tensor whose syncing methods
note where they were called from, twice over: the interpreter's own `f_lineno` of the calling
frame, and the line syncscope's helper (syncscope/runtime/user_frames.py) gives it. Standard
library only, so any Python 3.11+ can run it: `python tests/line_forms_probe.py` prints JSON
{form: {"raw": [[line, function], ...], "helper": [[line, function], ...], "expected": [line, ...]}}.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))  # the checkout's syncscope, then tests.*

from syncscope.runtime import user_frames  # noqa: E402
from tests import line_forms  # noqa: E402

_ME = os.path.abspath(__file__)
_SEEN: list[tuple[tuple[int, str], tuple[int, str]]] = []


def _note() -> None:
    caller = sys._getframe(2)  # the frame that made the implicit or explicit call
    raw = (caller.f_lineno, getattr(caller.f_code, "co_qualname", caller.f_code.co_name))
    stack = user_frames.user_stack(sys._getframe(1), lambda f: os.path.abspath(f) == _ME, lambda f: f)
    _SEEN.append((raw, (stack[0].line, stack[0].function)))


class FakeTensor:
    """Enough of a 0-d / 1-d tensor for the forms: every value read notes its caller."""

    def __init__(self, value: float = 1.0, length: int = 0):
        self.value, self.length = value, length

    def item(self):
        _note()
        return self.value

    def __bool__(self):
        _note()
        return bool(self.value)

    def __int__(self):
        _note()
        return int(self.value)

    def __float__(self):
        _note()
        return float(self.value)

    def __index__(self):
        _note()
        return int(self.value)

    def __format__(self, spec):
        _note()
        return format(self.value, spec)

    def sum(self):
        return FakeTensor(self.value * max(self.length, 1))

    def __gt__(self, other):
        return FakeTensor(float(self.value > other))

    def all(self):
        return self

    def __lt__(self, other):
        return FakeTensor(float(self.value < other))

    def __iter__(self):  # like iterating a device tensor: views, no read
        return iter([FakeTensor(self.value) for _ in range(self.length)])


class Tensors:
    def __init__(self):
        self.x, self.y = FakeTensor(2.0), FakeTensor(3.0)
        self.i = FakeTensor(2)
        self.ok = FakeTensor(True)
        self.v = FakeTensor(1.0, length=2)


def probe() -> dict:
    out = {}
    for form in line_forms.FORMS:
        if form.__name__ in line_forms.TORCH_ONLY:
            continue
        _SEEN.clear()
        form(Tensors())
        out[form.__name__] = {
            "raw": sorted({raw for raw, _ in _SEEN}),
            "helper": sorted({helper for _, helper in _SEEN}),
            "expected": sorted(line for line, _ in line_forms.expected(form)),
        }
    return out


if __name__ == "__main__":
    json.dump({"python": list(sys.version_info[:2]), "forms": probe()}, sys.stdout)
