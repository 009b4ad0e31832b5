"""Checks of a saved report's fields, each failing with a one-line reason: every renderer relies
on the schema's types, so a damaged file fails here, once, clearly (report/schema.py calls them)."""

from __future__ import annotations

from typing import Any

_MISSING = object()
_LIMIT = 2**63  # counts and nanoseconds beyond int64 are damage, not data


def _field(data: dict, key: str, default):
    value = data.get(key, default) if default is not _MISSING else data[key]
    return default if value is None and default is not _MISSING else value


def _str(data: dict, key: str, default=_MISSING) -> str:
    value = _field(data, key, default)
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string, not {type(value).__name__}")
    return value


def _count(data: dict, key: str, default=_MISSING) -> int:
    value = _field(data, key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _LIMIT:
        raise ValueError(f"{key} must be a whole number >= 0, not {str(value)[:40]}")
    return value


def _bool(data: dict, key: str, default=_MISSING) -> bool:
    value = _field(data, key, default)
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false")
    return value


def _list(data: dict, key: str) -> list:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list")
    return value


def _strs(data: dict, key: str) -> list[str]:
    value = _list(data, key)
    if not all(isinstance(v, str) for v in value):
        raise TypeError(f"{key} must be a list of strings")
    return list(value)


def _optional_count(data: dict, key: str) -> int | None:
    return None if data.get(key) is None else _count(data, key)


def _optional_share(data: dict, key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{key} must be a fraction between 0 and 1, not {str(value)[:40]}")
    return float(value)


def _is_int(value: Any, *, none: bool = True) -> bool:
    return (value is None and none) or (isinstance(value, int) and not isinstance(value, bool) and abs(value) < _LIMIT)


_EVENT_INTS = ("pid", "blocked_ns")  # or null; ts_ns is always a number (timelines sort on it)
_EVENT_TEXTS = ("thread", "region", "api")


def _check_events(events: list, n_sites: int) -> None:
    """Every reader (tables, Perfetto, combine) indexes and sorts events: check them once here."""
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not _is_int(e.get("site"), none=False) or not 0 <= e["site"] < n_sites:
            raise ValueError(f"event #{i} does not name a site of this report")
        bad = [k for k in _EVENT_INTS if not _is_int(e.get(k))] + ["ts_ns"] * (not _is_int(e.get("ts_ns", 0), none=False)) + [
            k for k in _EVENT_TEXTS if not (e.get(k) is None or isinstance(e.get(k), str))
        ] + [k for k in ("waited",) if not (e.get(k) is None or isinstance(e.get(k), bool))]
        if bad:
            raise ValueError(f"event #{i}: {bad[0]} = {e.get(bad[0])!r}")


def _check_meta(data: dict) -> None:
    if not _process_ok(data):
        raise ValueError(f"pid, rank, host or created = {_short([data.get(k) for k in ('pid', 'rank', 'host', 'created')])}")
    parts = data.get("combined_from")
    if parts is not None and not (isinstance(parts, list) and all(isinstance(p, dict) and _process_ok(p) and _is_text(p.get("report")) for p in parts)):
        raise ValueError("combined_from must list the processes as objects with an integer pid")


def _process_ok(entry: dict) -> bool:
    """A process's identity (combine keys and sorts on it): integer pid and rank, text host and
    creation time, each or null."""
    return _is_int(entry.get("pid")) and _is_int(entry.get("rank")) and _is_text(entry.get("host")) and _is_text(entry.get("created"))


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


_BUBBLE_INTS = ("steps", "warmup", "window_start_ns", "window_end_ns", "window_ns", "gpu_time_ns", "total_idle_ns", "syncscope_ns",
                "bubble_count", "bubble_ns", "gap_count", "syncs_in_window", "activities", "gaps_truncated")
_GAP_INTS = ("device", "start_ns", "end_ns", "idle_ns")


def _check_bubbles(bubbles: Any, n_sites: int) -> None:
    """The top-level bubble window (docs/report-schema.md): every key its readers (the console
    line, Perfetto's GPU tracks, the summary) use has the schema's type, where present."""
    if bubbles is None:
        return
    if not isinstance(bubbles, dict):
        raise ValueError(f"bubbles = {_short(bubbles)} (an object expected)")
    bad = [k for k in _BUBBLE_INTS if not _is_int(bubbles.get(k, 0), none=False)]
    bad += [k for k in ("release_lag_ns",) if not _is_int(bubbles.get(k))]
    bad += [k for k in ("mode",) if not isinstance(bubbles.get(k, ""), str)]
    bad += [k for k in ("idle_ns", "overhead_ns") if not _is_int_map(bubbles.get(k, {}))]
    bad += [k for k in ("devices",) if not (isinstance(bubbles.get(k, []), list) and all(_is_int(d, none=False) for d in bubbles.get(k, [])))]
    bad += [k for k in ("notes",) if not (isinstance(bubbles.get(k, []), list) and all(isinstance(n, str) for n in bubbles.get(k, [])))]
    if bad:
        raise ValueError(f"bubbles.{bad[0]} = {_short(bubbles.get(bad[0]))}")
    gaps = bubbles.get("gaps", [])
    if not isinstance(gaps, list):
        raise ValueError(f"bubbles.gaps = {_short(gaps)} (a list expected)")
    for i, gap in enumerate(gaps):
        if not isinstance(gap, dict):
            raise ValueError(f"bubbles.gaps #{i} is not an object")
        bad = [k for k in _GAP_INTS if not _is_int(gap.get(k, 0), none=False)] + ["start_ns"] * ("start_ns" not in gap) + ["end_ns"] * ("end_ns" not in gap)
        bad += [k for k in ("cause",) if not (gap.get(k) is None or isinstance(gap.get(k), str))]
        site = gap.get("site")
        bad += ["site"] * (site is not None and not (_is_int(site, none=False) and 0 <= site < n_sites))
        if bad:
            raise ValueError(f"bubbles.gaps #{i}: {bad[0]} = {_short(gap.get(bad[0]))}")


def _is_int_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _is_int(v, none=False) for k, v in value.items())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
