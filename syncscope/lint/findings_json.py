"""The one reader of `syncscope lint --output-format json`: the gate's baseline, `syncscope lint
--confirm`, the HTML page's lint overlay and `confirm()` on dicts all read findings through it,
so they accept the same documents and the same field names.

A document is a list of findings, or an object holding that list under `findings` (syncscope's
own output), `results` or `diagnostics`. A finding names its place with `path`/`filename`/`file`,
`line` (or Ruff's `location.row`) and `code`/`rule`/`kind`.

Standard library only: the gate and the HTML report read lint output without libcst or torch.
"""

from __future__ import annotations

from typing import Any

from syncscope.site import Site

LIST_KEYS = ("findings", "results", "diagnostics")


class LintJsonError(ValueError):
    """A lint JSON document or finding that cannot be read; the message is one line."""


def finding_list(data: Any) -> list | None:
    """The findings of a parsed lint JSON document, or None when it is not one."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in LIST_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
    return None


def _first(item: dict, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if item.get(key) not in (None, ""):
            return item[key]
    return default


def lint_site(item: dict) -> Site:
    """A lint finding (one object of `syncscope lint --output-format json`) as a `Site`.
    Tolerant of Ruff's field names too (`filename`, `location.row`, `code`)."""
    location = item.get("location") if isinstance(item.get("location"), dict) else {}
    path = _first(item, "path", "filename", "file")
    line = _first(item, "line", default=location.get("row", location.get("line")))
    kind = _first(item, "code", "rule", "kind")
    if not isinstance(path, str) or not isinstance(kind, str) or line is None:
        raise ValueError("needs path, line and code")
    return Site(
        path=path.replace("\\", "/"),
        line=int(line),
        function=str(_first(item, "function", "scope", default="<module>")),
        kind=kind,
        source=str(_first(item, "source", "source_line", "code_line", default="")),
    )


def finding_sites(items: list, origin: str) -> list[tuple[Site, dict]]:
    """Each finding with its `Site`, in order; `LintJsonError` names the first malformed one."""
    sites = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise ValueError("not an object")
            sites.append((lint_site(item), item))
        except (TypeError, ValueError, OverflowError) as exc:
            raise LintJsonError(f"{origin}: finding #{index} is malformed ({exc})") from None
    return sites
