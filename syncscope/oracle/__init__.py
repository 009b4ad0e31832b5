"""The blocking-line oracle: find host<->GPU syncs no hook can see, by timing each line of the
scoped functions behind a known amount of queued GPU work (`syncscope oracle`, docs/oracle.md).

Modules: `tracer` (line boundaries: sys.settrace / sys.monitoring), `timing` (the queue ahead of
each line, calibration), `measure` (repeats and passes), `verdict` (blocked / free / uncertain),
`cuda` (the only GPU code), `scopes` (--scope patching), `report`, `compare`, `render`, `api`.
Everything but `cuda` is standard library only and tested on the CPU with a fake GPU and clock.
"""
