"""Comparisons with a string that decide a branch on a CUDA GPU (branches.Conditions).

* A device-type test: `x.device.type == "cpu"`, `device != "cuda"`. On a value's device too
  (`if all_token_ids.device.type == "cpu": return _reference_cpu(...)`: the CPU platform's
  path), except as a precondition (`precondition`): `if qo_lens.device.type != "cpu": raise`,
  `assert t.device.type == "cpu"` state that a CUDA process passes that value on the host.
* A backend or implementation chosen by name, where the name is another platform's:
  `self.io_backend == "kernel_ascend"` (SGLang's cache controller: the NPU transfer kernels),
  `dsa_impl == "intel_xpu"`, `backend == "aiter_sparse"`. Whatever picks the value (a server
  argument, a config field), a CUDA deployment does not pick another platform's kernels, so
  the test is false there (and `!=` true). Words of the string, not substrings: `"input"` has
  no `npu`. `cpu` is left out on purpose: `offload_backend == "cpu"` is a host offload that a
  CUDA server does choose.
* The CPU's attention kernels by name: `self.backend_name in ["CPU_ATTN"]` (vLLM's NIXL worker:
  the post-process for a CPU attention backend). A string whose words are `cpu` and `attn` /
  `attention` names the attention backend the CPU platform selects, never the one a CUDA GPU
  runs; counted only where the compared name is a backend's or implementation's by its words
  (`backend_name`, `attn_impl`), so `device.type == "cpu"`, a host offload (`"cpu"` alone) and a
  field named `..._cpu` stay as they are.
* `in` / `not in` a literal list, tuple or set whose every string is decided as above, the same.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .library import LibraryFacts, words
from .nodewalk import every_node

_DEVICE_ENDS = (".type", "device", "device_type")
_ATTENTION = frozenset(("attn", "attention"))  # with `cpu`: the CPU platform's attention backend
_CHOSEN = frozenset(("backend", "impl"))  # the compared name is a backend's or implementation's
# words of the object whose `.device` a platform test reads: it is given the process's device
_DEVICE_HOLDERS = frozenset(("config", "cfg", "args", "runner", "platform", "model", "worker", "engine", "self"))


def compare_test(node: ast.Compare, left_name: str, library: LibraryFacts) -> tuple[bool | None, str]:
    """(value on a CUDA GPU, why) of `left == "literal"` / `!=` / `in [literals]` / `not in`;
    (None, "") when undecided. `left_name` is the dotted name of the non-literal side ("" when it
    has none)."""
    if len(node.ops) != 1:
        return None, ""
    if isinstance(node.ops[0], (ast.In, ast.NotIn)):
        return _member_test(node, left_name, library)
    if not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return None, ""
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
        return None, ""
    text = left_name.lower()
    if text.endswith(_DEVICE_ENDS):
        kind = right.value.split(":")[0]
        if kind == "cuda":
            value = True
        elif kind in library.other_words:
            value = False
        else:
            return None, ""
        why = f"device type `{right.value}`"
    else:
        if not text or not _other_backend(left_name, right.value, library):
            return None, ""
        value, why = False, f"`{left_name}` names another platform's backend (`{right.value}`)"
    if isinstance(node.ops[0], ast.NotEq):
        value = not value
    return value, why


def precondition(stmt, value) -> bool:
    """A test of where a value lives (`t.device.type != "cpu"`) whose arm a CUDA GPU would take,
    read as a platform test (`value`), raises: `if qo_segment_lens.device.type != "cpu": raise`,
    `assert lens.device.type == "cpu"`. Code that CUDA processes call with host metadata says
    so; read as a platform test, all that follows would be cold. The branch is left undecided
    (branches.py), and the walk narrows the value to the host after it (place_tests.py)."""
    if value is None or not any(isinstance(node, ast.Compare) and len(node.ops) == 1
                                and any(_value_device((dotted(side) or "").lower()) for side in (node.left, *node.comparators))
                                for node in every_node(stmt.test)):
        return False
    if isinstance(stmt, ast.Assert):
        return value is False
    taken = stmt.body if value else stmt.orelse
    return bool(taken) and isinstance(taken[-1], ast.Raise)


def _value_device(text: str) -> bool:
    """`tensor.device.type`, `x.device`: the device of a value the code holds (its last word
    before `.device` is no configuration's, runner's or the object's own `self`)."""
    holder = text.removesuffix(".type")
    if not holder.endswith(".device"):
        return False
    last = holder[:-len(".device")].rsplit(".", 1)[-1]
    return _DEVICE_HOLDERS.isdisjoint(words(last))


def _other_backend(left_name: str, text: str, library: LibraryFacts) -> bool:
    """`text` names another platform's backend, where `left_name` is what it is compared with."""
    split = words(text)
    if any(w in library.other_words and w != "cpu" for w in split):
        return True
    return "cpu" in split and not _ATTENTION.isdisjoint(split) and not _CHOSEN.isdisjoint(words(left_name))


def _member_test(node: ast.Compare, left_name: str, library: LibraryFacts) -> tuple[bool | None, str]:
    """`backend in ["CPU_ATTN"]`: false on CUDA when every string listed is another platform's."""
    right = node.comparators[0]
    if not left_name or not isinstance(right, (ast.List, ast.Tuple, ast.Set)) or not right.elts:
        return None, ""
    texts = [e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(texts) != len(right.elts) or not all(_other_backend(left_name, t, library) for t in texts):
        return None, ""
    why = f"`{left_name}` names another platform's backend ({', '.join(f'`{t}`' for t in texts)})"
    return isinstance(node.ops[0], ast.NotIn), why
