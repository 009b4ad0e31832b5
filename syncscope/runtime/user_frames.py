"""Which line and which function a sync is attributed to: one answer for every detector (the GPU's
shims and sync warnings, the simulated device's dispatch path, hazards, captures) and for every
Python the program runs on.

Both detectors hand the recorder a frame; the recorder walks to the first user frame and asks this
module for its line and function name. The line is "the line of the call that syncs": what Python
3.12 reports for the instruction running in that frame (the GPU suite runs 3.12). Two things make
a naive `frame.f_lineno` disagree between a GPU run and a CI run of the same program:

* Python 3.11's line table differs from 3.12's for implicit calls. A tensor tested by a jump
  (`if`, `while`, `assert`, a ternary, a comprehension's condition: `Tensor.__bool__`) gets the
  line of the whole condition on 3.11 and the line of the tested expression on 3.12; a tensor
  formatted in an f-string that spans lines (`Tensor.__format__`) gets the first line of the
  string on 3.11 and the line of its `{...}` on 3.12. On 3.11 we give such an instruction the
  first line of the expression it consumes (read back through the bytecode), which is 3.12's.
* Python 3.11 runs list, set and dict comprehensions in a frame of their own
  (`f.<locals>.<listcomp>`, called from `f`); 3.12 inlines them (PEP 709) into `f`. We name such a
  frame after its enclosing function and drop the enclosing frame's duplicate entry.

And a GPU run compiles what the simulated device runs eagerly: after a graph break, torch.compile
runs the rest of a function in "resume" functions (`torch_dynamo_resume_in_f_at_12`) called from
the transformed `f`. They are named after the function they resume, and the chain collapses to one
frame, so a sync past a graph break has the same site as in eager code.

Standard library only.
"""

from __future__ import annotations

import dis
import re
import sys
from typing import Callable

from syncscope.events import Frame

# 3.12's line table is the reference; 3.11 needs the corrections below.
_NEEDS_CORRECTION = sys.version_info < (3, 12)

_COMPREHENSION_SUFFIX = re.compile(r"(?:\.<locals>)?\.?<(?:listcomp|setcomp|dictcomp)>$")
_DYNAMO_RESUME = re.compile(r"torch_dynamo_resume_in_(.+)_at_\d+$")

# Instructions that call `__bool__` / `__format__` on the value they pop (3.11 names).
_TRUTH_JUMPS = frozenset(
    name
    for name in (
        "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
    )
    if name in dis.opmap
)
_FORMAT = "FORMAT_VALUE"
_HAS_FORMAT_SPEC = 0x04  # FORMAT_VALUE's flag: a format spec sits on the stack above the value


def function_name(code) -> str:
    """The enclosing function's qualified name as 3.12 eager code reports it."""
    name = getattr(code, "co_qualname", code.co_name)
    if "<" in name:
        while True:
            stripped = _COMPREHENSION_SUFFIX.sub("", name)
            if stripped == name:
                break
            name = stripped or "<module>"
    if "torch_dynamo_resume_in_" in name:
        head, _, last = name.rpartition(".")
        match = _DYNAMO_RESUME.fullmatch(last)
        while match:  # a resume of a resume names the innermost function once
            last = match.group(1)
            match = _DYNAMO_RESUME.fullmatch(last)
        name = f"{head}.{last}" if head else last
    return name


def _runs_inside_caller(code) -> bool:
    """A frame whose caller is the same function's frame (3.11 comprehensions, torch.compile's
    resume functions): the caller's entry would repeat the site one line off."""
    name = code.co_name
    return name in ("<listcomp>", "<setcomp>", "<dictcomp>") or name.startswith("torch_dynamo_resume_in_")


def call_line(frame) -> int:
    """The line of the call running in `frame` (the one that syncs, for the innermost user frame)."""
    return _line(frame, _code_info(frame.f_code)[2])


def _line(frame, corrections: dict | None) -> int:
    if corrections:
        corrected = corrections.get(frame.f_lasti)
        if corrected is not None:
            return corrected
    line = frame.f_lineno
    return line if line is not None else frame.f_code.co_firstlineno


