"""Which subscript a frame was executing when torch warned of a sync, and with what operands.

The quiet CUDA detector (runtime/quiet_cuda.py) leaves `Tensor.__getitem__` and `__setitem__`
unwrapped: a serving step indexes tensors hundreds of times and almost never syncs doing so. When
torch's sync warning arrives from inside a subscript, the frame that executed it is stopped at
that instruction (`f_lasti`), but the operands have left the reach of Python: they sit on the
frame's value stack, which no API reads. What remains is the code: a small symbolic run over
the code object's bytecode (cached per code object, done only when a sync arrives) says, for each
stack slot at the subscript, which instructions produced it. Plain reads (a local, a global, a
constant, an attribute held in an object's `__dict__`, a tuple or slice of those) are read again
from the frame, which has no side effect; an operand made by a comparison (`x[x > 0]`) or a
bitwise operation of masks is known to be a boolean tensor on its tensor operand's device.
Anything else (a call, an arithmetic result of unknown dtype) is unknown, and the detector names
the sync `other` rather than guess.

Nothing here runs torch code: tensor metadata is read by the caller through `describe`.
"""

from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass
from typing import Any

# Symbolic stack entries: a tuple whose first item says what made the value.
UNKNOWN = None
_NULL = ("null",)
_MAX_INSTRUCTIONS = 20_000  # longer code objects are not analysed (the sync is then `other`)

_LOADS_LOCAL = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_BORROW", "LOAD_DEREF", "LOAD_CLOSURE"}
_LOADS_GLOBAL = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"}
_BITWISE = {"&", "|", "^", "&=", "|=", "^="}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)
_ENDS_BLOCK = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD", "JUMP_BACKWARD",
               "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT", "JUMP_ABSOLUTE"}


@dataclass(frozen=True)
class Subscript:
    """A subscript in progress: `container[index]` (a read), or `container[index] = value`."""

    store: bool
    container: Any  # a symbolic entry (resolve() reads it from the frame)
    index: Any
    value: Any = UNKNOWN


@dataclass(frozen=True)
class Tensorish:
    """What is known of a tensor the frame computed: on the device or not, a mask or not
    (None: not known)."""

    cuda: bool | None
    mask: bool | None


_cache: dict[types.CodeType, dict[int, tuple] | None] = {}


def subscript_at(frame) -> Subscript | None:
    """The subscript instruction `frame` is executing, or None when it is executing something
    else (a call, a conversion) or the code could not be analysed."""
    code = frame.f_code
    instructions = _instructions(code)
    offset = instruction_offset(frame, instructions)
    instr = instructions.get(offset)
    if instr is None:
        return None
    kind = _subscript_kind(instr)
    if kind is None:
        return None
    stack = _stacks(code, instructions).get(offset)
    if stack is None:
        return None
    if kind == "get" and len(stack) >= 2:
        return Subscript(False, stack[-2], stack[-1])
    if kind == "slice" and len(stack) >= 3:
        return Subscript(False, stack[-3], ("slice", (stack[-2], stack[-1])))
    if kind == "set" and len(stack) >= 3:
        return Subscript(True, stack[-2], stack[-1], stack[-3])
    if kind == "store_slice" and len(stack) >= 4:
        return Subscript(True, stack[-3], ("slice", (stack[-2], stack[-1])), stack[-4])
    return None


def _subscript_kind(instr) -> str | None:
    name = instr.opname
    if name == "BINARY_SUBSCR":
        return "get"
    if name == "BINARY_SLICE":
        return "slice"
    if name == "STORE_SUBSCR":
        return "set"
    if name == "STORE_SLICE":
        return "store_slice"
    if name == "BINARY_OP" and _binary_op_name(instr) == "[]":  # Python 3.14
        return "get"
    return None


def _binary_op_name(instr) -> str:
    return str(instr.argrepr)


def instruction_offset(frame, instructions: dict | None = None) -> int:
    """The offset of the instruction `frame` is executing. `f_lasti` can point into the inline
    caches after it (3.12 does so for a subscript specialised to a Python `__getitem__`)."""
    offset = frame.f_lasti
    if instructions is None:
        instructions = _instructions(frame.f_code)
    if offset in instructions:
        return offset
    earlier = [o for o in instructions if o <= offset]
    return max(earlier) if earlier else offset


