"""Regions: which syncs count. Per thread and per asyncio task, through context variables.

torch's own sync-debug mode is one process-global flag, so a thread that leaves its checked
region disarms every other thread. Here each thread (and each task) carries its own region
stack, allow reason and policy override; a new thread starts outside every region.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
from typing import Callable, Iterator

from syncscope.runtime.policy import Policy
from syncscope.runtime.scope_spec import ScopeSpec

_regions: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("syncscope_regions", default=())
_allow_reason: contextvars.ContextVar[str | None] = contextvars.ContextVar("syncscope_allow", default=None)
_policy_override: contextvars.ContextVar[Policy | None] = contextvars.ContextVar("syncscope_policy", default=None)
# Set while syncscope itself calls into torch (e.g. reading a pinned flag): nothing is recorded.
_suspended: contextvars.ContextVar[bool] = contextvars.ContextVar("syncscope_suspended", default=False)


_Token = contextvars.Token


class TrapState:
    """What region entry and the recorder read of the trap in force, reached through one
    reference (the module global `_trap`): whether a scope was declared (a region entered,
    `--scope`, `--module-forward`; until one is, the whole program is in scope), the monitor's
    sampler and the bubble window's step observer.

    The trap in force is one (`runtime/trap.py`'s `Trap` owns its recorder, detector and scopes
    too); with no trap active an idle one stands in, so that a region entered before a trap
    still declares a scope, as it always did. A sampler and a step observer are never both set
    (`Trap` refuses it: the bubble window profiles every step, the monitor only some), so an
    unsampled entry need not look for the observer. Slots: region entry reads these on every
    step."""

    __slots__ = ("declared", "sampler", "step_observer")

    def __init__(self, *, declared: bool = False, sampler=None, step_observer=None) -> None:
        self.declared = declared
        # Monitor mode (syncscope/monitoring/sampling.py's `Gate`): decides at each outermost
        # region entry whether the trap is armed for that region. None outside monitor mode.
        self.sampler = sampler
        # Told when a thread enters or leaves a top-level region (one step): the bubble window
        # (runtime/bubble_window.py) counts steps with it. None almost always, so a region costs
        # nothing more.
        self.step_observer = step_observer


_trap = TrapState()


def trap_state() -> TrapState:
    """The trap state in force (the idle one when no trap is active)."""
    return _trap


def enter_trap_state(state: TrapState) -> TrapState:
    """Put `state` in force and return the one it replaces, for `restore_trap_state`. It takes
    over the replaced state's declared scope: a scope declared before the trap counts inside it,
    and one declared inside it is forgotten when the replaced state comes back."""
    global _trap
    previous = _trap
    state.declared = previous.declared
    _trap = state
    return previous


def restore_trap_state(previous: TrapState) -> None:
    global _trap
    _trap = previous


def scope_declared() -> bool:
    return _trap.declared


def declare_scope() -> None:
    _trap.declared = True


def current_region() -> str | None:
    stack = _regions.get()
    return stack[-1] if stack else None


def in_scope() -> bool:
    return bool(_regions.get()) or not _trap.declared


def allow_reason() -> str | None:
    return _allow_reason.get()


def policy_override() -> Policy | None:
    return _policy_override.get()


def suspended() -> bool:
    return _suspended.get()


class region:
    """Mark a region that matters (`with syncscope.region("decode_step"):` or as a decorator).
    Syncs inside it are in scope; `policy` overrides the trap's policy inside it.

    A class rather than a `@contextmanager` generator: servers enter one region per step, also
    when monitor mode leaves most steps unwatched, and a generator's setup and teardown cost
    about three times the few context-variable writes a region needs. One object may be entered
    again once it has been left, or nested in one thread; like any context manager it is not
    shared between threads while entered (the decorator form makes a fresh one per call)."""

    __slots__ = ("name", "policy", "_saved")

    def __init__(self, name: str, *, policy: Policy | str | None = None) -> None:
        self.name = name
        self.policy = Policy(policy) if policy is not None else None
        # What __exit__ undoes: None while not entered, a bare Token for a region that only
        # pushed the stack (no policy, no gate or step observer to tell), else one entry's tuple, whose last item is what this object held before it (an
        # object entered again inside itself stacks its entries that way).
        self._saved: contextvars.Token | tuple | None = None

    def __enter__(self) -> None:
        # `_trap`: the one reference to the trap in force. Read where needed rather than kept in
        # a local: the unsampled path below reads it twice, fewer bytecodes than a local's
        # store and loads.
        if not _trap.declared:  # a read, not a store, on every later entry
            _trap.declared = True
        outer = _regions.get()
        gate = _trap.sampler
        if outer or gate is None:
            # The common case with no monitor, and every nested region: nothing but the stack to
            # push. A bare token, as for the monitor's unsampled region, spares `_enter`'s call
            # and its tuple (bench/monitor_overhead.py's `region_alone` arm). The outermost
            # region still goes the long way when a step observer counts steps.
            if self.policy is None and self._saved is None and (outer or _trap.step_observer is None):
                self._saved = _regions.set(outer + (self.name,))
                return None
            return self._enter(outer, _trap, None)
        # The outermost region of a step under a monitor. Most are not sampled: they take one
        # counter step, one comparison and one context-variable write (so that regions nested
        # in it know they are nested), and nothing else. Every Python step here costs several
        # times its isolated time next to a launch-bound step (bench/next_to_step.py). A monitor
        # has no step observer (`Trap` refuses both), so there is none to look for here.
        index = next(gate.entries)
        if index < gate.next_sampled and self._saved is None and self.policy is None:
            self._saved = _regions.set((self.name,))
            return None
        return self._enter(outer, _trap, index)

    def _enter(self, outer: tuple, trap: TrapState, index: int | None) -> None:
        token = _regions.set(outer + (self.name,))
        policy_token = _policy_override.set(self.policy) if self.policy is not None else None
        gate = entered = observer = None
        if not outer:  # the outermost region holds the sampling decision and the step
            if index is not None:  # counted by __enter__
                gate = trap.sampler
                entered = gate.enter_counted(index)
            observer = trap.step_observer
            if observer is not None:
                observer.step_entered()
        self._saved = (token, policy_token, gate, entered, observer, self._saved)
        return None

    def __exit__(self, exc_type, exc, traceback) -> bool:
        saved = self._saved
        if type(saved) is _Token:  # only the stack was pushed (__enter__'s short paths)
            self._saved = None
            _regions.reset(saved)
            return False
        token, policy_token, gate, entered, observer, self._saved = saved
        if entered is not None:
            gate.exit(entered)
        if policy_token is not None:
            _policy_override.reset(policy_token)
        _regions.reset(token)
        if observer is not None:
            observer.step_exited()
        return False

    def __call__(self, func: Callable) -> Callable:
        return run_in_region(func, self.name, self.policy)


def run_in_region(func: Callable, name: str, policy: Policy | None = None) -> Callable:
    """`func` wrapped so that each call runs in a region `name` (the decorator form, `--scope`).
    Under a monitor, an unsampled outermost call makes no region object: it takes the short path
    of `region.__enter__` inline (one counter step, one comparison, one context-variable write),
    which saves the object and its two method calls on every unsampled step."""
    stack = (name,)

    @functools.wraps(func)
    def in_region(*args, **kwargs):
        gate = _trap.sampler
        if gate is None or policy is not None or _regions.get():
            with region(name, policy=policy):
                return func(*args, **kwargs)
        index = next(gate.entries)
        if index < gate.next_sampled:  # unsampled (a monitor has no step observer)
            token = _regions.set(stack)
            try:
                return func(*args, **kwargs)
            finally:
                _regions.reset(token)
        entered = region(name)
        entered._enter((), _trap, index)  # counted above: the gate decides on this index
        try:
            return func(*args, **kwargs)
        finally:
            entered.__exit__(None, None, None)

    return in_region


@contextlib.contextmanager
def allow_sync(reason: str) -> Iterator[None]:
    """Syncs inside are expected (warm-up, a deliberate read): still reported, marked allowed,
    never warned about or raised."""
    if not reason:
        raise ValueError("allow_sync needs a reason, so the report says why the sync is fine")
    token = _allow_reason.set(reason)
    try:
        yield
    finally:
        _allow_reason.reset(token)


@contextlib.contextmanager
def suspend() -> Iterator[None]:
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


def _resolve(spec: str) -> tuple[object, str, Callable]:
    parsed = ScopeSpec.parse(spec)
    owner: object = importlib.import_module(parsed.module)
    parts = parsed.attrs
    for part in parts[:-1]:
        owner = getattr(owner, part)
    name = parts[-1]
    return owner, name, getattr(owner, name)


def scope_callable(spec: str) -> Callable[[], None]:
    """Wrap `package.module:Class.method` so each call runs in a region named after it.
    Returns a function that undoes the wrapping."""
    owner, name, _ = _resolve(spec)
    undo = scope_attribute(owner, name, spec)
    declare_scope()
    return undo


def scope_attribute(owner: object, name: str, spec: str) -> Callable[[], None]:
    """Replace `owner.name` (a function or plain method) by a wrapper that runs each call in a
    region named after the spec's `Class.method` part; returns the undo."""
    original = getattr(owner, name)
    raw = vars(owner).get(name, original) if isinstance(owner, type) else original
    if isinstance(raw, (staticmethod, classmethod)):
        raise ValueError(f"--scope {spec}: static and class methods are not supported; scope a plain method or function")
    setattr(owner, name, run_in_region(original, ScopeSpec.parse(spec).attr_path))

    def undo() -> None:
        setattr(owner, name, raw)

    return undo


