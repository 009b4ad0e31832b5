"""pytest plugin (entry point `syncscope`): fail a test on any in-scope host sync, listing the sites.

Two ways to ask, same check:

    @pytest.mark.no_host_syncs                 # or no_host_syncs(device="sim")
    def test_decode_step(): ...

    def test_decode_step(no_host_syncs):       # the fixture also gives the events so far
        ...
        assert not no_host_syncs.events

The trap covers the test function only, not fixture setup: loading a model or warming up may
sync, the step under test may not. Every sync is recorded and the test fails at its end with all
of them listed (not at the first), so one run shows everything to fix. Syncs under
`syncscope.allow_sync(reason)` are allowed; once a test enters a `syncscope.region`, only syncs
inside regions count. Without a GPU the simulated device stands in (`device="auto"`), so this
works in CPU-only CI.

Kept import-light: torch is imported only when a test actually asks for the check.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

MARKER = "no_host_syncs"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "syncscope_device",
        "device for no_host_syncs checks: auto (a GPU when present, else the simulated device), cuda or sim",
        default="auto",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(device='auto'): fail the test on any in-scope host sync in its body, listing the sites",
    )


@dataclass(frozen=True)
class SyncCheck:
    """What the `no_host_syncs` fixture gives a test: the syncs its body has made so far."""

    item: pytest.Item

    @property
    def events(self) -> list:
        state = self.item.stash.get(_STATE, None)
        return state.events() if state is not None else []


class _State:
    def __init__(self, trap, start: int):
        self.trap = trap
        self.start = start

    def events(self) -> list:
        return list(self.trap.events[self.start :])


_STATE = pytest.StashKey[_State]()


def _device(item: pytest.Item) -> str | None:
    """The device to check on, or None when the test did not ask for the check."""
    marker = item.get_closest_marker(MARKER)
    if marker is None and MARKER not in getattr(item, "fixturenames", ()):
        return None
    if marker is not None and "device" in marker.kwargs:
        return str(marker.kwargs["device"])
    return str(item.config.getini("syncscope_device") or "auto")


def _rearm(trap) -> None:
    """A trap from outside the test (`syncscope run -m pytest`) had its warning route reset by
    the `warnings.catch_warnings()` pytest wraps each test in: put it back."""
    rearm = getattr(getattr(trap, "detector", None), "rearm", None)
    if rearm is not None:
        rearm()
    from syncscope.runtime import warning_sites

    warning_sites.rearm()  # the filter that lets warnings raised in our handlers reach the program's line


def describe(events: list, nodeid: str, device: str) -> str:
    from syncscope.report.aggregate import sites_from_events

    sites = [s for s in sites_from_events(events) if s.in_scope and not s.allowed]
    total = sum(s.count for s in sites)
    lines = [f"syncscope: {total} host sync(s) at {len(sites)} site(s) in {nodeid} (device {device}):"]
    for s in sorted(sites, key=lambda s: (s.path, s.line)):
        lines.append(f"  {s.path}:{s.line}: {s.kind} in {s.function} ({', '.join(s.apis)}) x{s.count}")
        if s.source:
            lines.append(f"      {s.source}")
        # The test's own callers only: pytest's and pluggy's frames say nothing here.
        callers = [f for f in s.stack[1:] if not str(f.get("path", "")).startswith(("/", "<"))]
        for frame in callers[:3]:
            lines.append(f"      called from {frame['path']}:{frame['line']} in {frame['function']}")
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    device = _device(item)
    if device is None:
        return (yield)
    from syncscope.runtime.trap import active, trap

    outer = active()
    with trap(device=device) as t:
        if outer is not None:
            _rearm(t)
        state = _State(t, len(t.events))
        item.stash[_STATE] = state
        try:
            result = yield  # the test body; its own failure propagates as is
        finally:
            del item.stash[_STATE]
        events = state.events()
    bad = [e for e in events if e.in_scope and not e.allowed]
    if bad:
        pytest.fail(describe(events, item.nodeid, t.device), pytrace=False)
    return result


@pytest.fixture
def no_host_syncs(request: pytest.FixtureRequest) -> SyncCheck:
    """Fail the test on any in-scope host sync in its body (simulated device without a GPU)."""
    return SyncCheck(request.node)
