"""A submodule call in an inherited method reaches the tower a subclass puts in that field.

    class BaseVL(nn.Module):                               # another model's file
        def __init__(self):
            self.visual = BaseTower()
        def _process_image_input(self, image_input):
            grid_thw = image_input["image_grid_thw"]       # a `keep_on_cpu` field: host memory
            return self.visual(pixel_values, grid_thw=grid_thw)

    class NextVL(BaseVL):                                  # this model: reuses the method
        def __init__(self):
            self.visual = NextTower()                      # `NextTower.forward(x, grid_thw)`

`self.visual(...)` resolves by the class the method is written in (`BaseTower.forward`), so no
call in the tree fed `NextTower.forward`: a parameter nothing feeds keeps its findings. The fact,
about code: a method a subclass inherits (does not override) runs on that subclass's objects
too, so its call of a field's submodule runs the `forward` of the class the subclass keeps in
the field. For where a parameter's data comes from only (`Solver.module_edges`, as the base
call's edge is): a sync in that `forward` is still reported where it is written.
"""

from __future__ import annotations


def add_subclass_towers(solver) -> None:
    """Add to `solver.module_edges`, for each `self.field(...)` call of a method, the `forward`
    of the class each subclass that inherits the method keeps in that field, where it differs."""
    program = solver.program
    subclasses: dict[str, list[str]] | None = None
    for caller, out in solver.module_edges.items():
        added = []
        for call, target, _ in out:
            cls, hops, via_class = call.target[1]
            if hops or via_class:
                continue
            if subclasses is None:
                subclasses = {}
                for klass in program.classes:
                    for base in program.mro(klass)[1:]:
                        subclasses.setdefault(base, []).append(klass)
            owner, name = program.chase(cls, True), caller.rpartition(".")[2]
            for sub in subclasses.get(owner, ()):
                runs = next((f"{k}.{name}" for k in program.mro(sub) if f"{k}.{name}" in program.functions), None)
                if runs != caller:
                    continue  # the subclass overrides the method: this call does not run for it
                other = program.member((sub, (call.target[2],), via_class), "forward", properties=False) \
                    or program.filled_forward(sub, call.target[2])  # `self.resampler = self.init_resampler()`
                if other is not None and other != target and other in program.functions \
                        and all(other != t or c is not call for c, t, _ in added):
                    added.append((call, other, program.shift(call.target, other)))
        if added:
            out.extend(added)
