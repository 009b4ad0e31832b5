"""A `keep_on_cpu` field a module refills on the device only in methods that never run by default.

    class Model(nn.Module):
        def embed_multimodal(self, **kwargs):                   # the default path
            grid = kwargs.pop("image_grid_hws")                 # a `keep_on_cpu` field: host memory
            return self.vision_tower(pixel_values, grid), grid.tolist()

        def select_encoder_cudagraph_items(self, mm_kwargs, indices):  # only the opt-in manager
            return {"image_grid_hws": torch.tensor(rows, device=pixel_values.device)}

The per-file walk cannot tell whether the refill runs, so the field is not host data anywhere in
the module (`classinfo._refilled_on_the_device`). For the few files with such a refill the worker
walks the file a second time keeping the field host and keeps the difference (`with_refills`):
the findings only the first walk makes and the call arguments whose place changes, with the
functions that refill each field. When every one of those functions is off by default
(offpaths.off_functions), the pass counts the second walk's arguments for the calls that run by
default and the engine keeps those findings cold, saying why (`refills_off`).
"""

from __future__ import annotations

from . import field_refills


def with_refills(analyze):
    """`analyze()`'s result, with `refills` = ({field: refilling function names}, {(code, line,
    column) of the findings a walk keeping the fields host does not make}, {(function, line,
    column): that walk's arguments, where they differ}) when the walk dropped a refilled field."""
    field_refills.FOUND.clear()
    result = analyze()
    found = {name: tuple(sorted(where)) for name, where in field_refills.FOUND.items()}
    field_refills.FOUND.clear()
    if not found or result.internal_error:
        return result
    field_refills.KEEP = True
    try:
        other = analyze()
    finally:
        field_refills.KEEP = False
        field_refills.FOUND.clear()
    if other.internal_error:
        return result
    made = {(f.code, f.line, f.column) for f in other.findings}
    dropped = frozenset(key for f in result.findings if (key := (f.code, f.line, f.column)) not in made)
    args = {}
    for qualname, facts in result.functions.items():
        calls = (other.functions.get(qualname) or {}).get("calls")
        if calls is None or len(calls) != len(facts["calls"]):
            continue
        for call, kept in zip(facts["calls"], calls):
            if (call.line, call.column) == (kept.line, kept.column) and call.args != kept.args:
                args[(qualname, call.line, call.column)] = kept.args
    if dropped or args:
        result.refills = (found, dropped, args)
    return result


def refills_off(results: dict, off: frozenset) -> dict:
    """{path: (why, dropped findings, arguments)} of the files whose every refilling function is
    off by default (each name matched by at least one method of the file, all of them off)."""
    decided = {}
    for path, result in results.items():
        refills = getattr(result, "refills", None)
        if not refills:
            continue
        found, dropped, args = refills
        names = sorted({name for where in found.values() for name in where})
        matched = [q for q in result.functions if q.rpartition(".")[2] in names]
        if not matched or {q.rpartition(".")[2] for q in matched} != set(names) or not all(q in off for q in matched):
            continue
        fields = "`, `".join(sorted(found))
        why = f"reads `{fields}`, a `keep_on_cpu` field the module refills on the device only in methods " \
              f"that never run by default (`{'`, `'.join(names[:3])}`)"
        decided[path] = (why, dropped, args)
    return decided


def swapped(out: list, caller: str, args: dict) -> list:
    """A caller's edges with the second walk's arguments where they differ."""
    return [(call._replace(args=args[(caller, call.line, call.column)]), target, shift)
            if (caller, call.line, call.column) in args else (call, target, shift) for call, target, shift in out]