# -- reading the operands back from the frame ---------------------------------------------------
_MISSING = object()


def resolve(entry, frame, describe) -> Any:
    """The value of a symbolic entry in `frame`: the object itself for plain reads, a `Tensorish`
    for a tensor the frame computed, `UNKNOWN` (None) otherwise. `describe(tensor)` gives a
    tensor's (on_device, is_mask) from its metadata."""
    value = _resolve(entry, frame, describe, 0)
    return UNKNOWN if value is _MISSING else value


def _resolve(entry, frame, describe, depth: int) -> Any:
    if entry is UNKNOWN or entry is _NULL or depth > 16:
        return _MISSING
    what = entry[0]
    if what == "const":
        return entry[1]
    if what == "local":
        return frame.f_locals.get(entry[1], _MISSING)
    if what == "global":
        name = entry[1]
        value = frame.f_globals.get(name, _MISSING)
        if value is _MISSING:
            builtins = frame.f_builtins
            value = builtins.get(name, _MISSING) if isinstance(builtins, dict) else _MISSING
        return value
    if what == "attr":
        base = _resolve(entry[1], frame, describe, depth + 1)
        return _MISSING if base is _MISSING or isinstance(base, Tensorish) else _plain_attribute(base, entry[2])
    if what in ("tuple", "list", "slice"):
        items = [_resolve(item, frame, describe, depth + 1) for item in entry[1]]
        if what == "slice":
            return _MISSING if any(i is _MISSING or isinstance(i, Tensorish) for i in items) else slice(*items)
        items = [UNKNOWN if i is _MISSING else i for i in items]
        return tuple(items) if what == "tuple" else list(items)
    if what == "item":  # a subscript of a Python list, tuple or dict: a plain read
        container = _resolve(entry[1], frame, describe, depth + 1)
        key = _resolve(entry[2], frame, describe, depth + 1)
        if type(container) in (list, tuple, dict) and key is not _MISSING and not isinstance(key, Tensorish):
            try:
                return container[key]
            except (LookupError, TypeError):
                return _MISSING
        as_tensor = _tensorish(container, describe)
        # A tensor indexed keeps its dtype and device (a mask sliced is still a mask).
        return as_tensor if as_tensor is not None else _MISSING
    if what in ("compare", "bitwise", "same"):
        operands = [_tensorish(_resolve(item, frame, describe, depth + 1), describe) for item in entry[1]]
        tensors = [t for t in operands if t is not None]
        if not tensors:
            return _MISSING
        cuda = True if any(t.cuda for t in tensors) else (False if all(t.cuda is False for t in tensors) else None)
        if what == "compare":
            return Tensorish(cuda, True)
        if what == "bitwise":  # & | ^ of masks is a mask; of integers, not
            return Tensorish(cuda, True if all(t.mask for t in tensors) else (False if all(t.mask is False for t in tensors) else None))
        return Tensorish(cuda, tensors[0].mask)  # ~mask, -x: same dtype
    if what == "arith":  # + - * / of tensors: a tensor on their device, not a mask
        operands = [_tensorish(_resolve(item, frame, describe, depth + 1), describe) for item in entry[1]]
        tensors = [t for t in operands if t is not None]
        if not tensors:
            return _MISSING
        return Tensorish(True if any(t.cuda for t in tensors) else (False if all(t.cuda is False for t in tensors) else None), False)
    return _MISSING


def _tensorish(value, describe) -> Tensorish | None:
    if isinstance(value, Tensorish):
        return value
    if value is _MISSING or value is None:
        return None
    described = describe(value)
    return Tensorish(*described) if described is not None else None


