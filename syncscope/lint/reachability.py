"""Per-step code: what the functions that run every step reach through calls, and why.

A sync matters when the line runs in every serving step. The roots are the functions that do
(library_facts.toml `[roots] hot`, extended by `hot-roots`): `nn.Module.forward` and its
variants, model runners' `execute_model` / `sample_tokens` / `step`, metadata builders' `build`,
SGLang's `run_batch` / `forward_batch_generation`, ...). From them the call graph is walked:
* calls the whole-program pass resolved (wholeprogram.py: imports, `self`, typed attributes);
* a method call on a receiver of unknown class (`self.quant_method.apply(x)`) reaches every
  method of that name in the tree (names of containers and tensors excepted), since the
  receiver may be any of them whose class the caller can hold (importclosure.py: the caller's
  module and the class's meet in the import graph);
* a call on a line that never runs on CUDA or while serving (branches.py: `if _is_npu:`,
  debug switches, `except` handlers) is not followed, nor a call into code that runs once
  (`skip-functions`: `__init__`, `load_*`, warm-up and capture, memoized functions), nor into a
  function or file for another platform;
* a root-named method the program uses only on lines under a CUDA-graph capture test is no root
  (capture_roots.py: `if get_is_capture_mode(): self.forward_dual_stream(x)`), nor one it calls only
  once per request (request_roots.py: a stage's set-up) or at start-up (startup_roots.py).
A `forward` is a root by its name only in a class that is, or may be, an `nn.Module`
(modules.py). In a class that is not one (a diffusion pipeline stage) it is a per-request entry:
what it calls outside its loops runs once per request as well (walked on, the same way), the
lines inside the loops of all of these run every step (loops.py; a loop around the denoising
loop, over a request's chunks, runs once per chunk; in a stage that runs no schedule, a loop over
the request's data runs once per request: steploops.py), and so does everything a call on such a
line reaches. A per-request function reached from a per-step one is per-step whole.
Request intake (`[roots] request-intake`: `add_request`, an event loop's `process_input_requests`,
an adapter's `activate_adapter`) is called every step but takes in what arrived since the last
one, each once: the walk does not enter it from per-step code, and what only it reaches runs once
per request, loops included. So does request release (`[roots] request-release`: SGLang's
`release_kv_cache`, a connector's `request_finished`), called for each request that finished.
A finding is per-step when its function is reached and its line is not cold (nor a per-request
function's line outside its loops); it then carries the path from its root ("why"). Everything
else is cold: reported only on request.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections import deque

from .branches import platform_path
from .capture_roots import capture_only_roots
from .callguards import binds
from .toolpaths import tool_path
from .fact_values import PROP
from .library import LibraryFacts
from .platform_built import built_elsewhere
from .request_roots import request_only_roots
from .startup_roots import startup_only_roots
from .step_tables import ProgramTables
from .steploops import StepLoops
from syncscope.with_blocks import is_accepted

MAX_WHY = 6  # steps of the path from the root kept for the report
MAX_DISPATCH = 200  # a name defined by more methods than this is too generic to dispatch on


class ColdLines:
    """A file's cold line ranges, merged, for fast lookup: line -> why, or None. A block that
    accepts its syncs travels with them (with_blocks.py) but is no cold code: left out here."""

    def __init__(self, ranges) -> None:
        merged: list[list] = []
        for start, end, why in sorted(ranges):
            if is_accepted(why):
                continue
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end, why])
        self.starts = [m[0] for m in merged]
        self.merged = merged

    def why(self, line: int) -> str | None:
        index = bisect.bisect_right(self.starts, line) - 1
        if index >= 0 and line <= self.merged[index][1]:
            return self.merged[index][2]
        return None


def _shared_parts(one: str, other: str) -> int:
    """How many leading dotted parts two qualified names share."""
    shared = 0
    for a, b in zip(one.split("."), other.split(".")):
        if a != b:
            break
        shared += 1
    return shared


def _lifecycle(library) -> tuple:
    """The names of request intake and release: each runs once per request."""
    return (*getattr(library, "request_intake", ()), *getattr(library, "request_release", ()))


def _root_pattern(patterns) -> re.Pattern | None:
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)) if patterns else None


class PerStep:
    """Reachability from the per-step roots over the whole program."""

    def __init__(self, program, edges: dict, results: dict, library: LibraryFacts, guarded: dict,
                 cold_name=None, texts=None, built=None, demoted=frozenset(), tables=None) -> None:
        self.program = program
        # root-named methods that are no root: called once per request (request_roots.py), at
        # start-up (startup_roots.py), or only from code that never runs by default (offpaths.py)
        self.demoted = demoted
        self.cold_name = cold_name  # config.cold_function: names of code that runs once
        self.library = library
        self.cold = cold_lines(results, guarded)
        # the program's tables, the same for every walk of a pass (step_tables.py)
        self.tables = tables = tables if tables is not None else ProgramTables(program, results, library)
        self.other_platform, self.tools, self.overridden = tables.other_platform, tables.tools, tables.overridden
        self.dispatch, self.methods, self.module_functions = tables.dispatch, tables.methods, tables.module_functions
        self.kinds, self.receivers, self.imports = tables.kinds, tables.receivers, tables.imports
        self.straight, self.spans, self.module_of = tables.straight, tables.spans, tables.module_of
        self.edges = edges
        self.roots = _root_pattern(library.hot_roots)
        self._roots: dict[str, bool] = {}  # is_root's answers: asked for every function, several times
        self.intake = _root_pattern(_lifecycle(library))
        self.release = _root_pattern(getattr(library, "request_release", ()))
        # request intake and release (`[roots] request-intake`, `request-release`) that per-step
        # code calls: qualname -> (caller, line)
        self.intakes: dict[str, tuple] = {}
        # qualname -> (parent qualname or None, call line in the parent)
        self.reached: dict[str, tuple] = {}
        # classes only another platform's code builds: their methods never run on CUDA (platform_built.py)
        self.built_elsewhere = built if built is not None else \
            built_elsewhere(program, results, self.cold, self.other_platform, self.kinds.subclasses, texts)
        # the lines of a per-request function that run once per call: outside its loops, or in
        # a loop around the denoising loop (over chunks: steploops.py)
        self.steps = StepLoops(tables.loops, self.straight, self.calls_of, self.enterable,
                               lambda q: self.is_root(q) and not self.kinds.request_entry(q)
                               and not self.kinds.request_module_method(q), self.step_named,
                               self.step_dispatched)
        # per-request entries (modules.py) and what they reach outside loops: same shape as `reached`
        self.request: dict[str, tuple] = {}
        # of those, the ones reached from a stage that runs no schedule (steploops.py: their
        # loops over data run once per request too)
        self.plain: set[str] = set()
        self._step_named: dict[str, tuple] = {}
        self._step_dispatched: dict[str, tuple] = {}
        # of those, the ones that run once per request whole, loops included: what a module
        # that runs once per request (modules.py: a diffusion text encoder) reaches
        self.whole: set[str] = set()
        self._candidates: dict[str, list] = {}

    # -- what may be entered --------------------------------------------------------------
    def line_cold(self, path: str, line: int) -> str | None:
        cold = self.cold.get(path)
        return cold.why(line) if cold is not None else None

    def enterable(self, qualname: str) -> bool:
        facts = self.program.functions.get(qualname)
        if facts is None:
            return False
        # not hot: named like code that runs once (`skip-functions`), or memoized; a memoized
        # function still runs its body per key (per step when a tensor is the key)
        if not facts.get("hot", True) and (self.cold_name is None or self.cold_name(qualname.rsplit(".", 1)[-1])):
            return False
        path = self.program.path_of[qualname]
        if self.other_platform.get(path) or self.tools.get(path) or qualname in self.overridden \
                or qualname.rpartition(".")[0] in self.built_elsewhere:
            return False
        return self.line_cold(path, facts["line"]) is None

    def is_root(self, qualname: str) -> bool:
        found = self._roots.get(qualname)
        if found is None:
            found = self._roots[qualname] = self._is_root(qualname)
        return found

    def _is_root(self, qualname: str) -> bool:
        owner, _, short = qualname.rpartition(".")
        if not self.roots or qualname in self.demoted:
            return False
        if self.roots.match(short):
            return True
        # `Class.method` patterns match methods only
        return owner in self.program.classes and bool(self.roots.match(f"{owner.rsplit('.', 1)[-1]}.{short}"))

    def is_intake(self, qualname: str) -> bool:
        """`qualname` takes in new requests (`[roots] request-intake`): it runs once per request."""
        return self.intake is not None and _matches(self.intake, qualname, self.program.classes)

    def step_named(self, qualname: str) -> tuple:
        """The lines of `qualname`'s calls named like per-step work (`x.forward(...)`,
        `self.scheduler.step(...)`: a `[roots] hot` name), whatever they resolve to. An
        attribute read that is no call (facts.py records it as a possible property) counts
        only when it names a module method (`fn = self.transformer.forward`, called later):
        `decode_output.sample`, `self.step` are data as often as not (a VAE output's tensor
        field, a counter); a read the tree resolves to a property is followed as a call."""
        found = self._step_named.get(qualname)
        if found is None:
            calls = (self.program.functions.get(qualname) or {}).get("calls", ())
            found = tuple(call.line for call in calls if self.roots is not None and self.roots.match(call.name or "")
                          and (call.target[0] != PROP or self.kinds.methods is not None
                               and self.kinds.methods.match(call.name or "")))
            self._step_named[qualname] = found
        return found

    def step_dispatched(self, qualname: str) -> tuple:
        """The lines of `qualname`'s method calls on receivers of unknown class named like
        per-step work (`stream_scheduler.step(...)` on a loop's local): dispatched by name, never
        to a root (candidates()), so neither step_named nor calls_of shows them."""
        found = self._step_dispatched.get(qualname)
        if found is None:
            found = tuple(line for line, name, _op, _shape in self.dispatch.get(qualname, ())
                          if self.roots is not None and self.roots.match(name))
            self._step_dispatched[qualname] = found
        return found

    # -- the walk -----------------------------------------------------------------------
    def run(self) -> dict[str, tuple]:
        queue: deque[str] = deque()
        entries, modules = [], []
        capture_only = capture_only_roots(self)
        for qualname in sorted(self.program.functions):
            if self.is_root(qualname) and self.enterable(qualname) and qualname not in capture_only:
                if self.kinds.request_entry(qualname):
                    entries.append(qualname)
                elif self.kinds.request_module_method(qualname):
                    modules.append(qualname)
                else:
                    self.reached[qualname] = (None, 0)
                    queue.append(qualname)
        self.walk(queue)
        self.per_request(entries)
        self.per_request_modules(modules)
        self.per_request_intake()
        return self.reached

    def calls_of(self, caller: str):
        """(line, callee) of each call `caller` makes that may run: the resolved calls, and by
        name those on receivers of unknown class."""
        for line, target, _resolved in self.calls_told(caller):
            yield line, target

    def calls_told(self, caller: str):
        """`calls_of`, each call with whether it is resolved (else it goes by name)."""
        path = self.program.path_of[caller]
        resolved = set()
        for call, target, _shift in self.edges.get(caller, ()):
            if target not in self.receivers.stubs:  # a stub's call runs an override: by name (stubs.py)
                resolved.add((call.line, call.name))
            if self.line_cold(path, call.line) is None:
                yield call.line, target, True
        dispatched = self.dispatch.get(caller, ())
        module = self.module_of.get(path)
        owner = caller.rpartition(".")[0]
        owner = owner if owner in self.program.classes else None
        on_modules = self.receivers.limits(caller) if dispatched else {}
        for line, name, op, shape in dispatched:
            if (line, name) in resolved:  # the receiver's class is known: that call is followed above
                continue
            candidates = self.module_functions.get(name, ()) if op else self.candidates(name)
            if not candidates or len(candidates) > MAX_DISPATCH or self.line_cold(path, line) is not None:
                continue
            limit = on_modules.get((line, name))
            for target in candidates:
                if limit is not None and not self.receivers.within(limit, target):
                    continue
                if not op and not self.imports.knows(module, target.rpartition(".")[0], owner):
                    continue  # a class of another program part: the two never meet in the imports
                if op or binds(self.program.functions[target], shape):
                    yield line, target, False

    def candidates(self, name: str) -> list[str]:
        """The methods a call `x.<name>(...)` on a receiver of unknown class may reach, less the
        per-step roots (reached anyway): with them, `x.forward(...)` would name every module's
        `forward` and be too generic to follow, and an attention implementation's `forward`
        (not a module's, so not a root) that a layer calls as `self.impl.forward(...)` would
        never be reached."""
        found = self._candidates.get(name)
        if found is None:
            found = [t for t in self.methods.get(name, ()) if not self.is_root(t) or self.kinds.request_entry(t)]
            self._candidates[name] = found
        return found

    def walk(self, queue: deque) -> None:
        """Breadth first from `queue`, a level at a time. A function that several callers of
        one level reach keeps the nearest as its caller in `why`: a resolved call before one by
        name, then the caller whose qualified name shares the most dotted parts with its own
        (SGLang's LLM attention backends, which the diffusion attention's
        `self.attn_impl.forward(...)` reaches by name, are explained by the LLM's own attention
        layer, not by the diffusion one whose root sorts first). Which functions are reached,
        and at what depth, is what a first-come walk finds."""
        level = list(queue)
        while level:
            found: dict[str, tuple] = {}  # target -> (rank, caller, line), in the order first reached
            for caller in level:
                for line, target, resolved in self.calls_told(caller):
                    if target in self.reached:
                        continue
                    if target not in found:  # (one already found is enterable and no intake)
                        if not self.enterable(target):
                            continue
                        if self.is_intake(target):  # runs once per request: walked last
                            self.intakes.setdefault(target, (caller, line))
                            continue
                    rank = (not resolved, -_shared_parts(caller, target))
                    if target not in found or rank < found[target][0]:
                        found[target] = (rank, caller, line)
            for target, (_rank, caller, line) in found.items():
                self.reached[target] = (caller, line)
            level = list(found)

    def per_request(self, entries: list[str]) -> None:
        """From the per-request entry points (modules.py): what they call on lines outside
        loops runs once per request too; what they call inside a loop (a denoising loop calling
        the scheduler's `step`) runs every step, and so does what that reaches."""
        # the stages that run a schedule first: what both kinds reach keeps its step loops
        scheduled = [q for q in entries if self.steps.holds_schedule(q)]
        for group, plain in ((scheduled, False), ([q for q in entries if q not in scheduled], True)):
            queue = deque(q for q in group if q not in self.reached and q not in self.request)
            for qualname in queue:
                self.request[qualname] = (None, 0)
                if plain:
                    self.plain.add(qualname)
            while queue:
                caller = queue.popleft()
                if caller in self.reached:
                    continue
                once = self.steps.once(caller, caller in self.plain)
                for line, target in self.calls_of(caller):
                    if target in self.reached or not self.enterable(target):
                        continue
                    if self.is_intake(target):  # once per request or adapter, loops included
                        self.intakes.setdefault(target, (caller, line))
                        continue
                    if once is not None and not _inside(once, line):
                        self.reached[target] = (caller, line)
                        self.walk(deque([target]))
                    elif target not in self.request:
                        self.request[target] = (caller, line)
                        # a stage another stage runs (a router's `self.stage.forward(batch, ...)`)
                        # is judged by its own loops; any other function by its caller's
                        # a helper a stage calls before or after its schedule's loop (on a line
                        # that runs once per call) and that runs no schedule itself: a set-up
                        # step (`_before_denoising_loop`), its loops over data once per call too
                        if not self.steps.holds_schedule(target) \
                                or not self.kinds.request_entry(target) and caller in self.plain:
                            self.plain.add(target)
                        queue.append(target)
        for qualname in [q for q in self.request if q in self.reached]:
            del self.request[qualname]
            self.plain.discard(qualname)

    def per_request_modules(self, entries: list[str]) -> None:
        """From the `forward`s of modules that run once per request (modules.py): everything
        they reach, loops included (a loop over an encoder's layers or a request's images is no
        step), runs once per request, unless per-step code reaches it too (walked before) or a
        stage's loop does (a prompt enhancer's `generate` loop calling the encoder's `forward`:
        walked before, as per step)."""
        self._walk_per_request(entries)

    def per_request_intake(self) -> None:
        """From the request intake that per-step code calls (`add_request`, an event loop's
        `process_input_requests`): everything it reaches, loops included (a loop over the new
        requests), runs once per request, unless per-step code reaches it too (walked before)."""
        self._walk_per_request(self.intakes)

    def _walk_per_request(self, entries) -> None:
        """Everything `entries` reach that per-step code does not, loops included, as once per
        request (each target kept with the caller and line that reach it first)."""
        queue = deque(q for q in entries if q not in self.reached and q not in self.request)
        for qualname in queue:
            self.request[qualname] = (None, 0)
            self.whole.add(qualname)
        while queue:
            caller = queue.popleft()
            for line, target in self.calls_of(caller):
                if target in self.reached or target in self.request or not self.enterable(target):
                    continue
                self.request[target] = (caller, line)
                self.whole.add(target)
                queue.append(target)

    def request_lines(self) -> dict[str, list]:
        """{path: [(start, end, why)]}: the lines of per-request functions that run once per
        request (outside their loops), with the entry point that reaches them."""
        out: dict[str, list] = {}
        for qualname in self.request:
            once = self.steps.once(qualname, qualname in self.plain)
            if qualname in self.whole:
                span = self.spans.get(qualname)
                once = (span,) if span else once
            if not once:
                continue
            entry = helper = qualname
            while self.request[entry][0] is not None:
                # name the stage that runs no schedule, not a router above it that runs it
                if qualname in self.plain and entry in self.plain and self.kinds.request_entry(entry):
                    break
                entry = self.request[entry][0]
                helper = entry if entry in self.plain else helper
            short = ".".join(entry.rsplit(".", 2)[-2:])
            if qualname in self.plain and entry not in self.plain and entry not in self.intakes:
                # a helper that runs no schedule, called outside a scheduled stage's step loop
                why = (f"runs once per request, not per step: `{'.'.join(helper.rsplit('.', 2)[-2:])}` runs no "
                       f"denoising loop and is called outside the step loop of `{short}`, a per-request entry")
            elif entry in self.intakes and self.release is not None and _matches(self.release, entry, self.program.classes):
                why = f"runs once per request, not per step: `{short}` releases a finished request (request release)"
            elif entry in self.intakes:
                why = (f"runs once per request, not per step: `{short}` takes in new requests or the adapters "
                       f"they name (request intake)")
            elif qualname in self.whole:
                built = "built only by input processors" if self.kinds.processor_built(entry.rpartition(".")[0]) \
                    else "an encoder, or built only inside one"
                why = f"runs once per request, not per step: `{short}` is a module that runs once per request ({built})"
            elif qualname in self.plain:
                why = (f"runs once per request, not per step: `{short}` is a per-request entry (its class is not an "
                       f"nn.Module) that runs no denoising loop")
            else:
                why = f"runs once per request, not per step: `{short}` is a per-request entry (its class is not an nn.Module)"
            out.setdefault(self.program.path_of[qualname], []).extend((start, end, why) for start, end in once)
        return out

    def why(self, qualname: str) -> tuple:
        """The path from the root: ((qualname, path, line of the call into the next), ...),
        root first, at most MAX_WHY steps (the root and the last steps are kept)."""
        steps = []
        current, seen = qualname, set()
        while current is not None and current not in seen:
            seen.add(current)
            parent, line = self.reached[current] if current in self.reached else self.request[current]
            steps.append(current)
            current = parent
        steps.reverse()
        if len(steps) > MAX_WHY:
            steps = steps[:1] + steps[-(MAX_WHY - 1):]
        return tuple((q, self.program.path_of[q], self.program.functions[q]["line"]) for q in steps)


def _matches(pattern: re.Pattern, qualname: str, classes) -> bool:
    """A `[roots]` pattern matches the function's name, or `Class.method` for a method."""
    owner, _, short = qualname.rpartition(".")
    if pattern.match(short):
        return True
    return owner in classes and bool(pattern.match(f"{owner.rsplit('.', 1)[-1]}.{short}"))


def _inside(ranges, line: int) -> bool:
    return any(start <= line <= end for start, end in ranges)


def cold_lines(results: dict, guarded: dict) -> dict[str, ColdLines]:
    """Each file's cold lines: its own (branches.py) and the None-guards its callers rule out."""
    return {path: ColdLines(tuple(getattr(result, "branch_cold", ()) or ()) + tuple(guarded.get(path, ())))
            for path, result in results.items()}


def per_step_table(program, edges: dict, results: dict, library: LibraryFacts, guarded: dict,
                   cold_name=None, const=None, plain=frozenset(), texts=None,
                   off=frozenset()) -> tuple[dict[str, tuple] | None, dict[str, list]]:
    """(qualname -> why (the path from its root) for every per-step or per-request function,
    or None when the linted code has no root at all (then only cold lines are left out);
    {path: [(start, end, why)]}: the per-request functions' lines that run once per request,
    and (with `const`, constargs.ConstArgs) the guarded blocks no per-step call takes). `off`:
    methods off by default (offpaths.py), no root whatever their name."""
    walk = PerStep(program, edges, results, library, guarded, cold_name, texts=texts, demoted=off)
    walk.run()
    if not walk.reached and not walk.request:
        return None, {}  # no per-step root in the linted code (a script, a kernel library): no scope
    untaken: dict[str, list] = {}
    demoted = request_only_roots(walk) | startup_only_roots(walk, cold_name)
    if const is not None or demoted:
        from .stepargs import StepArgs

        untaken, calls = StepArgs(program, walk, const, plain).cold_blocks() if const is not None else ({}, {})
        if untaken or demoted:
            # a walk's own tables (~20 MB on whole vLLM) are held in cycles (the bound methods
            # its StepLoops keeps): freed here, before the second walk builds its own; the
            # program's tables (step_tables.py) go on to it
            built, tables = walk.built_elsewhere, walk.tables
            _release(walk)
            del walk
            # walk again without following the calls in those blocks (a helper that only a
            # shutdown path's `wait=True` reaches); fewer callers only rule out more
            merged = {path: list(guarded.get(path, ())) + untaken.get(path, []) for path in guarded.keys() | untaken.keys()}
            walk = PerStep(program, edges, results, library, merged, cold_name, built=built, demoted=demoted | off,
                           tables=tables)
            walk.run()
    table = {qualname: walk.why(qualname) for qualname in walk.reached}
    table.update((qualname, walk.why(qualname)) for qualname in walk.request)
    once = walk.request_lines()
    for table_of in (untaken, calls) if const is not None else ():
        for path, lines in table_of.items():
            once[path] = once.get(path, []) + lines
    _release(walk)  # before the rest of the pass builds its tables
    del walk
    return table, once


def _release(walk: PerStep) -> None:
    """Let go of a walk's tables (~20 MB on whole vLLM) now. Its StepLoops holds bound methods
    of the walk, a cycle that only a full collection would free, and a full collection scans
    every table the pass has built so far (~0.7 s each on whole vLLM, twice a run): the cycle
    is cut instead (clearing the walk's attributes drops its StepLoops), and reference counting
    frees the rest."""
    walk.__dict__.clear()


def cold_calls_removed(program, edges: dict, results: dict, guarded: dict, library=None) -> dict:
    """The call graph without the calls on cold lines (a helper that syncs only under
    `if envs.DEBUG:` does not sync for its callers), nor the calls from serving code into a
    tool's file (toolpaths.py: a canary syncs only where it is turned on), and the program's
    sync roots likewise; nor the calls from other code into another platform's file (a hook in
    `hardware_backend/npu/` that the shared scheduler calls, whose body returns early unless the
    pool is the NPU one: its lines are cold by their path, and so is what they sync for a caller)."""
    cold = cold_lines(results, guarded)
    tools = {path for path in results if tool_path(path, library)} if library is not None else set()
    others = platform_files(results, library)
    kept_edges = {}
    for caller, out in edges.items():
        lines = cold.get(program.path_of[caller])
        kept = [e for e in out if lines is None or lines.why(e[0].line) is None] if lines and lines.merged else out
        if tools and program.path_of[caller] not in tools:
            kept = [e for e in kept if program.path_of.get(e[1]) not in tools]
        if others and program.path_of[caller] not in others:
            kept = [e for e in kept if program.path_of.get(e[1]) not in others]
        kept_edges[caller] = kept
    for qualname, roots in list(program.roots.items()):
        path = program.path_of.get(qualname)
        lines = cold.get(path) if path else None
        if lines is not None and lines.merged:
            program.roots[qualname] = [(p, r) for p, r in roots if lines.why(r.line) is None]
    return kept_edges


def platform_files(results: dict, library=None) -> frozenset:
    """The linted files for another platform than CUDA, by their path (branches.platform_path)."""
    return frozenset(path for path in results if platform_path(path, library)) if library is not None else frozenset()


def intake_calls_removed(program, edges: dict, library) -> dict:
    """The call graph without the calls into request intake and release (`[roots] request-intake`,
    `request-release`): what they sync, they sync once per request, not in the caller's step. The
    per-step walk keeps them (PerStep.per_request_intake), to say why their own lines are cold."""
    intake = _root_pattern(_lifecycle(library)) if library is not None else None
    if intake is None:
        return edges
    kept_edges = {}
    for caller, out in edges.items():
        kept = [e for e in out if not _matches(intake, e[1], program.classes)]
        kept_edges[caller] = kept if len(kept) < len(out) else out  # one list, not two, where none goes
    return kept_edges
