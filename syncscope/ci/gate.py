"""The gate: compare the sites of a run (or a lint) with a baseline; any new site fails the build.

Pure functions over `Observation` and `Baseline`; the command in `syncscope/commands/gate.py`
only reads files, prints and picks the exit code. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from syncscope.ci.baseline import Baseline, BaselineEntry, InputError, Observation, ObservedSite

EXIT_OK = 0
EXIT_NEW_SITES = 1
EXIT_ERROR = 2


@dataclass(frozen=True)
class OverBudget:
    observed: ObservedSite
    entry: BaselineEntry
    per_step: float


@dataclass(frozen=True)
class GateResult:
    new: tuple[ObservedSite, ...]  # seen now, not in the baseline: these fail the gate
    fixed: tuple[BaselineEntry, ...]  # in the baseline, not seen now: `--update` drops them
    over_budget: tuple[OverBudget, ...]  # accepted sites syncing more often per step than allowed
    accepted: tuple[ObservedSite, ...]
    # Pageable non_blocking copies that did not block in this run and are not in the baseline:
    # listed, never failing (they fail once a run shows them block: then they are new sites).
    potential: tuple[ObservedSite, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.new and not self.over_budget

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_NEW_SITES


def check(observation: Observation, baseline: Baseline, steps: int | None = None) -> GateResult:
    if observation.origin != baseline.origin:
        raise InputError(
            f"{observation.path} is {observation.origin} output but the baseline was made from "
            f"{baseline.origin} output; gate each against a baseline of its own kind"
        )
    steps = steps or observation.steps
    entries = {e.fingerprint: e for e in baseline.entries}
    # A baseline site seen only as a potential sync is still there: not "fixed", not dropped.
    seen = {o.fingerprint for o in observation.sites} | {o.fingerprint for o in observation.potential}
    new, accepted, over = [], [], []
    for o in observation.sites:
        entry = entries.get(o.fingerprint)
        if entry is None:
            new.append(o)
            continue
        accepted.append(o)
        if entry.max_per_step is not None:
            if not steps:
                raise InputError(
                    f"the baseline sets a per-step budget for {entry.path}:{entry.line} ({entry.kind}) "
                    "but the number of steps is unknown: pass --steps N"
                )
            per_step = o.count / steps
            if per_step > entry.max_per_step + 1e-9:
                over.append(OverBudget(o, entry, per_step))
    fixed = tuple(e for e in baseline.entries if e.fingerprint not in seen)
    order = lambda o: (o.site.path, o.site.line, o.site.kind)  # noqa: E731
    potential = tuple(sorted((o for o in observation.potential if o.fingerprint not in entries), key=order))
    return GateResult(tuple(sorted(new, key=order)), fixed, tuple(over), tuple(sorted(accepted, key=order)), potential)


def describe_site(o: ObservedSite, max_frames: int = 8) -> list[str]:
    """A new site as the gate prints it: location, kind, source, then the stack (runtime) or the
    finding's message (lint)."""
    s = o.site
    count = f", {o.count} event{'s' if o.count != 1 else ''}" if o.stack or o.count != 1 else ""
    if o.ranks:
        count += f", on rank{'s' if len(o.ranks) > 1 else ''} {', '.join(map(str, o.ranks))}"
    lines = [f"{s.path}:{s.line}: {s.kind} in {s.function}{count}"]
    if s.source:
        lines.append(f"    {s.source}")
    if o.message and not o.stack:  # a lint finding's explanation (runtime: the stack says more)
        lines.append(f"    ({o.message})")
    callers = []
    for frame in o.stack[1:]:
        callers.append(frame)
        if frame[2] == "<module>":  # the program's top level: what calls it is not the user's
            break
    for path, line, function in callers[: max_frames - 1]:
        lines.append(f"      called from {path}:{line} in {function}")
    if len(callers) > max_frames - 1:
        lines.append(f"      ... {len(callers) - max_frames + 1} more frames")
    return lines


def render_text(result: GateResult, observation: Observation, baseline_path: str) -> str:
    out = []
    if result.new:
        out.append(f"syncscope gate: {len(result.new)} new sync site(s) not in {baseline_path}:")
        for o in result.new:
            out.extend(describe_site(o))
    for ob in result.over_budget:
        s = ob.observed.site
        out.append(
            f"syncscope gate: {s.path}:{s.line}: {s.kind} syncs {ob.per_step:.3g} times per step, "
            f"budget {ob.entry.max_per_step:g}"
        )
    if result.potential:
        out.append(
            f"syncscope gate: {len(result.potential)} potential sync site(s), not failing the gate: pageable "
            "non_blocking copies that did not block in this run (they block once the copy or the GPU queue is "
            "large enough; pin the source to remove them):"
        )
        for o in result.potential:
            out.extend(describe_site(o))
    if result.fixed:
        out.append(f"syncscope gate: {len(result.fixed)} baseline site(s) no longer seen (run with --update to drop them):")
        for e in result.fixed:
            out.append(f"    {e.path}:{e.line}: {e.kind} in {e.function}: {e.source}")
    verdict = "FAILED" if not result.passed else "passed"
    out.append(
        f"syncscope gate {verdict}: {len(observation.sites)} site(s) in {observation.path}, "
        f"{len(result.accepted)} accepted by the baseline, {len(result.new)} new, "
        f"{len(result.over_budget)} over budget, {len(result.fixed)} fixed"
        + (f", {len(result.potential)} potential (not gated)" if result.potential else "")
    )
    return "\n".join(out)
