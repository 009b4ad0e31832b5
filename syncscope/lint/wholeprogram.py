"""The whole-program pass: per-function sync summaries over the linted tree, and the findings
they give at call sites (SYN601, SYN602).

Runs after every file was analyzed (or cached), on plain data: each file's function facts
(facts.py) and sync roots (the rules' findings, analyzer.py). Nothing is parsed here.

A function's summary says:
* `sync`: it syncs whatever it is given (a root not tied to a parameter, a call that syncs, or
  a device value passed where the callee syncs on it), with the chain down to the root line;
* `cond[p]`: it syncs if parameter `p` is on the device (the root is on `p`, or on a value
  computed from `p` by slicing, arithmetic or tensor methods, at any depth of calls);
* `gsync[k]`: it syncs whatever it is given, but only inside the `if` blocks `k` tested on its
  parameters (constargs.py): a call whose literal arguments make one of those tests false
  does not sync (`plan(..., num_kv_splits=1)` into `if num_kv_splits < 1: cost.tolist()`);
* `ruled`: it does not sync, but would if not for a call's constants further down (the chain
  and why): its callers' call sites are reported cold, with that reason, not dropped;
* `ret`: where its result lives (host, device, Python), or "where parameter p lives".
Summaries are computed to a fixpoint over the call graph (a worklist; a chain is kept only when
it is shorter, or the code does not accept it where it accepted the one kept: summaries.py).

Findings at call sites in hot code: SYN602, the callee (function, method, property getter)
syncs whatever it is given; SYN601, the call passes a device value where the callee syncs on it.
"""

from __future__ import annotations

from types import MappingProxyType

from . import provenance as P
from .fact_devices import DEVICE_ELEMENT
from .fact_values import METHOD, NAMED_LIST, PROP, SUPER, UNKNOWN_FACT
from .kwargs_forwards import forwarded_names
from .origin_calls import joined, origin_calls
from .param_items import container_of, is_items, items_argument
from .program import Program, module_prefix
from .records import CallRecord, ChainStep, FileFinding
from .summaries import Summary, accepted_chain

MAX_CHAIN = 12  # deeper chains are kept at this length (the root is always the last step)
NO_ENTRIES = MappingProxyType({})  # a computed Summary's empty tables share it (3 dicts each: ~7 MB on vLLM)


