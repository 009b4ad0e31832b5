"""syncscope: find, time and prevent host<->GPU synchronizations in PyTorch inference code.

Importing syncscope is cheap: torch is imported only by the runtime parts that need it, so the
linter (which runs on every commit) never pays for it.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Public API, loaded on first use (PEP 562) so `import syncscope` stays free of torch.
_LAZY = {
    "region": "syncscope.runtime.regions",
    "allow_sync": "syncscope.runtime.regions",
    "trap": "syncscope.runtime.trap",
    "forbid_syncs": "syncscope.runtime.trap",
    "BubblesUnavailable": "syncscope.runtime.bubble_window",
    "Trap": "syncscope.runtime.trap",
    "HostSyncError": "syncscope.runtime.policy",
    "Policy": "syncscope.runtime.policy",
    "HostSyncEvent": "syncscope.events",
    "SyncKind": "syncscope.events",
    "Site": "syncscope.site",
    "monitor": "syncscope.monitoring",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'syncscope' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