def _plain_attribute(obj, name: str) -> Any:
    """`obj.name` when reading it runs no code: a module's global, a value in the instance's
    `__dict__` not shadowed by a data descriptor, an `nn.Module`'s parameter, buffer or
    submodule, a plain class attribute. A property (or any other descriptor) is never called."""
    if isinstance(obj, types.ModuleType):
        return vars(obj).get(name, _MISSING)
    if isinstance(obj, type):  # a class attribute (`T.mask`): a plain value, not a descriptor
        for meta in type(obj).__mro__:
            if name in vars(meta) and hasattr(type(vars(meta)[name]), "__set__"):
                return _MISSING  # the metaclass's data descriptor wins; never called
        for klass in obj.__mro__:
            if name in vars(klass):
                found = vars(klass)[name]
                return _MISSING if hasattr(type(found), "__get__") else found
        return _MISSING
    cls_attr = _MISSING
    for klass in type(obj).__mro__:
        if name in vars(klass):
            cls_attr = vars(klass)[name]
            break
    data_descriptor = cls_attr is not _MISSING and hasattr(type(cls_attr), "__set__")
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        own = None
    if isinstance(own, dict) and not data_descriptor:
        if name in own:
            return own[name]
        for table in ("_parameters", "_buffers", "_modules"):  # torch.nn.Module keeps them apart
            held = own.get(table)
            if isinstance(held, dict) and name in held:
                return held[name]
    if cls_attr is not _MISSING and not hasattr(type(cls_attr), "__get__"):
        return cls_attr
    return _MISSING


# -- the symbolic run ---------------------------------------------------------------------------
_instruction_cache: dict[types.CodeType, dict[int, Any]] = {}


def _instructions(code) -> dict[int, Any]:
    found = _instruction_cache.get(code)
    if found is None:
        if len(_instruction_cache) > 4096:
            _instruction_cache.clear()
        found = _instruction_cache[code] = {i.offset: i for i in dis.get_instructions(code)}
    return found


def _stacks(code, instructions: dict[int, Any]) -> dict[int, tuple]:
    """The symbolic stack before each reachable instruction (cached per code object)."""
    cached = _cache.get(code, _MISSING)
    if cached is not _MISSING:
        return cached or {}
    stacks: dict[int, tuple] = {}
    if len(instructions) <= _MAX_INSTRUCTIONS:
        try:
            stacks = _run(code, instructions)
        except Exception:  # an opcode we model wrongly: no analysis, never an error
            stacks = {}
    if len(_cache) > 4096:
        _cache.clear()
    _cache[code] = stacks
    return stacks


def _run(code, instructions: dict[int, Any]) -> dict[int, tuple]:
    order = sorted(instructions)
    following = {a: b for a, b in zip(order, order[1:])}
    stacks: dict[int, tuple] = {}
    todo: list[tuple[int, tuple]] = [(order[0], ())] if order else []
    for start, _end, target, depth, lasti in _handlers(code):
        todo.append((target, (UNKNOWN,) * (depth + (1 if lasti else 0) + 1)))
    while todo:
        offset, stack = todo.pop()
        while offset is not None:
            known = stacks.get(offset)
            if known is not None:
                merged = _merge(known, stack)
                if merged == known:
                    break
                stack = merged
            stacks[offset] = stack
            instr = instructions[offset]
            name = instr.opname
            if instr.opcode in _JUMPS and isinstance(instr.argval, int):
                taken = _after(instr, stack, jump=True)
                if taken is not None:
                    todo.append((instr.argval, taken))
            if name in _ENDS_BLOCK:
                break
            stack = _after(instr, stack, jump=False)
            if stack is None:
                break
            offset = following.get(offset)
    return stacks


def _handlers(code):
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return []
    try:
        return [(e.start, e.end, e.target, e.depth, e.lasti) for e in parse(code)]
    except Exception:
        return []


def _merge(a: tuple, b: tuple) -> tuple:
    if len(a) != len(b):
        return a
    return tuple(x if x == y else UNKNOWN for x, y in zip(a, b))


def _effect(instr, jump: bool) -> int:
    try:
        return dis.stack_effect(instr.opcode, instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None, jump=jump)
    except ValueError:
        return 0