class Solver:
    def __init__(self, program: Program, const=None) -> None:
        self.program = program
        self.const = const  # constargs.ConstArgs: guards a caller's literal arguments may rule out
        self.edges: dict[str, list[tuple[CallRecord, str, int]]] = {}  # caller -> [(call, target, shift)]
        self.all_edges = self.edges  # with the calls on cold lines too (where findings are made)
        # callee -> its callers, in file order (a dict: a set iterates in hash order, which made
        # the chain reported among equally short ones change from run to run); method -> who
        # reads its result with no call edge (`given_method`)
        callers: dict[str, dict[str, None]] = {}
        readers: dict[str, dict[str, None]] = {}
        # `self.visual(x, grid_thw)` -> the submodule's `forward`: only where its arguments come
        # from (host_fed); as a call edge every sync of a per-step root would be reported again
        self.module_edges: dict[str, list[tuple[CallRecord, str, int]]] = {}
        for qualname, facts in program.functions.items():
            out = []
            for call in facts["calls"]:
                target = program.resolve(call.target)
                if target is None or target not in program.functions:
                    given = program.answering(call.target) if target is None else None  # its changes reach us
                    if given in program.functions:
                        readers.setdefault(given, {})[qualname] = None
                    target = program.module_call(call.target, qualname) if target is None else None
                    if target is not None:
                        shift = program.shift(call.target, target)
                        self.module_edges.setdefault(qualname, []).append((call, target, shift))
                    continue
                out.append((call, target, program.shift(call.target, target)))
                callers.setdefault(target, {})[qualname] = None
            self.edges[qualname] = out
        self.callers, self.readers = callers, readers
        self.summaries: dict[str, Summary] = {q: Summary(program.accepted_lines) for q in program.functions}
        self._by_class: dict[str, list[str]] | None = None  # class -> its methods (_overrides)
        self.foreign: frozenset = frozenset()  # files for another platform (reachability.platform_files)
        self.intakes: frozenset = frozenset()  # request intake and release the calls go into (solve)
        self.forwards: frozenset = frozenset()  # (caller, line, column): a call handing on its `**kwargs` whole

    def run(self, seeds=None) -> None:  # seeds: those to compute again (and their callers); all
        pending = list(self.program.functions if seeds is None else seeds)
        queued = set(pending)
        rounds = 0
        limit = 50 * max(1, len(self.program.functions))
        while pending and rounds < limit:
            rounds += 1
            qualname = pending.pop()
            queued.discard(qualname)
            before = self.summaries[qualname].key()
            self.summaries[qualname] = self.compute(qualname)
            if self.summaries[qualname].key() != before:
                for caller in (*self.callers.get(qualname, ()), *self.readers.get(qualname, ())):
                    if caller not in queued:
                        queued.add(caller)
                        pending.append(caller)

    # -- one function ------------------------------------------------------------------
    def compute(self, qualname: str) -> Summary:
        program = self.program
        facts = program.functions[qualname]
        path = program.path_of[qualname]
        summary = Summary(program.accepted_lines)
        for root_path, root in program.roots.get(qualname, ()):
            param = root.param
            if param is None and root.origin is not None:
                # the value comes from a call: its callee's return summary decides
                where, follows = self.origin_value(qualname, root.origin, root.line, root.stmt_start)
                if follows is None and P.known_host(where):
                    continue
                param = follows
            step = (ChainStep(root_path, root.line, qualname, f"{root.code} {_short(root.message)}"),)
            if param is None:
                summary.add_sync(self._under(qualname, root.line), step)
            else:
                summary.add_cond(param, self._under(qualname, root.line), step)
        for call, target, shift in self.edges.get(qualname, ()):
            here = ChainStep(path, call.line, qualname, f"calls `{call.name}`")
            if not self.add_call_syncs(summary, qualname, path, call, target, shift, here):
                ruled = self.call_ruled(path, call, target, shift)
                if ruled is not None and (summary.ruled is None or len(ruled[0]) + 1 < len(summary.ruled[0])):
                    summary.ruled = (_join(here, ruled[0]), ruled[1])
            for param, sub, key, why in self.call_conds(qualname, path, call, target, shift):
                where, follows = self.argument(qualname, call, target, shift, param)
                # passing its own parameter on, typed `torch.Tensor` or not: where the tensor
                # lives is the callers' to tell (`torch.from_numpy(a)` passed through a helper
                # that `.item()`s it is no sync). A hot function nothing calls, or one called
                # with a tensor, is still flagged at its call (findings: `entry`, tensor-typed).
                # The receiver keeps its old reading: an object whose fields a callee syncs on
                # (`self.seq_lens_cpu` in a property) syncs for whoever holds it.
                on_receiver = shift == 1 and param == self.program.functions[target]["params"][0]
                if why is not None:
                    # this call's constants rule it out: a device value passed would be a sync
                    # but for them (its callers' call sites are reported cold, as for `gsync`)
                    if follows is None and P.maybe_device(where) and \
                            (summary.ruled is None or len(sub) + 1 < len(summary.ruled[0])):
                        summary.ruled = (_join(here, sub), why)
                elif follows is not None and (not P.is_tensor_like(where) or not on_receiver):
                    summary.add_cond(follows, key, _join(here, sub))
                elif P.maybe_device(where):
                    summary.add_sync(key, _join(here, sub))
        summary.ret = self.returns(qualname, facts)
        summary.elements = self.tuple_returns(qualname, facts)
        summary.gsync, summary.cond, summary.gcond = (t or NO_ENTRIES for t in (summary.gsync, summary.cond, summary.gcond))
        return summary

    def add_call_syncs(self, summary: Summary, qualname: str, path: str, call: CallRecord, target: str,
                       shift: int, here: ChainStep) -> bool:
        """Add what the call syncs whatever it passes to the caller's summary: the callee's
        unconditional chain, or each guarded one this call's literals do not rule out, under the
        caller's own guards of the line and, where the call passes on a parameter the callee's
        guard tests, under that test in the caller's terms (constargs `derive`). False: none."""
        callee = self.summaries[target]
        under = self._under(qualname, call.line)
        if callee.sync is not None:
            summary.add_sync(under, _join(here, callee.sync))
            return True
        added = False
        for key, chain in callee.gsync.items():
            if self.const.ruled_out(path, call, target, shift, key) is not None:
                continue
            derived = self.const.derive(qualname, path, call, target, shift, key)
            summary.add_sync(tuple(sorted(set(under) | set(derived))), _join(here, chain))
            added = True
        return added

    def call_conds(self, qualname: str, path: str, call: CallRecord, target: str, shift: int) -> list:
        """[(parameter, chain, guards, why)] of the callee's syncs on a parameter, shortest
        first, with the guards in the caller's terms: the line's own `if` blocks and, for a
        guarded one, its test on what the call passes on (constargs `derive`). `why` is None,
        or why the call's constants rule that one out (then it does not sync for this call)."""
        callee = self.summaries[target]
        under = self._under(qualname, call.line)
        out = [(param, sub, under, None) for param, sub in callee.cond.items()]
        for (param, key), sub in callee.gcond.items():
            why = self.const.ruled_out(path, call, target, shift, key)
            derived = () if why is not None else self.const.derive(qualname, path, call, target, shift, key)
            out.append((param, sub, tuple(sorted(set(under) | set(derived))), why))
        return sorted(out, key=lambda item: len(item[1]))

    def _under(self, qualname: str, line: int) -> tuple:
        return self.const.under(qualname, line) if self.const is not None else ()

    def call_sync(self, path: str, call: CallRecord, target: str, shift: int) -> tuple | None:
        """The callee's chain that syncs for this call whatever it passes: unconditional, or
        under guards this call's literal arguments do not rule out; None when there is none."""
        callee = self.summaries[target]
        if callee.sync is not None:
            return callee.sync
        best = None
        for key, chain in callee.gsync.items():
            if self.const.ruled_out(path, call, target, shift, key) is None and callee.better(best, chain):
                best = chain
        return best

    def call_ruled(self, path: str, call: CallRecord, target: str, shift: int) -> tuple | None:
        """(chain, why) when the callee would sync for this call but for constant arguments
        (this call's, or a call's further down); None otherwise. Only asked when it does not."""
        callee = self.summaries[target]
        if callee.gsync:
            key, chain = min(callee.gsync.items(), key=lambda item: len(item[1]))
            return chain, self.const.ruled_out(path, call, target, shift, key)
        return callee.ruled

    def argument(self, caller: str, call: CallRecord, target: str, shift: int, param: str) -> tuple:
        """(where, caller parameter it follows) of the value a call passes for `param`."""
        if is_items(param):  # the items of a parameter's container (param_items.py)
            if self._passed(call, target, shift, container_of(param))[2] == NAMED_LIST:
                return (P.TENSOR, None)  # `masks_list`: a list's name says nothing of its items
            return items_argument(*self.argument(caller, call, target, shift, container_of(param)))
        params = self.program.functions[target]["params"]
        receiver = shift == 1 and params and param == params[0]
        for position, keyword, fact in call.args:
            if position == -1:
                if receiver:
                    return self.value(caller, fact)
                continue
            if keyword == param or (position is not None and position + shift < len(params)
                                    and params[position + shift] == param):
                return self.value(caller, fact)
        if receiver:
            return (P.UNKNOWN, None)  # called through an object we know nothing of
        if (caller, call.line, call.column) in self.forwards and param not in self.program.all_params(caller):
            return (P.UNKNOWN, param)  # in the caller's `**kwargs`: what its callers pass by that name
        return (P.PY, None)  # not passed: its default, a Python value

    def _passed(self, call: CallRecord, target: str, shift: int, param: str) -> tuple:
        """The fact of what a call passes for `param` (not the receiver); UNKNOWN_FACT when it
        passes nothing for it."""
        params = self.program.functions[target]["params"]
        for position, keyword, fact in call.args:
            if position != -1 and (keyword == param or (position is not None and position + shift < len(params)
                                                        and params[position + shift] == param)):
                return fact
        return UNKNOWN_FACT

    def value(self, caller: str, fact: tuple, depth: int = 0) -> tuple:
        where, param, call_index = fact
        if param is not None:
            return (where, param)
        if call_index is None or call_index == NAMED_LIST or depth > 8:
            return (where, None)
        element = None
        if isinstance(call_index, tuple):  # element k of a call's (tuple) result
            call_index, element = call_index
        calls = self.program.functions[caller]["calls"]
        if call_index >= len(calls):
            return (where, None)
        call = calls[call_index]
        target = self.program.resolve(call.target) or self.program.answering(call.target)
        if element is not None and element <= DEVICE_ELEMENT:  # `x.to(d)`, d element k (fact_devices)
            return (P.HOST if DEVICE_ELEMENT - element in self.program.host_devices.get(target, ()) else where, None)
        if target is None or target not in self.summaries:
            hinted = self.program.field_where(call.target)
            return (_item(hinted if hinted is not None else where, element), None)
        summary = self.summaries[target]
        if element == -1:  # `self._named_parameters[name]`: an item of what the call gives
            found, follows = self.value(caller, (P.UNKNOWN, None, call_index), depth + 1)
            return (_item(found, element), follows)
        if element is not None:
            if summary.elements is None or element >= len(summary.elements):
                return (where, None)
            ret_where, ret_param = summary.elements[element]
        else:
            ret_where, ret_param = summary.ret
        if ret_param is None:
            return (ret_where, None)
        shift = self.program.shift(call.target, target)
        params = self.program.functions[target]["params"]
        for position, keyword, arg in call.args:
            if position == -1:  # the receiver (`Encoder.m(x)` passes a class): `self` only
                if shift == 1 and params and params[0] == ret_param:
                    return self.value(caller, arg, depth + 1)
                continue
            if keyword == ret_param or (position is not None and position + shift < len(params)
                                        and params[position + shift] == ret_param):
                return self.value(caller, arg, depth + 1)
        return (P.UNKNOWN, None)

    def origin_value(self, qualname: str, name: str, line: int, start: int | None = None) -> tuple:
        """(where, parameter it follows) of the result of the call named `name` a flagged value
        was computed from: the last at or above `line`, or one later in the statement that
        starts at `start` (origin_calls.py)."""
        calls = self.program.functions[qualname]["calls"] if qualname in self.program.functions else []
        name, _, element = name.partition("#")
        return joined([self.value(qualname, (P.UNKNOWN, None, (i, int(element)) if element else i))
                       for i in origin_calls(calls, name, line, start)])

    def host_origins(self, results: dict) -> set[tuple[str, FileFinding]]:
        """(path, finding) of the rules' findings on a value a tree function returned on the
        host (`to_host(x).tolist()`): not a sync, whatever the value's name suggested."""
        dropped = set()
        for path, result in results.items():
            for finding in result.findings:
                if finding.origin is None or (finding.param is not None and not _receiver(finding.param)):
                    continue  # a parameter's data is the callers' to tell (host_fed)
                function = f"{result.module}.{finding.function}" if result.module else finding.function
                where, follows = self.origin_value(function, finding.origin, finding.line, finding.stmt_start)
                if follows is None and P.known_host(where):
                    dropped.add((path, finding))
        return dropped

    def tuple_returns(self, qualname: str, facts: dict) -> tuple | None:
        """Where each element of a returned tuple lives, when every `return` gives a tuple of
        the same length (`return should_pad, num_tokens_cpu, mode`)."""
        tuples = facts.get("tuple_returns") or []
        if not tuples or len(tuples) + facts.get("memo_returns", 0) != len(facts["returns"]) or len({len(t) for t in tuples}) != 1:
            return None
        merged = []
        for position in range(len(tuples[0])):
            values = [self.value(qualname, t[position]) for t in tuples]
            follows = next((p for _, p in values if p is not None), None)
            merged.append((P.UNKNOWN, follows) if follows else (P.combine(*[w for w, _ in values]), None))
        return tuple(merged)

    def returns(self, qualname: str, facts: dict) -> tuple:
        if (facts.get("property") is False and not facts["returns"]) or facts.get("scalar_return"):
            return (P.PY, None)  # nothing returned, or `-> float`: a Python value
        wheres = []
        for fact in facts["returns"]:
            where, param = self.value(qualname, fact)
            if param is not None:
                return (P.UNKNOWN, param)
            wheres.append(where)
        return (P.combine(*wheres), None) if wheres else (P.PY, None)

    # -- findings ----------------------------------------------------------------------
    def findings(self, fed: set = frozenset(), starred: frozenset = frozenset()) -> dict[str, list[FileFinding]]:
        """The call-site findings (SYN601, SYN602) per path, with their chains; a value that
        follows a parameter of the caller in `fed` (host_fed) is host data. A call with `*args`
        / `**kwargs` (`starred`: (caller, line, column)) may pass any parameter it does not name,
        so such a parameter counts as given a tensor of unknown device."""
        found: dict[str, list[FileFinding]] = {}
        for qualname, facts in self.program.functions.items():
            if not facts["hot"]:
                continue
            path = self.program.path_of[qualname]
            function = qualname[len(module_prefix(qualname, self.program)):]
            for call, target, shift in self.all_edges.get(qualname, ()):
                here = ChainStep(path, call.line, qualname, f"calls `{call.name}`")
                code, chain, cold = None, None, None
                synced = self.call_sync(path, call, target, shift)
                if synced is not None:
                    code, chain = "SYN602", _join(here, synced)
                else:
                    entry = qualname not in self.callers  # nothing in the tree calls it
                    star = (qualname, call.line, call.column) in starred
                    ruled_cond = None  # (chain, why) of one only this call's constants rule out
                    for param, sub, _, why in self.call_conds(qualname, path, call, target, shift):
                        where, follows = self.argument(qualname, call, target, shift, param)
                        if star and not self._names(call, target, shift, param):
                            where, follows = P.UNKNOWN, None
                        # a value from this function's own parameter: flagged here only if its
                        # type says tensor, or no caller in the tree can be flagged instead
                        if (follows is None or entry or P.is_tensor_like(where)) and P.maybe_device(where) \
                                and (qualname, follows) not in fed:
                            if why is not None:
                                ruled_cond = ruled_cond or (sub, why)
                                continue
                            # syncing on the object's own fields is the callee syncing
                            on_receiver = shift == 1 and param == self.program.functions[target]["params"][0]
                            code, chain = ("SYN602" if on_receiver else "SYN601"), _join(here, sub)
                            break
                    if code is None and ruled_cond is not None:
                        code, chain, cold = "SYN601", _join(here, ruled_cond[0]), ruled_cond[1]
                if code is None and self.const is not None:
                    # every sync of the callee is ruled out by constant arguments (this call's or
                    # one's further down): reported as cold (`--include-cold`), saying which branch
                    ruled = self.call_ruled(path, call, target, shift)
                    if ruled is not None:
                        code, chain, cold = "SYN602", _join(here, ruled[0]), ruled[1]
                if code is None:
                    continue
                if self.program.path_of[target] in self.foreign and path not in self.foreign:
                    cold = cold or f"`{call.name}` is in a file for another platform than CUDA"
                if target in self.intakes:  # what it syncs, it syncs for a request it takes in or lets go
                    cold = cold or f"runs once per request, not per step: `{call.name}` takes in or releases requests"
                found.setdefault(path, []).append(FileFinding(
                    code, call.line, call.column, call.stmt_start, call.stmt_end, function or "<module>",
                    _message(code, call, chain), None, "error", chain, cold=cold,
                    accepted=accepted_chain(self.program.accepted_lines, chain),
                ))
        return found

    def host_fed(self, starred: frozenset = frozenset()) -> tuple[set, set]:
        """(function, parameter) that every call in the tree passes host data or a Python value
        for: a finding on such a parameter inside the helper is not a sync in practice. Also the
        part of it that carries host data on: a caller passing its own parameter on counts as
        passing host data when every call into the caller passes host data for that parameter
        (host memory, not only Python values: the items of a Python container may be tensors),
        at any depth (`_process_image_input` -> `_vision_forward(grid_thw)` -> `self.visual(x,
        grid_thw)` -> `VisionTower.forward(x, grid_thw)`); a cycle of calls that only pass the
        parameter round gives nothing (the least fixpoint). `starred`: (caller, line, column) of
        the calls with `*args` / `**kwargs`, which may pass any parameter they do not name."""
        # None: a call passes device or unknown data; else what it waits on (a list or (): empty
        # sets per key were the whole-vLLM run's peak, 378.3 -> 374.8 MB)
        needs: dict[tuple[str, str], list | tuple | None] = {}
        carries: set[tuple[str, str]] = set()  # some call passes host memory
        overrides = self._overrides()
        handed = forwarded_names(self.program, self.edges, self.forwards, self._names)  # in a `**kwargs` handed on
        for edges in (self.edges, self.module_edges):
            for caller, out in edges.items():
                for call, resolved, _ in out:
                    if call.target[0] == PROP:
                        continue
                    # a submodule's `forward` (module_edges) is not followed into subclasses: a
                    # tower class is often subclassed by another model that feeds it otherwise
                    below = overrides.get(resolved, ()) if edges is self.edges and _virtual(call.target) else ()
                    for target in (resolved, *below):
                        shift = self.program.shift(call.target, target)
                        star = (caller, call.line, call.column) in starred
                        for param in (*self.program.all_params(target), *handed.get(target, ())):
                            key = (target, param)
                            if (key in needs and needs[key] is None) or (star and not self._names(call, target, shift, param)):
                                needs[key] = None  # already unknown, or a `*args` call may pass anything
                                continue
                            where, follows = self.argument(caller, call, target, shift, param)
                            if follows is None:
                                if not P.known_host(where):
                                    needs[key] = None
                                else:
                                    needs.setdefault(key, ())
                                    if where == P.HOST:
                                        carries.add(key)
                            elif (caller, follows) == key:  # a recursive call passing the parameter on as
                                needs.setdefault(key, ())  # it is (`dfs(child, next_token, ...)`): nothing new
                            else:
                                # host data made of the caller's parameter unless that is a
                                # device tensor (facts.py: `if not isinstance(grid_thw,
                                # torch.Tensor): grid_thw = torch.tensor(grid_thw)`): a Python
                                # value passed for it is enough, not only host memory
                                loose = P.known_host(where)
                                if needed := needs.get(key):
                                    needed.append((caller, follows, loose))
                                else:
                                    needs[key] = [(caller, follows, loose)]
        fed = {key for key, needed in needs.items() if needed is not None and not needed}
        host = {key for key in fed if key in carries}
        pending = {key: needed for key, needed in needs.items() if needed}
        while pending:
            grown = {key for key, needed in pending.items()
                     if all((c, f) in host or (loose and (c, f) in fed) for c, f, loose in needed)}
            if not grown:
                break
            host |= grown
            for key in grown:
                del pending[key]
        return fed | host, host

    def _overrides(self) -> dict[str, list[str]]:
        """method -> the methods of the same name in its subclasses: a call resolved by the
        receiver's declared class (`self.policy.rebalance_experts(w.cpu())` with `policy:
        type[AbstractEplbPolicy]`) runs whichever override the object has, so what it passes
        reaches each of them (for `host_fed` only: which override syncs stays its own finding)."""
        program = self.program
        found: dict[str, list[str]] = {}
        for cls in program.classes:
            for base in program.mro(cls)[1:]:
                for qualname in self._methods_of(cls):
                    inherited = f"{base}.{qualname.rsplit('.', 1)[-1]}"
                    if inherited in program.functions:
                        found.setdefault(inherited, []).append(qualname)
        return found

    def _methods_of(self, cls: str) -> list[str]:
        if self._by_class is None:
            self._by_class = {}
            for qualname in self.program.functions:
                owner = qualname.rpartition(".")[0]
                if owner in self.program.classes:
                    self._by_class.setdefault(owner, []).append(qualname)
        return self._by_class.get(cls, [])

    def _names(self, call: CallRecord, target: str, shift: int, param: str) -> bool:
        """Whether a call passes `param` by name or position (not through `*args`)."""
        params = self.program.functions[target]["params"]
        return any(keyword == param or (position is not None and 0 <= position and position + shift < len(params)
                                        and params[position + shift] == param) for position, keyword, _ in call.args)