def user_stack(
    frame,
    is_internal: Callable[[str], bool],
    relative: Callable[[str], str],
    *,
    stop_file: str | None = None,
    limit: int = 24,
    sites: dict | None = None,
) -> tuple[Frame, ...]:
    """The user's frames from `frame` outwards, innermost first: frames of files `is_internal`
    names are skipped, the walk ends at `stop_file` (syncscope's runner) or after `limit` frames.

    `sites` (the recorder's own dict) keeps what each call site needs once it is worked out: a
    program syncs from the same few stacks step after step, and working each frame out again
    (internal or not, its name, relative path and line, a frozen `Frame`) was most of what a
    recorded sync cost the host: about half of it for a 20-frame stack on the CI host
    (`bench/record_cost.py`)."""
    frames: list[Frame] = []
    enclosing = None  # (filename, name) of a frame whose entry the previous one already stands for
    if sites is None:
        sites = {}
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        entry = sites.get((id(code), frame.f_lasti))
        if entry is None or entry[0] is not code:
            entry = _site(frame, code, is_internal, relative, stop_file, sites)
        _, role, filename, name, inside_caller, site = entry
        if role is _STOP:
            break
        if role is _USER:
            if enclosing is not None and enclosing == (filename, name):
                if not inside_caller:
                    enclosing = None
            else:
                frames.append(site)
                enclosing = (filename, name) if inside_caller else None
        frame = frame.f_back
    return tuple(frames)


_USER, _INTERNAL, _STOP = "user", "internal", "stop"


def _site(frame, code, is_internal, relative, stop_file, sites: dict) -> tuple:
    """What the walk needs of the call running in `frame`: (code, role, filename, function name,
    runs inside its caller, its Frame). A call site is its code object and the offset of the
    instruction running there (`f_lasti`); all of this follows from those two alone, so it is
    made once per site and kept (keyed by the code's id, as `_code_info` is: the entry keeps the
    code alive)."""
    filename = code.co_filename
    if filename == stop_file:
        entry = (code, _STOP, filename, "", False, None)
    elif is_internal(filename):
        entry = (code, _INTERNAL, filename, "", False, None)
    else:
        name, inside_caller, corrections = _code_info(code)
        entry = (code, _USER, filename, name, inside_caller, Frame(relative(filename), _line(frame, corrections), name))
    if len(sites) >= _CODE_INFO_MAX:
        sites.clear()
    sites[(id(code), frame.f_lasti)] = entry
    return entry


# -- per code object, computed once ----------------------------------------------------------------
_CODE_INFO: dict = {}
_CODE_INFO_MAX = 8192


def _code_info(code) -> tuple[str, bool, dict | None]:
    """(function name, runs inside its caller's function, {offset: corrected line} or None).
    Keyed by id (hashing a code object hashes its bytecode each time); the entry keeps the code
    alive, so the id is not reused while it is cached."""
    cached = _CODE_INFO.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    info = (function_name(code), _runs_inside_caller(code), _implicit_call_lines(code) if _NEEDS_CORRECTION else None)
    if len(_CODE_INFO) >= _CODE_INFO_MAX:
        _CODE_INFO.clear()
    _CODE_INFO[id(code)] = (code, info)
    return info


# -- Python 3.11: the lines 3.12 gives implicit calls ---------------------------------------------
def _implicit_call_lines(code) -> dict[int, int]:
    """{offset of a truth-testing jump or FORMAT_VALUE: the first line of the value it pops}."""
    try:
        return _scan(code)
    except Exception:  # an unusual code object: keep the interpreter's own lines
        return {}


def _scan(code) -> dict[int, int]:
    instructions = list(dis.get_instructions(code))
    lines: dict[int, int] = {}
    for index, ins in enumerate(instructions):
        if ins.opname in _TRUTH_JUMPS:
            line = _operand_line(instructions, index, values_above=0)
        elif ins.opname == _FORMAT:
            line = _operand_line(instructions, index, values_above=1 if (ins.arg or 0) & _HAS_FORMAT_SPEC else 0)
        else:
            continue
        if line is not None and line != (ins.positions.lineno if ins.positions else None):
            lines[ins.offset] = line
    return lines


def _operand_line(instructions: list, index: int, values_above: int) -> int | None:
    """First line of the instructions that computed the value `values_above` entries below the top
    of the stack when instruction `index` runs. Walking back, the stack effects first add up to k
    exactly where the k-th value from the top began. None where the straight-line walk cannot
    tell (a jump inside the expression, an instruction `dis` has no stack effect for)."""
    produced = 0
    in_operand = values_above == 0
    first_line = None
    for back in range(index - 1, -1, -1):
        ins = instructions[back]
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return None
        try:
            produced += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None, jump=False)
        except (ValueError, TypeError):
            return None
        if in_operand:
            line = ins.positions.lineno if ins.positions else None
            if line is not None and (first_line is None or line < first_line):
                first_line = line
            if produced == values_above + 1:
                return first_line
        elif produced == values_above:
            in_operand = True  # the values above it (a format spec) are behind us
        if ins.is_jump_target:
            return None  # control flow joins inside the expression: no straight line to read
    return None
