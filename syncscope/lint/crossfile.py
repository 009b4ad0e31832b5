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


def host_fed_params(results: dict) -> set[tuple[str, str]]:
    """(function, parameter) pairs that every call in the linted tree passes host data (or a
    plain Python value) for: a sync on such a parameter inside the helper is not one in
    practice (`split_prefill_chunks(seq_lens_cpu, ...)`). A function nobody calls keeps its
    findings."""
    wanted: dict[str, list[str]] = {}
    for result in results.values():
        for qualname, entry in result.summaries.items():
            wanted.setdefault(qualname, entry["params"])
    if not wanted:
        return set()
    seen: dict[tuple[str, str], bool] = {}  # -> every call so far passed host data
    for result in results.values():
        for _, _, _, _, _, callee, shift, args in result.calls:
            params = wanted.get(callee)
            if params is None:
                continue
            passed: dict[str, int] = {}
            for position, keyword, where, _ in args:
                if keyword is not None:
                    passed[keyword] = where
                elif position is not None and position + shift < len(params):
                    passed[params[position + shift]] = where
            for param in params:
                host = param in passed and passed[param] in (P.PY, P.HOST)
                seen[(callee, param)] = seen.get((callee, param), True) and host
    return {key for key, host in seen.items() if host}