def _item(where, element) -> P.Place:
    """An item of a Python container (a dict of parameters) may be a tensor anywhere."""
    return P.UNKNOWN if element == -1 and where == P.PY else where


def _receiver(param: tuple) -> bool:
    """A finding on the object's own data (`self.tower.lens(x)` counts as `self`'s through the
    tensor methods the walk follows): a call's return summary can still tell it is host data."""
    return param[1] in ("self", "cls")


def _virtual(ref: tuple) -> bool:
    """A method call an override may answer: on an object (`self.m()`, `self.policy.m()`), not
    `super().m()` or `Base.m(self)`, which run that very method."""
    if ref[0] != METHOD:
        return False
    _, hops, via_class = ref[1]
    return not via_class and SUPER not in hops


def _join(step: ChainStep, chain: tuple) -> tuple:
    joined = (step,) + chain
    if len(joined) > MAX_CHAIN:
        joined = joined[: MAX_CHAIN - 1] + joined[-1:]
    return joined


def _short(message: str) -> str:
    return message.split(";")[0].split(" (")[0]


def _message(code: str, call: CallRecord, chain: tuple) -> str:
    name = call.name
    root = chain[-1]
    what = "reads property" if call.target[0] == PROP else "calls"
    depth = len(chain) - 1
    via = " -> ".join(step.function.rsplit(".", 1)[-1] + "()" for step in chain[1:])
    if code == "SYN602":
        head = f"{what} `{name}`, which syncs"
    else:
        head = f"{what} `{name}` with a device value it syncs on"
    calls = "1 call" if depth == 1 else f"{depth} calls"
    return f"{head} {calls} down: {root.path}:{root.line} {root.note} (via {via})"


