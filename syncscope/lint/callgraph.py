"""Private helpers that only code running once calls.

A helper called only by `__init__`, `load_model` or a warm-up function runs once too, however it
is named (`_make_ptr_tensor`, called only from `init_block_table_layout_tensors`). Only private
helpers (`_name`, not dunders) are judged, and only from their own file: by convention nothing
outside calls them, so the file shows every caller. (Public functions may be called from code
that is not being linted, and warm-up code deliberately calls the hot path, so "only cold code
calls it" proves nothing for them.) Names stand for every function of that name in the file,
which errs on the side of linting.
"""

from __future__ import annotations


def cold_private_helpers(functions: dict[str, tuple[bool, frozenset[str]]]) -> set[str]:
    """`functions`: name -> (cold by its own name or decorator, names it calls). Returns the
    private helpers that are cold because every caller in the file is cold."""
    cold = {name for name, (is_cold, _) in functions.items() if is_cold}
    private = {name for name in functions if name.startswith("_") and not name.startswith("__") and name not in cold}
    changed = True
    while changed:
        changed = False
        for name in sorted(private - cold):
            callers = {caller for caller, (_, calls) in functions.items() if name in calls and caller != name}
            if callers and callers <= cold:
                cold.add(name)
                changed = True
    return cold - {name for name, (is_cold, _) in functions.items() if is_cold}
