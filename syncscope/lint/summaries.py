"""What the whole-program pass knows of one function (`Summary`, wholeprogram.py says what each
table means), and which of two chains down to a sync a caller is shown.

A summary keeps one chain per kind of sync: the shortest, except that a chain the code does not
accept beats one it accepts. A chain is accepted when one of its lines sits in a block that
accepts its syncs (`with gpu_sync_allowed():`, with_blocks.py): vLLM's sync check and the runtime
trap let such a sync pass however far down the stack the block is. So a call site is marked
accepted only when the sync it is shown reaching is, and it is shown an accepted one only when
no other sync of that kind is below it (an unconditional sync, a guarded one, one on a parameter).
"""

from __future__ import annotations

from syncscope.with_blocks import ACCEPTED, is_accepted

from . import provenance as P


def accepted_lines(results: dict) -> dict[str, dict[int, str]]:
    """path -> {line: why}, for every line of a block that accepts its syncs (branches.py keeps
    the blocks with the cold lines). By path first: most steps of a chain are in files with no
    such block, and the summaries ask about every chain they compare."""
    found: dict[str, dict[int, str]] = {}
    for path, result in results.items():
        for start, end, why in getattr(result, "branch_cold", None) or ():
            if is_accepted(why):
                lines = found.setdefault(path, {})
                for line in range(start, end + 1):
                    lines.setdefault(line, why)
    return found


def accepted_chain(lines: dict, chain: tuple | None) -> str | None:
    """Why the code accepts the sync at the end of `chain`: the first of its steps inside such a
    block (`accepted by the code: utils.py:551 is inside ...`), or None."""
    if lines and chain:
        for step in chain:
            blocks = lines.get(step.path)
            why = blocks.get(step.line) if blocks else None
            if why is not None:
                return f"{ACCEPTED}: {step.path}:{step.line} is{why[len(ACCEPTED) + 1:]}"
    return None


class Summary:
    __slots__ = ("sync", "gsync", "ruled", "cond", "gcond", "ret", "elements", "accepted")

    def __init__(self, accepted: dict | None = None) -> None:
        self.sync: tuple | None = None  # chain: (ChainStep, ..., root step)
        self.gsync: dict[tuple, tuple] = {}  # guard indices (constargs.py) -> chain
        self.ruled: tuple | None = None  # (chain, why): a sync only constants ruled out
        self.cond: dict[str, tuple] = {}
        self.gcond: dict[tuple, tuple] = {}  # (parameter, guard indices) -> chain: `cond` in a guarded block
        self.ret: tuple = (P.PY, None)  # (where, parameter it follows or None)
        self.elements: tuple | None = None  # `return a, b`: (where, parameter) of each element
        self.accepted = accepted  # accepted_lines of the tree; empty or None: none

    def key(self) -> tuple:
        """What the callers' summaries depend on: they are computed again when it changes."""
        key = (self.sync is not None, len(self.sync or ()), tuple(sorted((p, len(c)) for p, c in self.cond.items())),
               tuple(sorted((k, len(c)) for k, c in self.gsync.items())),
               tuple(sorted((k, len(c)) for k, c in self.gcond.items())), self.ruled is not None,
               len(self.ruled[0]) if self.ruled else 0, self.ret, self.elements)
        if not self.accepted:
            return key
        taken = self._taken
        return key + (taken(self.sync), tuple(sorted((p, taken(c)) for p, c in self.cond.items())),
                      tuple(sorted((k, taken(c)) for k, c in self.gsync.items())),
                      tuple(sorted((k, taken(c)) for k, c in self.gcond.items())))

    def add_sync(self, key: tuple, chain: tuple) -> None:
        """An unconditional sync, or (`key`: the guards the line lies under) a guarded one."""
        if not key:
            if self.better(self.sync, chain):
                self.sync = chain
        elif self.better(self.gsync.get(key), chain):
            self.gsync[key] = chain

    def add_cond(self, param: str, key: tuple, chain: tuple) -> None:
        """A sync on a parameter's device value, unguarded or (`key`) under guards."""
        table, at = (self.gcond, (param, key)) if key else (self.cond, param)
        if self.better(table.get(at), chain):
            table[at] = chain

    def _taken(self, chain: tuple | None) -> bool:
        return accepted_chain(self.accepted, chain) is not None

    def better(self, old: tuple | None, new: tuple) -> bool:
        """Whether chain `new` should be kept instead of `old` (None: nothing kept yet)."""
        if old is None:
            return True
        if self.accepted:
            old_taken, new_taken = self._taken(old), self._taken(new)
            if old_taken != new_taken:
                return old_taken  # the caller must see the sync the code does not accept
        return len(new) < len(old)
