"""Lines the callers decide never run while serving (`decided_lines`), and first the
None-guards that every caller rules out: lines that run only when a parameter is None
(`if chunk_indices is None:`) in a function every call in the tree passes that parameter to,
counted over the resolved calls and over the calls by name (a method on a receiver of unknown
class). Also whether a call of a given shape could bind to a method at all (`binds`), which the
per-step walk (reachability.py) asks of the calls by name it follows."""

from __future__ import annotations

from .dispatched import dispatched_calls
from .noneguards import EITHER
from .numberguards import NUMBER, TensorArgs


def decided_lines(program, edges: dict, results: dict, library=None, texts=None, cold_name=None) -> dict[str, list]:
    """The lines the rest of the program decides never run while serving: {path: [(start, end,
    why)]}. Calls and syncs on them do not count, nor are they reported by default. Under a
    None-guard on a parameter every caller passes; under a flag no caller turns on
    (flagguards.py); before a call that always raises (errorpaths.py); a kernel's fallback
    when the kernel's name is never None on CUDA (modulenames.py); a memo a long-lived object
    fills once (memo.py); the methods of a class built only behind a switch that is off by
    default (optin.py); lines under an environment switch the tree declares off and never sets
    (env_switches.py); the methods of a class built only on lines cold for such a switch or a
    debug switch (switch_built.py)."""
    from .cuda_dispatch import dispatch_lines
    from .errorpaths import error_lines
    from .flagguards import flag_lines
    from .memo import memo_lines
    from .modulenames import name_lines
    from .optin import off_switches, optin_lines
    from .env_switches import env_switch_lines, switch_fields
    from .switch_built import switch_built_lines

    given: set = set()  # (function, parameter): every call passes it (memo.py asks, through memo_owners.py)
    guarded = guarded_lines(program, edges, results, cold_name, given)
    stores: dict = {}
    switches = off_switches(results, texts, stores, switch_fields(results))  # read by both: a switch off by default
    found = [flag_lines(program, edges, results, binds, texts, switches), error_lines(program, edges, results),
             name_lines(program, results), optin_lines(program, edges, results, texts, switches),
             dispatch_lines(program, edges, results)]
    found.append(env_switch_lines(program, results, stores, texts))
    found.append(switch_built_lines(program, results, found[-1], texts))  # the environment switches' lines
    if library is not None:
        found.append(memo_lines(program, results, library, cold_name, frozenset(given), texts))
    for table in found:
        for path, lines in table.items():
            guarded[path] = guarded.get(path, []) + lines
    return guarded


def guarded_lines(program, edges: dict, results: dict, cold_name=None, given_out: set | None = None) -> dict[str, list]:
    """Lines that run only when a parameter is None (`if chunk_indices is None:`) in functions
    every caller in the tree passes that parameter to: {path: [(start, end, why)]}. A call
    with `*args`/`**kwargs` may pass it unseen: it counts as leaving it out, and so does a
    literal `None` (`f(x, None)`, `metadata=None`), except from a caller that runs once
    (`skip-functions`: vLLM's `_warm_causal_conv1d_fwd_kernel` calls the kernel with
    `metadata=None` at start-up; the per-step walk never enters it, reachability.enterable).
    A required parameter typed `Optional[X]` has no such guards (branches.py): its callers pass
    None. `given_out` receives (function, parameter) of each plain guard decided so."""
    guards: dict[str, list] = {}
    for result in results.values():
        for qualname, items in (getattr(result, "guards", None) or {}).items():
            guards.setdefault(qualname, []).extend(items)
    if not guards:
        return {}
    given: dict[tuple, bool] = {}
    tensors = TensorArgs(program, edges, results, binds)
    literals = tensors.literals
    for caller, out in edges.items():
        once = once_only(program, caller, cold_name)
        for call, target, shift in out:
            items = guards.get(target)
            if not items:
                continue
            positional = program.functions[target]["params"]
            nones = frozenset() if once else _nones(literals, program.path_of.get(caller), call.line, call.column)
            for _, _, guard in items:
                param, tensor = (guard[len(NUMBER):], True) if guard.startswith(NUMBER) else (guard, False)
                # a literal `None` passed for it is no argument: the guard's branch runs
                passed = all(any((keyword == name or (position is not None and position >= 0 and position + shift < len(positional)
                                                      and positional[position + shift] == name))
                                 and (keyword if keyword is not None else position) not in nones
                                 and (not tensor or tensors.passes_argument(caller, call, position, keyword, fact))
                                 for position, keyword, fact in call.args)
                             for name in param.split(EITHER))
                given[(target, guard)] = given.get((target, guard), True) and passed
    _dispatched_given(program, edges, results, guards, given, tensors, literals, cold_name)
    found: dict[str, list] = {}
    for qualname, items in guards.items():
        for start, end, param in items:
            if given.get((qualname, param)):
                if param.startswith(NUMBER):
                    why = f"runs only when `{param[len(NUMBER):]}` is not a tensor, and every caller passes a tensor"
                elif EITHER in param:
                    names = param.split(EITHER)
                    why = f"runs only when one of {', '.join(f'`{n}`' for n in names)} is None, and every caller passes them all"
                else:
                    why = f"runs only when `{param}` is None, and every caller passes it"
                    if given_out is not None:
                        given_out.add((qualname, param))
                found.setdefault(program.path_of[qualname], []).append((start, end, why))
    return found


