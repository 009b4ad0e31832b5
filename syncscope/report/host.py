"""The top-level report keys that say where and how a report was made: tool, host, process,
torch and Python versions, the command."""

from __future__ import annotations

import os
from typing import Any


def run_metadata(*, device: str, gpu: str | None, target: str, args: list[str], module: bool, root: str, mode: str | None = None) -> dict[str, Any]:
    """The top-level keys that say where and how a report was made (docs/report-schema.md)."""
    import datetime
    import socket
    import sys

    import syncscope

    torch = sys.modules.get("torch")  # already imported by whoever ran the program
    tool = {"name": "syncscope", "version": syncscope.__version__}
    if mode:
        tool["mode"] = mode
    return {
        "tool": tool,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "gpu": gpu,
        "torch": getattr(torch, "__version__", None),
        "python": sys.version.split()[0],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None,
        "command": (["-m"] if module else []) + [target] + list(args),
        "project_root": root,
    }