def scope_module_forwards() -> Callable[[], None]:
    """Every `nn.Module` call runs in a region named after the outermost module's forward."""
    import torch

    original_call = torch.nn.Module.__call__

    def call_in_region(self, *args, **kwargs):
        stack = _regions.get()
        if stack and stack[-1].endswith(".forward"):
            return original_call(self, *args, **kwargs)
        with region(f"{type(self).__name__}.forward"):
            return original_call(self, *args, **kwargs)

    torch.nn.Module.__call__ = call_in_region
    declare_scope()

    def undo() -> None:
        torch.nn.Module.__call__ = original_call

    return undo


def apply_scopes(specs, module_forward: bool, main_module: str | None = None) -> list[Callable[[], None]]:
    """Apply `--scope` specs and `--module-forward`; returns the undo functions, in order.
    `main_module` is the module run with `-m` (it runs as `__main__`). A spec on the program's
    own `__main__`, on a `file.py`, or on `main_module` waits for its class to be defined
    (`class_scopes`); any other is imported and wrapped now."""
    from syncscope.runtime import class_scopes

    undo = []
    try:
        for spec in specs:
            deferred = class_scopes.deferred_target(spec, main_module)
            if deferred is None:
                undo.append(scope_callable(spec))
            else:
                undo.append(class_scopes.scope_when_defined(spec, deferred, scope_attribute))
                declare_scope()
        if module_forward:
            undo.append(scope_module_forwards())
    except BaseException:
        for fn in reversed(undo):
            fn()
        raise
    return undo