def once_only(program, qualname: str, cold_name) -> bool:
    """Named like code that runs once (`skip-functions`), as the per-step walk reads it."""
    facts = program.functions.get(qualname)
    return facts is not None and not facts.get("hot", True) and \
        (cold_name is None or cold_name(qualname.rsplit(".", 1)[-1]))


def _nones(literals: dict, path: str | None, line: int, column: int | None = None) -> frozenset:
    """The positions and keywords a call (at `line`, `column`) passes a literal `None` for;
    with no column, every call on the line (a call by name is recorded by its line only: a
    None any call there passes counts, which leaves a guard undecided rather than decided)."""
    table = literals.get(path) if path is not None else None
    if not table:
        return frozenset()
    if column is not None:
        passed = table.get((line, column))
        return frozenset(at for at, value in passed.items() if value is None) if passed else frozenset()
    return frozenset(at for (at_line, _), passed in table.items() if at_line == line
                     for at, value in passed.items() if value is None)


def _dispatched_given(program, edges: dict, results: dict, guards: dict, given: dict, tensors,
                      literals: dict, cold_name=None) -> None:
    """Count the calls by name (a method called on a receiver of unknown class, which the
    per-step walk follows to every method of that name it can bind to) among a guarded method's
    callers, as `guarded_lines` counts the resolved ones. SGLang's `ScheduleBatch.filter_batch`
    calls `self.spec_info.filter_batch(new_indices=..., new_indices_cpu=keep_indices)`, and
    `PPSpecRelayInput.filter_batch` reads `new_indices.tolist()` only when `new_indices_cpu` is
    None: with no resolved caller at all its guard was never decided, and a method whose
    resolved callers all pass the parameter was guarded even where a call by name leaves it out."""
    for caller, line, shape, target in dispatched_calls(program, edges, results, guards, binds):
        once = once_only(program, caller, cold_name)
        positional, keywords, opened = shape if len(shape) == 3 else (*shape, True)
        params = program.functions[target]["params"]
        bound = 1 if params and params[0] in ("self", "cls") else 0
        for _, _, guard in guards[target]:
            if guard.startswith(NUMBER):  # what it passes, from the call's record (numberguards.py)
                given[(target, guard)] = given.get((target, guard), True) and tensors.by_name(caller, line, target, guard)
                continue
            nones = frozenset() if once else _nones(literals, program.path_of.get(caller), line)
            # with `*args` the places are not known: only a keyword counts; a literal `None` is none
            passed = all((name in keywords and name not in nones) or
                         (not opened and bound <= (index := params.index(name) if name in params else -1) < bound + positional
                          and index - bound not in nones)
                         for name in guard.split(EITHER))
            given[(target, guard)] = given.get((target, guard), True) and passed


def binds(facts: dict, shape: tuple) -> bool:
    """Could a method call of this shape (the positional arguments and keyword names it passes
    at least: `*args`/`**kwargs` only add) bind to this method? Python raises where it could
    not, so such a target is never run:
    `self.attn_impl.forward(q, k, v, attn_metadata=m)` in SGLang's diffusion attention layer does
    not reach the pipeline stages' `forward(self, batch, server_args)`. Lenient where unsure: a
    first parameter not named `self`/`cls` (a static method) is counted as one more place, and
    the receiver fills the first place when a parameter is missing."""
    positional, keywords, opened = shape if len(shape) == 3 else (*shape, True)
    params = facts["params"]
    bound = 1 if params and params[0] in ("self", "cls") else 0
    if not facts.get("varargs", True) and positional > len(params) - bound:
        return False
    if not opened:
        # a parameter without a default that the call passes neither by place nor by name:
        # `mega.forward(tensors)` cannot run a stage's `forward(self, batch, server_args)`
        # (the receiver counted as the first place even where it is not named `self`)
        required = params[1 + positional:facts.get("required", 0)]
        if any(name not in keywords for name in required):
            return False
        # a keyword-only parameter without a default, not passed by name: the cube builder's
        # `build(self, *, packed, ...)` is not what `builder.build(current_timestep=i, ...)` runs
        mask = facts.get("kwrequired", 0)
        if mask and any(mask >> index & 1 and name not in keywords for index, name in enumerate(facts["kwonly"])):
            return False
    if not facts.get("varkw", True):
        names = set(params[bound:]) | set(facts.get("kwonly", ()))
        if any(keyword not in names for keyword in keywords):
            return False
    return True
