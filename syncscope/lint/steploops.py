"""Which loops of a per-request function are step loops, and which loops run around them.

A diffusion pipeline stage runs once per request; only its denoising loop runs every step
(reachability.py walks the lines inside a per-request function's loops as per-step). Some
stages run a whole denoising schedule per chunk, clip or sample of the request:

    for chunk_id in range(plan["num_chunks"]):       # once per chunk, not per step
        self.scheduler.set_timesteps(n, device=d)     # builds the schedule: once per chunk
        self._denoise_once(batch)                     # for i, t in enumerate(timesteps): ...

The loop around is no step loop: a step is one iteration of the inner loop. A loop's header
names the denoising schedule when it mentions a timestep, sigma or step (`for i, t in
enumerate(timesteps)`, `for step_idx in range(len(sigmas) - 1)`, `for i, t in progress_bar`:
a target named `t`). A loop whose header does not, and that holds such a loop (nested in it,
or in a function a call on its lines reaches, a few calls deep), is an **outer loop**: its
own lines run once per chunk, like the function's lines outside loops. Every other loop stays
a step loop (a loop over a CFG pair or a token-by-token `while` is per step, as before): the
rule only takes a loop out when the schedule's loop is found inside it.
"""

from __future__ import annotations

import ast
import re

_STEP_WORDS = re.compile(r"timestep|sigma|step", re.IGNORECASE)
_STEP_NAMES = frozenset({"t"})  # the usual name of the current timestep
MAX_DEPTH = 4  # calls followed from a loop's lines to find the schedule's loop


def names_steps(node) -> bool:
    """The expression (a `for` target or iterable, a `while` test) names the denoising
    schedule: an identifier or attribute with `timestep`, `sigma` or `step` in it, or `t`."""
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is not None and (name in _STEP_NAMES or _STEP_WORDS.search(name)):
            return True
    return False


class StepLoops:
    """Over the whole program: the lines of a per-request function that run once per call,
    the outer loops' own lines included."""

    def __init__(self, loops: dict, straight: dict, calls_of, enterable, is_step_root) -> None:
        self.loops = loops  # function -> loops.py's loop tuples
        self.straight = straight
        self.calls_of = calls_of  # reachability's: (line, callee) of the calls that may run
        self.enterable = enterable
        self.is_step_root = is_step_root  # per-step roots: reached anyway, not searched
        self._holds: set[str] = set()  # found to run a schedule
        self._none_from: dict[str, int] = {}  # found not to, searching from this depth
        self._open: set[str] = set()  # being searched (a cycle of calls finds nothing more)
        self._outer: dict[str, tuple] = {}

    def holds_schedule(self, qualname: str, depth: int = 0) -> bool:
        """`qualname` runs a denoising schedule: it has a loop whose header names steps, or a
        call on one of its lines reaches such a function (at most MAX_DEPTH calls)."""
        if qualname in self._holds:
            return True
        if any(loop[2] for loop in self.loops.get(qualname, ())):
            self._holds.add(qualname)
            return True
        # a search that found nothing from depth d finds nothing from any deeper start either
        if depth >= MAX_DEPTH or self._none_from.get(qualname, MAX_DEPTH) <= depth or qualname in self._open:
            return False
        self._open.add(qualname)
        try:
            found = any(target != qualname and self.enterable(target) and not self.is_step_root(target)
                        and self.holds_schedule(target, depth + 1)
                        for _line, target in self.calls_of(qualname))
        finally:
            self._open.discard(qualname)
        if found:
            self._holds.add(qualname)
        else:
            self._none_from[qualname] = min(depth, self._none_from.get(qualname, MAX_DEPTH))
        return found

    def outer(self, qualname: str) -> tuple:
        """Per loop of `qualname` (in loops.py's order): whether it is an outer loop."""
        known = self._outer.get(qualname)
        if known is not None:
            return known
        loops = self.loops.get(qualname, ())
        holds = [False] * len(loops)
        for index, (start, end, steps, parent, _own) in enumerate(loops):
            if steps:  # the schedule's loop itself: its enclosing loops hold it
                while parent >= 0:
                    holds[parent] = True
                    parent = loops[parent][3]
        for line, target in self.calls_of(qualname):
            inner = self.innermost(loops, line)
            if inner < 0 or holds[inner] or target == qualname or not self.enterable(target) \
                    or self.is_step_root(target) or not self.holds_schedule(target):
                continue
            while inner >= 0:
                holds[inner] = True
                inner = loops[inner][3]
        found = tuple(held and not loop[2] for held, loop in zip(holds, loops))
        self._outer[qualname] = found
        return found

    @staticmethod
    def innermost(loops: tuple, line: int) -> int:
        """The index of the innermost loop whose span holds `line`, or -1."""
        best = -1
        for index, (start, end, _steps, _parent, _own) in enumerate(loops):
            if start <= line <= end and (best < 0 or start >= loops[best][0]):
                best = index
        return best

    def once(self, qualname: str) -> tuple | None:
        """The line ranges of `qualname` that run once per call: its straight lines and the own
        lines of the loops that are outer all the way out. None where loops.py has no lines."""
        straight = self.straight.get(qualname)
        loops = self.loops.get(qualname)
        if straight is None or not loops:
            return straight
        outer = self.outer(qualname)
        if not any(outer):
            return straight
        ranges = list(straight)
        for index, loop in enumerate(loops):
            current, whole = index, True
            while current >= 0 and whole:
                whole = outer[current]
                current = loops[current][3]
            if whole:
                ranges.extend(loop[4])
        return tuple(sorted(ranges))
