"""SYN601: calls that hand a device value to a helper whose body syncs on that parameter.

Runs once all files are analyzed, on the summaries and call sites each file recorded, so it
works across files and from the cache alike. One level only: a helper's summary holds the syncs
its own body does on its parameters, not those of the functions it calls."""

from __future__ import annotations

from . import provenance as P


def helper_findings(results: dict) -> dict[str, list[tuple]]:
    """Extra raw findings per relative path, same tuple shape as RawResult.findings."""
    summaries: dict[str, tuple[str, dict]] = {}
    for path, result in results.items():
        for qualname, entry in result.summaries.items():
            summaries.setdefault(qualname, (path, entry))
    found: dict[str, list[tuple]] = {}
    if not summaries:
        return found
    for path, result in results.items():
        for function, line, column, start, end, callee, shift, args in result.calls:
            target = summaries.get(callee)
            if target is None:
                continue
            helper_path, entry = target
            params: list[str] = entry["params"]
            for position, keyword, where, text in args:
                if not P.maybe_device(where):
                    continue
                if keyword is not None:
                    param = keyword
                elif position is not None and position + shift < len(params):
                    param = params[position + shift]
                else:
                    continue
                sync = entry["syncs"].get(param)
                if sync is None:
                    continue
                code, sync_line, message = sync
                name = callee.rsplit(".", 1)[-1]
                what = message.split(";")[0].split(" (")[0]
                found.setdefault(path, []).append((
                    "SYN601", line, column, start, end, function,
                    f"`{name}()` syncs on its argument `{text or param}`: "
                    f"{helper_path}:{sync_line} {code} {what}",
                    None, "error",
                ))
                break
    return found
