"""The call summaries again as the default path has them, once the pass knows which methods never
run by default (offpaths.py).

    class Model(nn.Module):
        def embed_multimodal(self, **kwargs):
            image_input = self._parse_and_validate_image_input(**kwargs)
            return self._process_image_input(image_input)     # was SYN601: "a device value"

        def _process_image_input(self, image_input):
            num_patches = image_input["num_patches"]          # a `keep_on_cpu` field, refilled on
            return features.split(num_patches.tolist())       # the device only in an opt-in method

The solver summarized each function before the off methods were known, so `_process_image_input`
still "syncs on its parameter" and the call passing the dict was flagged, though the only sync it
reaches is host data wherever the default configuration runs it (kept cold, offpaths.py). The
fact, about code: a sync the default path never makes is none for its callers either, as a
sync on a host field is none (program.py drops such roots). Two kinds:
* a root the file's second walk does not make, in a file whose every refilling function is off
  (refill_variant.refills_off), the calls of that file taking that walk's arguments;
* a root on a parameter every call that runs by default passes host data (or a Python value)
  for, where other calls do not (offpaths' `gained`): only calls that never run by default pass
  it device data, and those calls are not flagged either (they never run by default).
Only the functions touched and their callers are computed again (`Solver.run`'s propagation).
The roots stay in the report, cold, saying why; the default path's call sites to them go.
"""

from __future__ import annotations

from .refill_variant import swapped


def resummarize(solver, refilled: dict, gained: set) -> None:
    """Compute again the summaries of the functions holding such roots or such calls, and of
    their callers; the roots leave `program.roots` (the call edges are restored after)."""
    dropped = {(path, code, line) for path, (_, gone, _) in refilled.items() for code, line, _ in gone}
    args = {key: value for _, _, given in refilled.values() for key, value in given.items()}
    if not dropped and not args and not gained:
        return
    program = solver.program
    seeds = {caller for caller, _, _ in args}
    kept_roots = dict(program.roots)
    for qualname, found in program.roots.items():
        kept = [(path, root) for path, root in found if (path, root.code, root.line) not in dropped
                and (root.param is None or (qualname, root.param) not in gained)]
        if len(kept) != len(found):
            kept_roots[qualname] = kept
            seeds.add(qualname)
    if not seeds:
        return
    edges = solver.edges
    program.roots = kept_roots
    solver.edges = {caller: swapped(out, caller, args) if caller in seeds else out for caller, out in edges.items()}
    try:
        solver.run(sorted(seeds))
    finally:
        solver.edges = edges
