"""Warnings raised while syncscope handles a program's call point at the program's line.

Python gives a warning the location of a frame on the stack: torch's C++ warnings (TORCH_WARN:
"Sparse CSR tensor support is in beta state", deprecations) the innermost Python frame, a
Python `warnings.warn(..., stacklevel=n)` the n-th frame up. While a detector handles a call
(the simulated device's torch-function and dispatch handlers, the CUDA detector's shims), some
of those frames are syncscope's. Left alone, the warning would name syncscope's file and line,
be matched against the program's warning filters as syncscope's module, and, shown once per
location, be shown once for all the program's lines that raise it.

So while a trap is installed, a warning located in a frame of `syncscope/runtime/` is caught on
its way to the screen (`warnings._showwarnmsg`, which `catch_warnings` leaves in place) and
issued again with the location plain python would have given it: the same stack level counted
on the stack without the frames syncscope added (its own, and the `handle_torch_function` hop
that exists only because its torch-function mode is active). Issued with `warn_explicit` and the
program's module and registry, it then meets the program's filters (`error`, `ignore`, `once`
per line) as under plain python. An `always` filter for syncscope's runtime modules, in front,
lets every such warning reach the hook, and the first pass's marks in syncscope's registries
are taken back. Costs nothing until a warning is raised.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

from syncscope.events import SYNC_WARNING

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OVERRIDES = os.sep + os.path.join("torch", "overrides.py")
_CUDA_DETECTORS = (os.path.join(_RUNTIME_DIR, "cuda.py"), os.path.join(_RUNTIME_DIR, "quiet_cuda.py"))
_FILTER = ("always", None, Warning, re.compile(r"syncscope\.runtime(\.|$)"), 0)
_saved: list = []  # the `_showwarnmsg` replaced (one entry while installed)


def install() -> None:
    if _saved:
        return
    _saved.append(warnings._showwarnmsg)
    warnings._showwarnmsg = _showwarnmsg
    rearm()


def rearm() -> None:
    """(Re)put the filter in front: `catch_warnings` blocks restore the filter list on exit."""
    if _saved and _FILTER not in warnings.filters:
        warnings.filters.insert(0, _FILTER)
        warnings._filters_mutated()


def uninstall() -> None:
    if not _saved:
        return
    original = _saved.pop()
    if warnings._showwarnmsg is _showwarnmsg:
        warnings._showwarnmsg = original
    warnings.filters[:] = [f for f in warnings.filters if f is not _FILTER]
    warnings._filters_mutated()


def _ours(filename: str) -> bool:
    return filename.startswith(_RUNTIME_DIR)


def _showwarnmsg(msg) -> None:
    if not _ours(msg.filename or "") or _detector_channel(msg):
        return _forward(msg)
    frames = _frames(sys._getframe(1), msg.filename, msg.lineno)
    if frames is None:  # no frame of the program above ours (e.g. raised at the top level)
        return _forward(msg)
    located, program = frames
    _take_back_first_pass(msg, located.f_globals)
    module_globals = program.f_globals
    warnings.warn_explicit(
        msg.message,
        msg.category,
        program.f_code.co_filename,
        program.f_lineno,
        module=module_globals.get("__name__", "<string>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        source=msg.source,
    )


def _detector_channel(msg) -> bool:
    """torch's sync-debug warning raised inside the CUDA detector's shims: the detector's own
    channel (it records the sync and shows nothing), left as it is at no extra cost per sync."""
    return msg.filename in _CUDA_DETECTORS and str(msg.message).startswith(SYNC_WARNING)


def _forward(msg) -> None:
    original = _saved[0] if _saved else warnings._showwarnmsg_impl
    original(msg)


def _frames(origin, filename: str, lineno: int):
    """(the frame the warning was located at, the frame plain python would have located it at):
    the same stack level counted again on the stack without syncscope's frames."""
    stack = []
    frame = origin
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    level = next((i for i, f in enumerate(stack) if f.f_code.co_filename == filename and f.f_lineno == lineno), None)
    if level is None:
        return None
    plain = _without_added_frames(stack)
    # A C++ warning inside our handler (or our own emulation of one) starts at the program's
    # innermost frame; a Python warning raised by torch code we called, at that code's frame.
    index = 0 if _ours(origin.f_code.co_filename) else level
    return (stack[level], plain[index]) if index < len(plain) else None


def _without_added_frames(stack: list) -> list:
    """Drop syncscope's runtime frames, and the `handle_torch_function` hop a torch Python
    function takes only because syncscope's torch-function mode is on (the function's outer
    frame, the hop, then ours, then the same function again: plain python runs it once)."""
    plain = []
    skip = set()
    for i, frame in enumerate(stack):
        if id(frame) in skip:
            continue
        name = frame.f_code.co_filename
        if _ours(name):
            continue
        if name.endswith(_OVERRIDES) and i > 0 and _ours(stack[i - 1].f_code.co_filename):
            inner = next((f for f in reversed(stack[:i]) if not _ours(f.f_code.co_filename)), None)
            caller = stack[i + 1] if i + 1 < len(stack) else None
            if inner is not None and caller is not None and inner.f_code is caller.f_code:
                skip.add(id(caller))
                continue
        plain.append(frame)
    return plain


def _take_back_first_pass(msg, located_globals: dict) -> None:
    """The first pass through the filters counted this warning as raised at syncscope's line:
    forget that, so the next one raised at another of the program's lines reaches the hook and
    a `once` filter sees it once for the program, not once for syncscope."""
    text = str(msg.message)
    category = msg.category
    registry = located_globals.get("__warningregistry__")
    if registry:
        registry.pop((text, category, msg.lineno), None)
        registry.pop((text, category, 0), None)
    if _first_action(text, category, located_globals.get("__name__", ""), msg.lineno) == "once":
        warnings.onceregistry.pop((text, category), None)


def _first_action(text: str, category, module: str, lineno: int) -> str:
    for action, message, cat, mod, line in warnings.filters:
        if (message is None or message.match(text)) and issubclass(category, cat) and (mod is None or mod.match(module)) and (line == 0 or line == lineno):
            return action
    return warnings.defaultaction
