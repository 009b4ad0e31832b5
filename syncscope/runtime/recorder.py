"""The recorder: detectors report syncs here; it attributes them to the user's line, applies the
region, allow-list and policy, marks them for Nsight and keeps the events."""

from __future__ import annotations

import fnmatch
import linecache
import os
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from syncscope.runtime import accepted_blocks, compile_phase, nvtx_marks, regions, user_frames
from syncscope.events import Frame, HostSyncEvent
from syncscope.runtime.policy import HostSyncError, Policy
from syncscope.site import relative_path
from syncscope.terminal import safe_text

MAX_STACK = 24
_RUNNER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
_STDLIB_INTERNAL = ("warnings.py", "contextlib.py", "runpy.py", "functools.py", "threading.py")


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


class _InternalFrames:
    """Decides which frames belong to torch, triton or syncscope rather than to the user (Inductor's
    generated modules count as torch's: runtime/compile_phase.py).

    A package is looked up again (on a cache miss, so rarely) until it is imported: a recorder
    built before torch, or a program that imports triton part way through, still has their
    frames taken as internal. No decision goes stale: a package's files cannot have been seen
    before it was imported."""

    _PACKAGES = ("syncscope", "torch", "triton")

    def __init__(self) -> None:
        self.prefixes: list[str] = []
        self._pending = list(self._PACKAGES)
        self.stdlib = os.path.dirname(os.__file__) + os.sep
        self._cache: dict[str, bool] = {}

    def _find_packages(self) -> None:
        for name in list(self._pending):
            prefix = _package_dir(name)
            if prefix:
                self.prefixes.append(prefix)
                self._pending.remove(name)

    def __call__(self, filename: str) -> bool:
        hit = self._cache.get(filename)
        if hit is None:
            if self._pending:
                self._find_packages()
            generated = compile_phase.generated_code_dir()
            hit = (
                filename.startswith("<frozen")
                or any(filename.startswith(p) for p in self.prefixes)
                or (filename.startswith(self.stdlib) and filename.endswith(_STDLIB_INTERNAL))
                or (generated is not None and filename.startswith(generated))
            )
            self._cache[filename] = hit
        return hit


@dataclass(frozen=True)
class AllowRule:
    """A config allow-list entry: matches a site by path glob, optional line, function and kind."""

    path: str = "*"
    line: int | None = None
    function: str = "*"
    kind: str = "*"
    reason: str = "allowed by config"

    def matches(self, site: Frame, kind: str) -> bool:
        return (
            fnmatch.fnmatch(site.path, self.path)
            and (self.line is None or self.line == site.line)
            and fnmatch.fnmatch(site.function, self.function)
            and fnmatch.fnmatch(kind, self.kind)
        )


@dataclass
class Recorder:
    policy: Policy = Policy.RECORD
    allow_rules: tuple[AllowRule, ...] = ()
    root: str = field(default_factory=os.getcwd)
    device: str = "cuda"
    events: list[HostSyncEvent] = field(default_factory=list)
    started_ns: int = field(default_factory=time.perf_counter_ns)
    # Told of each timed sync (event, wait start, wait end, bookkeeping done; perf_counter_ns) by
    # the CUDA detector: the bubble window (runtime/bubble_window.py) sets it while it runs.
    on_sync: Callable | None = None
    # Called with each new event (runtime/keeper.py flushes the report on a new site).
    on_event: Callable[[HostSyncEvent], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._internal = _InternalFrames()
        self._relative_paths: dict[str, str] = {}
        self._sites: dict = {}  # call site -> its Frame (user_frames.user_stack)
        self._warned: set[tuple[str, int, str]] = set()
        self._lock = threading.Lock()

    # -- called by detectors -------------------------------------------------------------------
    def record(
        self,
        kind: str,
        api: str,
        *,
        blocked_ns: int | None = None,
        related: Frame | None = None,
        detector: str = "",
        frame=None,
        stack: tuple[Frame, ...] | None = None,
        waited: bool | None = None,
    ) -> HostSyncEvent | None:
        """Record one sync seen now on this thread; raise `HostSyncError` under the error policy.
        `frame` is where to start looking for the user's line (default: the caller)."""
        if regions.suspended():
            return None
        if frame is None:
            frame = sys._getframe(1)
        if stack is None:
            stack = self.user_stack(frame)
        site = stack[0] if stack else Frame("<unknown>", 0, "<unknown>")
        reason = regions.allow_reason()
        if reason is None:
            reason = next((r.reason for r in self.allow_rules if r.matches(site, kind)), None)
        if reason is None:
            reason = compile_phase.reason(frame)
        if reason is None:
            reason = accepted_blocks.reason(frame)  # `with gpu_sync_allowed():` up the stack
        in_scope = regions.in_scope()
        event = HostSyncEvent(
            kind=kind,
            api=api,
            site=site,
            source=self.source_line(site),
            stack=stack,
            thread=threading.current_thread().name,
            pid=os.getpid(),
            region=regions.current_region(),
            in_scope=in_scope,
            allowed=reason is not None,
            allow_reason=reason,
            blocked_ns=blocked_ns,
            ts_ns=time.perf_counter_ns() - self.started_ns,
            related=related,
            detector=detector,
            waited=waited,
        )
        self.events.append(event)
        nvtx_marks.mark(event)
        if self.on_event is not None:
            self.on_event(event)
        if in_scope and reason is None:
            self._apply_policy(event)
        return event

    def user_stack(self, frame) -> tuple[Frame, ...]:
        """The user's frames from `frame` out, innermost first. Every detector's site comes from
        here, so the GPU and the simulated device name the same line and function
        (runtime/user_frames.py says which). Below the runner is syncscope's own command line
        (typer, click), not the user's."""
        return user_frames.user_stack(frame, self._internal, self._relative, stop_file=_RUNNER_FILE, limit=MAX_STACK, sites=self._sites)

    def source_line(self, site: Frame) -> str:
        path = site.path if os.path.isabs(site.path) else os.path.join(self.root, site.path)
        return linecache.getline(path, site.line).strip()

    # -- internals -----------------------------------------------------------------------------
    def _relative(self, filename: str) -> str:
        # Cached: every frame of every sync's stack comes through here.
        rel = self._relative_paths.get(filename)
        if rel is None:
            rel = filename if filename.startswith("<") else relative_path(filename, self.root)
            self._relative_paths[filename] = rel
        return rel

    def _apply_policy(self, event: HostSyncEvent) -> None:
        policy = regions.policy_override() or self.policy
        if policy is Policy.RECORD:
            return
        location = f"{event.site.path}:{event.site.line}"
        if policy is Policy.ERROR:
            raise HostSyncError(event.kind, event.api, location, event.source)
        key = (event.site.path, event.site.line, event.kind)
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        print(
            safe_text(f"syncscope: host sync {event.kind} ({event.api}) at {location}: {event.source}"),
            file=sys.stderr,
            flush=True,
        )

    def settle_scope(self) -> None:
        """Once the run is over, apply its final scoping to every event: a scope declared part
        way through (the first `region()` entered) means the region-less events before it were
        outside the regions that matter, not inside them."""
        if not regions.scope_declared():
            return
        self.events[:] = [
            replace(e, in_scope=False) if e.in_scope and e.region is None else e for e in self.events
        ]

    def in_scope_events(self) -> list[HostSyncEvent]:
        return [e for e in self.events if e.in_scope]

    def extend(self, events: Iterable[HostSyncEvent]) -> None:
        self.events.extend(events)
