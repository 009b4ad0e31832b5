"""Branches that no per-step caller's arguments take: a guarded sync that only a rare caller runs.

A callee's `if` tested on its parameters (constargs.py compiles it) may be taken by some calls
and not by others. flagguards.py makes such a branch cold when no call in the whole tree can
take it; constargs.py rules out one call's chain. What is left is a branch that some call
takes, but not one on a per-step path:

    def submit_batches(self, executor, run_batch, *, wait: bool = False):
        ...
        if wait:
            record.source_event.synchronize()   # only `close()` passes `wait=True`

vLLM's Mooncake producer is flushed every step with `wait` left out, and once with `wait=True`
at shutdown. So after the per-step walk (reachability.py) this module asks, for each guarded
block of a per-step function, whether any per-step call into it may take it: the call's
literals and the literal defaults it leaves out decide the test three-valued; a call that
passes on a parameter of its own (`get_top_logprobs(x, k, no_copy_to_cpu)` ->
`get_top_logprobs_raw(..., no_copy_to_cpu=no_copy_to_cpu)`) hands the test, renamed, to its own
per-step callers (SGLang's sampler passes `no_copy_to_cpu=True`); so does one that hands on its
own `**kwargs` (vLLM's `fmha_sm100(..., **kwargs)` -> `_fmha_sm100(..., check_input_valid=False)`:
the key absent from every per-step call's keywords leaves the default). A block no per-step call may
take is cold for the findings on it and its calls are not followed by the walk; the callee's
summary keeps the sync for the callers that do take it (constargs.py reports those per call).

May take it (the block stays): a per-step root or a function called from outside the tree (no
per-step call in it: its arguments are unknown), a method whose name per-step code calls on a
receiver of unknown class (whether the walk follows that call or not), a call with `*args`/`**kwargs` that does not name the parameter, any argument
that is not a literal or a parameter passed on unchanged, and more than MAX_DEPTH pass-throughs.
"""

from __future__ import annotations

from .constargs import evaluate, render, substitute, test_params

MAX_DEPTH = 6  # pass-throughs followed up the callers; deeper counts as may take it


class StepArgs:
    def __init__(self, program, walk, const, plain=frozenset()) -> None:
        self.program = program
        # (function, line) of calls whose callee also syncs with no guard on this call (its own
        # sync, or one on a parameter): such a line is never cold for a guard passed on
        self.plain = plain
        self.walk = walk  # reachability.PerStep, after its run
        self.const = const  # constargs.ConstArgs
        self.live = set(walk.reached) | set(walk.request)
        # callee -> [(caller, (call, shift) or None for a call dispatched by name)], per-step calls only
        self.incoming: dict[str, list] = {}
        for caller in self.live:
            resolved: dict[tuple, list] = {}
            for call, target, shift in walk.edges.get(caller, ()):
                resolved.setdefault((call.line, target), []).append((call, shift))
            for line, target in set(walk.calls_of(caller)):
                for entry in resolved.get((line, target)) or [None]:
                    self.incoming.setdefault(target, []).append((caller, entry))
        # names called on receivers of unknown class from per-step code: such a call may reach
        # any method of that name with any arguments, also where the walk does not follow it
        # (more candidates than MAX_DISPATCH: SGLang's `self.graph_runners.run(...)`)
        self.by_name: set[str] = set()
        for caller in self.live:
            path = program.path_of[caller]
            resolved = {(call.line, call.name) for call, _, _ in walk.edges.get(caller, ())}
            self.by_name.update(name for line, name, op, _ in walk.dispatch.get(caller, ())
                                if not op and (line, name) not in resolved and walk.line_cold(path, line) is None)
        self._memo: dict[tuple, bool] = {}

    def may_take(self, qualname: str, test: tuple, depth: int = 0) -> bool:
        """May a per-step call into `qualname` pass arguments for which `test` (over its
        parameters) is not false?"""
        key = (qualname, test)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # while deciding: a call cycle back here adds no new way in
        answer = self._decide(qualname, test, depth)
        self._memo[key] = answer
        return answer

    def _decide(self, qualname: str, test: tuple, depth: int) -> bool:
        if self.walk.is_root(qualname) or qualname not in self.incoming or depth > MAX_DEPTH:
            return True  # the framework or code outside the tree calls it: arguments unknown
        if qualname.rpartition(".")[0] in self.program.classes and qualname.rsplit(".", 1)[-1] in self.by_name:
            return True  # a method per-step code may call by name, arguments unseen
        for caller, entry in self.incoming[qualname]:
            if entry is None or qualname not in self.const.guards:
                return True
            call, shift = entry
            env = self.const.env(self.program.path_of[caller], call, qualname, shift, passed_on=True,
                                 wanted=test_params(test), caller=caller)
            seen = substitute(test, env)
            if evaluate(seen, {}) is False:
                continue
            if not test_params(seen) or caller not in self.const.guards:
                return True  # decided true, unknown, or on a caller whose parameters were not recorded
            if self.may_take(caller, seen, depth + 1):
                return True
        return False

    def cold_blocks(self) -> tuple[dict[str, list], dict[str, list]]:
        """({path: [(start, end, why)]} of the guarded blocks of per-step functions that no
        per-step call may take (a block under several guards needs all of them), the same for
        the calls that sync only under such a test passed on (constargs `derive`): those calls
        still run, so the walk goes on through them)."""
        blocks: dict[str, list] = {}
        calls: dict[str, list] = {}
        for qualname in sorted(self.live):
            entry = self.const.guards.get(qualname)
            if not entry or self.walk.is_root(qualname):
                continue
            own = list(entry[1])
            items = own + self.const.derived.get(qualname, [])
            taken_lines = set()  # call lines with a sync under a test passed on that may be taken
            untaken = []
            for index, (start, end, test) in enumerate(items):
                around = [t for s, e, t in own if s <= start and end <= e and t is not test]
                both = test if not around else ("and", (test, *around))
                if self.may_take(qualname, both):
                    if index >= len(own):
                        taken_lines.add(start)
                    continue
                untaken.append((index, start, end, test))
            for index, start, end, test in untaken:
                if index >= len(own) and (start in taken_lines or (qualname, start) in self.plain):
                    continue  # the call also syncs under another test a per-step call may take, or under none
                short = qualname.rsplit(".", 1)[-1]
                out = blocks if index < len(own) else calls
                what = "runs only when" if index < len(own) else "syncs only when"
                out.setdefault(self.program.path_of[qualname], []).append(
                    (start, end, f"{what} `{render(test)}` in `{short}`, and no per-step call "
                                 f"passes arguments that take it"))
        return blocks, calls