def _after(instr, stack: tuple, jump: bool) -> tuple | None:
    """The symbolic stack after `instr` (on its jump when `jump`)."""
    name = instr.opname
    s = list(stack)
    arg = instr.arg or 0
    if name in _LOADS_LOCAL:
        s.append(("local", instr.argval))
    elif name in ("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"):  # 3.13+: two locals
        first, second = instr.argval
        s += [("local", first), ("local", second)]
    elif name in _LOADS_GLOBAL:
        if name == "LOAD_GLOBAL" and arg & 1:
            s.append(_NULL)
        s.append(("global", instr.argval))
    elif name in ("LOAD_CONST", "LOAD_SMALL_INT"):
        s.append(("const", instr.argval))
    elif name == "LOAD_ATTR" and s:
        base = s.pop()
        if sys.version_info >= (3, 12) and arg & 1:  # a method load: [method or NULL, self]
            s += [UNKNOWN, base]
        else:
            s.append(("attr", base, instr.argval))
    elif name == "LOAD_METHOD" and s:  # 3.11
        base = s.pop()
        s += [UNKNOWN, base]
    elif name == "PUSH_NULL":
        s.append(_NULL)
    elif name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SLICE") and len(s) >= arg:
        items = tuple(s[len(s) - arg:]) if arg else ()
        del s[len(s) - arg:]
        s.append(({"BUILD_TUPLE": "tuple", "BUILD_LIST": "list", "BUILD_SLICE": "slice"}[name], items))
    elif name == "BINARY_SUBSCR" and len(s) >= 2:
        key, container = s.pop(), s.pop()
        s.append(("item", container, key))
    elif name == "BINARY_SLICE" and len(s) >= 3:
        stop, begin, container = s.pop(), s.pop(), s.pop()
        s.append(("item", container, ("slice", (begin, stop))))
    elif name == "COMPARE_OP" and len(s) >= 2:
        right, left = s.pop(), s.pop()
        s.append(("compare", (left, right)))
    elif name == "BINARY_OP" and len(s) >= 2:
        right, left = s.pop(), s.pop()
        op = _binary_op_name(instr)
        if op == "[]":
            s.append(("item", left, right))
        else:
            s.append(("bitwise" if op in _BITWISE else "arith", (left, right)))
    elif name in ("UNARY_INVERT", "UNARY_NEGATIVE", "UNARY_POSITIVE") and s:
        s.append(("same", (s.pop(),)))
    elif name == "COPY" and len(s) >= arg > 0:
        s.append(s[-arg])
    elif name == "SWAP" and len(s) >= arg > 0:
        s[-1], s[-arg] = s[-arg], s[-1]
    elif name in ("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "KW_NAMES", "PRECALL", "NOT_TAKEN", "MAKE_CELL",
                  "COPY_FREE_VARS", "RETURN_GENERATOR"):
        pass
    else:
        effect = _effect(instr, jump)
        pushes = _pushes(name, arg)
        pops = pushes - effect
        if pops < 0 or pops > len(s):  # modelled wrongly: keep the depth, forget the values
            return (UNKNOWN,) * max(0, len(s) + effect)
        del s[len(s) - pops:]
        s += [UNKNOWN] * pushes
    return tuple(s)


def _pushes(name: str, arg: int) -> int:
    """How many results an instruction we do not model leaves (its pops follow from its net
    stack effect); one is right for calls, conversions and most operations."""
    if name.startswith(("STORE_", "DELETE_", "POP_", "RETURN", "RAISE", "RERAISE", "JUMP", "END_FOR",
                        "PRINT_EXPR", "IMPORT_STAR", "SETUP_ANNOTATIONS", "LIST_APPEND", "LIST_EXTEND",
                        "SET_ADD", "SET_UPDATE", "MAP_ADD", "DICT_UPDATE", "DICT_MERGE")):
        return 0
    if name == "UNPACK_SEQUENCE":
        return arg
    if name == "UNPACK_EX":
        return (arg & 0xFF) + (arg >> 8) + 1
    if name in ("BEFORE_WITH", "BEFORE_ASYNC_WITH", "PUSH_EXC_INFO"):
        return 2
    return 1
