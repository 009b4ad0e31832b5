"""Keep `torch.Tensor` out of Python's sequence protocol while its `__getitem__` is shimmed.

`torch.Tensor` indexes through the C mapping slot only; `PySequence_Check(tensor)` is false. Giving
the class a Python `__getitem__` (the CUDA detector's indexing shim) makes CPython fill the
sequence slot `sq_item` too, and from then on C code that walks nested sequences treats every
tensor as one: `torch.tensor([t0, t1])` of 0-d tensors asked each for its `len()` and raised
"len() of a 0-d tensor" under `syncscope run --device cuda` where plain python returns a tensor
(seen on the H100). No Python API can clear one slot, so this sets `sq_item` back to NULL through
ctypes, and only where it can check the effect: the tensor must be a non-sequence before the
shim, a sequence with it, and a non-sequence again after the reset; otherwise it leaves the slot
alone and says so (the report's `errors`). Taking the shim out (`delattr`) recomputes the slots
from the base classes, which restores torch's own state by itself.
"""

from __future__ import annotations

import ctypes
import sys

# Offsets in CPython's (non-debug) PyTypeObject and PySequenceMethods, the same in 3.9 to 3.13:
# tp_as_sequence is the 14th pointer-sized field, sq_item the 4th slot of its struct.
_TP_AS_SEQUENCE = 13 * ctypes.sizeof(ctypes.c_void_p)
_SQ_ITEM = 3 * ctypes.sizeof(ctypes.c_void_p)

_is_sequence = ctypes.pythonapi.PySequence_Check
_is_sequence.argtypes = [ctypes.py_object]
_is_sequence.restype = ctypes.c_int


def is_sequence(obj) -> bool:
    return bool(_is_sequence(obj))


def _item_slot(cls: type) -> ctypes.c_void_p | None:
    as_sequence = ctypes.c_void_p.from_address(id(cls) + _TP_AS_SEQUENCE).value
    return ctypes.c_void_p.from_address(as_sequence + _SQ_ITEM) if as_sequence else None


def _all_subclasses(cls: type):
    seen, todo = set(), list(type.__subclasses__(cls))
    while todo:
        sub = todo.pop()
        if sub not in seen:
            seen.add(sub)
            todo.extend(type.__subclasses__(sub))
    return seen


def clear_item_slot(cls: type, probe) -> bool:
    """Set the `sq_item` slot of `cls`, and of its subclasses that take `__getitem__` from it, to
    NULL, so that `probe` (an instance of `cls`) is no sequence again. True when done and checked;
    False when this interpreter is not one it knows how to do it on (nothing was changed)."""
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):  # debug builds differ
        return False
    if not is_sequence(probe):
        return True  # nothing to undo
    slot = _item_slot(cls)
    if slot is None:
        return False
    shared = slot.value  # CPython's generic "call __getitem__" slot function
    slot.value = None
    if is_sequence(probe):  # not the slot we thought: put it back as it was
        slot.value = shared
        return False
    for sub in _all_subclasses(cls):
        owner = next((k for k in sub.__mro__ if "__getitem__" in vars(k)), None)
        sub_slot = _item_slot(sub) if owner is cls else None
        if sub_slot is not None and sub_slot.value == shared:
            sub_slot.value = None
    return True
