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

A stage that runs no denoising schedule at all (no such loop in what its `forward` reaches, a
few calls deep: a preprocessing, text-encoding, LoRA-switch or autoregressive-prior stage) runs
its loops over the request's data once per request too:

    for elev, azim in zip(camera_elevs, camera_azims):    # once per view of the request
        normal_maps.append(self.render_normal(elev, azim))

Such a loop is a `for` whose header names neither the schedule nor generated tokens (loops.py:
`for _ in range(max_new_tokens)` and every `while` stay step loops: token-by-token generation
is per step), that calls nothing named like per-step work (`forward`, `step`: the `[roots] hot`
names) on its lines, reaches no per-step root and no function that holds a step loop, and holds
no step loop itself: `for i in range(n): for branch in cfg: self.transformer.forward(...)` may
be a schedule loop whose header says nothing, so it stays one.

In a function whose own loop names the schedule, a `for` over data beside that loop (neither in
it nor around it) is the set-up before it or the collection after it, and runs once per call
with the same guards (`beside`):

    for stream_scheduler in schedulers.values():           # once per call: a schedule per stream
        stream_scheduler.set_timesteps(n_steps, device=device)
    for tick, tick_value in zip(timesteps, timesteps.cpu().tolist()):   # the step loop
        ...
"""

from __future__ import annotations

import ast
import re
from .nodewalk import every_node

_STEP_WORDS = re.compile(r"timestep|sigma|step", re.IGNORECASE)
_STEP_NAMES = frozenset({"t"})  # the usual name of the current timestep
# a loop over generated tokens or decoding rounds: per step (an autoregressive stage's decode)
_GENERATION_WORDS = re.compile(r"token|generat|decod|max_len|max_length|iter|round", re.IGNORECASE)
MAX_DEPTH = 4  # calls followed from a loop's lines to find the schedule's loop


def names_steps(node) -> bool:
    """The expression (a `for` target or iterable, a `while` test) names the denoising
    schedule: an identifier or attribute with `timestep`, `sigma` or `step` in it, or `t`."""
    for sub in every_node(node):
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is not None and (name in _STEP_NAMES or _STEP_WORDS.search(name)):
            return True
    return False


def names_generation(node) -> bool:
    """The expression names generated tokens or decoding rounds (`range(max_new_tokens)`,
    `range(self.max_length)`, `range(num_iters)`): a loop so headed is a step loop anyway."""
    for sub in every_node(node):
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else None
        if name is not None and _GENERATION_WORDS.search(name):
            return True
    return False


class StepLoops:
    """Over the whole program: the lines of a per-request function that run once per call,
    the outer loops' own lines included."""

    def __init__(self, loops: dict, straight: dict, calls_of, enterable, is_step_root,
                 step_named=lambda qualname: (), step_dispatched=lambda qualname: ()) -> None:
        self.loops = loops  # function -> loops.py's loop tuples
        self.straight = straight
        self.calls_of = calls_of  # reachability's: (line, callee) of the calls that may run
        self.enterable = enterable
        self.is_step_root = is_step_root  # per-step roots: reached anyway, not searched
        self.step_named = step_named  # function -> lines of its calls named like per-step work
        self.step_dispatched = step_dispatched  # ... and of such calls on receivers of unknown class
        self._holds: set[str] = set()  # found to run a schedule
        self._none_from: dict[str, int] = {}  # found not to, searching from this depth
        self._open: set[str] = set()  # being searched (a cycle of calls finds nothing more)
        self._outer: dict[str, tuple] = {}
        self._stepping: dict[str, tuple] = {}  # function -> (depth searched from, found)
        self._items: dict[str, tuple] = {}
        self._confined: dict[str, tuple] = {}  # function -> (depth searched from, confined)
        self._confining: set[str] = set()
        self._beside: dict[str, tuple] = {}

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
        for index, (start, end, steps, parent, *_rest) in enumerate(loops):
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
        for index, (start, end, *_rest) in enumerate(loops):
            if start <= line <= end and (best < 0 or start >= loops[best][0]):
                best = index
        return best

    # -- loops over a request's data, in a stage that runs no schedule ---------------------
    def _own_stepping(self, qualname: str) -> list:
        """Per loop of `qualname`: whether it is a step loop by itself: it names the schedule,
        it is no `for` over data (a `while`, a loop over tokens), or a call on its own lines is
        named like per-step work."""
        loops = self.loops.get(qualname, ())
        named = self.step_named(qualname)
        return [bool(loop[2]) or not (len(loop) > 5 and loop[5])
                or any(start <= line <= end for line in named for start, end in loop[4]) for loop in loops]

    def steps_in(self, qualname: str, depth: int = 0) -> bool:
        """`qualname` may do per-step work: one of its loops is a step loop by itself, a call
        on any of its lines is named like per-step work or reaches a per-step root, or a call
        reaches such a function (at most MAX_DEPTH calls, as for the schedule)."""
        known = self._stepping.get(qualname)
        if known is not None and (known[1] or known[0] <= depth):
            return known[1]
        if depth >= MAX_DEPTH:
            return False
        if qualname in self._open:
            return False
        found = any(self._own_stepping(qualname)) or bool(self.step_named(qualname))
        if not found:
            self._open.add(qualname)
            try:
                found = any(target != qualname and self.enterable(target)
                            and (self.is_step_root(target) or self.steps_in(target, depth + 1))
                            for _line, target in self.calls_of(qualname))
            finally:
                self._open.discard(qualname)
        self._stepping[qualname] = (depth, found)
        return found

    def items(self, qualname: str) -> tuple:
        """Per loop of `qualname`: whether it is a loop over data that does no per-step work:
        not a step loop by itself, holding none (nested in it), and no call on its lines
        reaching per-step work."""
        known = self._items.get(qualname)
        if known is not None:
            return known
        loops = self.loops.get(qualname, ())
        fine = [not stepping for stepping in self._own_stepping(qualname)]

        def spoil(index: int) -> None:
            while index >= 0:
                fine[index] = False
                index = loops[index][3]
        for index, ok in enumerate(list(fine)):
            if not ok:
                spoil(index)
        for line, target in self.calls_of(qualname):
            inner = self.innermost(loops, line)
            if inner < 0 or not fine[inner] or target == qualname or not self.enterable(target):
                continue
            if self.is_step_root(target) or self.steps_in(target, 1) and not self.confined(target, 1):
                spoil(inner)
        found = tuple(fine)
        self._items[qualname] = found
        return found

    def confined(self, qualname: str, depth: int = 0) -> bool:
        """`qualname` does its per-step work only inside its own generation loops (a `while`, a
        `for` over tokens: loops.py), or in functions its other lines call that do the same: a
        prompt enhancer's or AR prior's `generate`, which prepares its inputs once, then decodes
        token by token. A loop over data around a call of it runs once per item (`items`); a
        step is one iteration of the generation loop, whose lines stay per step. Not so when a
        call named like per-step work, or one reaching a per-step root or per-step work that is
        not so confined, sits outside a generation loop (`x = self.model(x)` then a token loop,
        or a loop over layers calling each layer's `forward`: per step, as before)."""
        if depth >= MAX_DEPTH or qualname in self._confining:
            return False
        known = self._confined.get(qualname)
        if known is not None and (known[1] or known[0] <= depth):
            return known[1]
        loops = self.loops.get(qualname, ())
        generating = [(start, end) for start, end, steps, _parent, _own, *items in loops
                      if not steps and not (items and items[0])]

        def inside(line: int) -> bool:
            return any(start <= line <= end for start, end in generating)
        found = all(inside(line) for line in (*self.step_named(qualname), *self.step_dispatched(qualname)))
        if found:
            self._confining.add(qualname)
            try:
                found = all(inside(line) or target == qualname or not self.enterable(target)
                            or not self.is_step_root(target) and (not self.steps_in(target, depth + 1)
                                                                  or self.confined(target, depth + 1))
                            for line, target in self.calls_of(qualname))
            finally:
                self._confining.discard(qualname)
        self._confined[qualname] = (depth, found)
        return found

    # -- loops beside the schedule's loop ---------------------------------------------------
    def beside(self, qualname: str) -> tuple:
        """Per loop of `qualname`: whether it is a loop over data beside the schedule's loop of
        the same function (neither in it nor around it), which does no per-step work of its
        own: the set-up before the denoising loop (a private scheduler per stream, each given
        its schedule: `for s in schedulers.values(): s.set_timesteps(n)`) or the collection
        after it. Only in a function whose own loop names the schedule: the step is that loop's
        iteration, so a loop beside it runs once per call. Such a loop is a `for` over data
        (loops.py), calls nothing named like per-step work on its lines, reaches no per-step
        root and no function that runs a schedule, and so are the loops nested in it (a call on an
        object of unknown class counts by its name: `stream_scheduler.step(...)`)."""
        known = self._beside.get(qualname)
        if known is not None:
            return known
        loops = self.loops.get(qualname, ())
        if not any(loop[2] for loop in loops):
            found = self._beside[qualname] = (False,) * len(loops)
            return found
        dispatched = self.step_dispatched(qualname)
        fine = [not stepping and not any(start <= line <= end for line in dispatched for start, end in loop[4])
                for stepping, loop in zip(self._own_stepping(qualname), loops)]

        def spoil(index: int) -> None:  # the loop and every loop it is in
            while index >= 0:
                fine[index] = False
                index = loops[index][3]
        for index, loop in enumerate(loops):
            if not fine[index]:
                spoil(index)
            if loop[2]:  # the schedule's loop: neither it nor a loop in it is beside it
                for inner, other in enumerate(loops):
                    parent = other[3]
                    while parent >= 0 and parent != index:
                        parent = loops[parent][3]
                    if parent == index:
                        fine[inner] = False
        for line, target in self.calls_of(qualname):
            inner = self.innermost(loops, line)
            if inner < 0 or not fine[inner] or target == qualname or not self.enterable(target):
                continue
            if self.is_step_root(target) or self.holds_schedule(target):
                spoil(inner)
        found = self._beside[qualname] = tuple(fine)
        return found

    def once(self, qualname: str, plain: bool = False) -> tuple | None:
        """The line ranges of `qualname` that run once per call: its straight lines and the own
        lines of the loops that are outer all the way out. With `plain` (reached from a stage
        that runs no schedule), a loop over data counts as outer too. None where loops.py has
        no lines."""
        straight = self.straight.get(qualname)
        loops = self.loops.get(qualname)
        if straight is None or not loops:
            return straight
        outer = tuple(a or b for a, b in zip(self.outer(qualname), self.beside(qualname)))
        if plain:
            outer = tuple(a or b for a, b in zip(outer, self.items(qualname)))
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