def solve(results: dict, library=None, cold_name=None, texts=None) -> tuple:
    """(extra findings per path, host-fed parameters, rules' findings on host return values,
    the per-step scope: {"functions": qualname -> path from its root, or None when nothing is
    a root; "cold": the None-guarded lines every caller rules out}) for the whole linted tree.
    `texts`: the linted files' texts, for the facts that scan them (text_scans.TextScans)."""
    from .callguards import decided_lines
    from .flagguards import starred_calls
    from .offpaths import host_fed_by_default, off_by_default
    from .reachability import cold_calls_removed, intake_calls_removed, per_step_table, platform_files
    from .confignone import NoneConfig
    from .constargs import ConstArgs
    from .text_scans import TextScans

    texts = texts if texts is not None else TextScans()  # no memo: every file is read
    program = Program(results)
    solver = Solver(program, ConstArgs(results))
    solver.const.none_config = NoneConfig(program, results, solver.all_edges)
    # lines that no caller, flag or import lets run while serving (callguards.decided_lines)
    guarded = decided_lines(program, solver.edges, results, library, texts, cold_name)
    walked = cold_calls_removed(program, solver.edges, results, guarded, library)
    solver.foreign = platform_files(results, library)
    # a call into request intake does not sync for its caller (the walk still follows it)
    solver.edges = intake_calls_removed(program, walked, library)
    solver.intakes = frozenset(t for out in walked.values() for _, t, _ in out) - \
        frozenset(t for out in solver.edges.values() for _, t, _ in out)
    passed_on = [(at, only_own) for result in results.values() if result.module is not None
                 for *at, only_own in starred_calls(result)]
    solver.forwards = frozenset(tuple(at) for at, only_own in passed_on if only_own)
    solver.run()
    # calls whose callee syncs with no guard at all (stepargs never makes their line cold)
    plain = frozenset((qualname, call.line) for qualname, out in solver.edges.items() for call, target, _ in out
                      if solver.summaries[target].sync is not None or solver.summaries[target].cond)
    never, off, no_roots = off_by_default(solver, results, guarded, library)
    functions, once = per_step_table(program, walked, results, library, guarded, cold_name, solver.const,
                                     plain, texts, no_roots) if library is not None else (None, {})
    cold = {path: guarded.get(path, []) + once.get(path, []) for path in guarded.keys() | once.keys()}
    scope = {"functions": functions, "cold": cold}  # per-request lines: cold for their own findings only
    starred = frozenset(tuple(at) for at, only_own in passed_on if not only_own)
    # a parameter fed host memory has host items (param_items.py); by default: offpaths.py
    fed, host, host_default, scope["host_by_default"] = host_fed_by_default(solver, starred, results, never, off, library, functions)
    return solver.findings(host_default, starred), fed | host, solver.host_origins(results), scope
