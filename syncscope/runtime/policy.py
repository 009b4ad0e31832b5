"""What to do when an in-scope sync happens: record it, warn, or raise at the offending line."""

from __future__ import annotations

import enum


class Policy(str, enum.Enum):
    RECORD = "record"
    WARN = "warn"
    ERROR = "error"


class HostSyncError(RuntimeError):
    """Raised at the line that synced, under the `error` policy or inside `forbid_syncs()`."""

    def __init__(self, kind: str, api: str, location: str, source: str = ""):
        self.kind = kind
        self.api = api
        self.location = location
        self.source = source
        from syncscope.terminal import safe_text  # the message ends up on a terminal

        detail = f": {source}" if source else ""
        super().__init__(safe_text(f"host sync ({kind}, {api}) at {location}{detail}"))
