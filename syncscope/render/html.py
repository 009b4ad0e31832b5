"""`syncscope report REPORT --html`: one self-contained HTML page to look at a run.

The page is rendered with Jinja2 (autoescaped) from a report of `syncscope run` (simulated device
or GPU), `syncscope oracle` or `syncscope combine`: a summary, the sites table (sortable,
filterable), the source of each site's function with the sync lines heat-highlighted, the timeline
of events, and optionally a lint overlay (`--lint`, matched as `syncscope lint --confirm` does) and
a before/after comparison (`--compare`). Tables are plain HTML, so the page reads and prints
without JavaScript; the inline script adds sorting, filtering, the source view and the timeline.

Nothing is fetched at view time: CSS and JS are inlined, and the page's Content-Security-Policy
allows only those two blocks (by hash), so even text that slipped past escaping could not run.
Report data reaches the script as JSON inside `<script type="application/json">` with `<`, `>`,
`&` escaped, and the script writes it into the page with `textContent` only.

Standard library plus Jinja2; no torch.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any

from syncscope.atomic import write_text_atomic
from syncscope.report.schema import Report, ReportError, SiteStats, format_ms, read_report_json
from syncscope.render.sources import SourceIndex

PAGE_ROWS = 100  # sites table rows laid out at a time (sorting and filtering see all of them)
MAX_TIMELINE_EVENTS = 50_000  # events drawn; the page says how many more the report holds

# Optional GPU-idle ("bubble") fields of `syncscope run --bubbles` (issue 11, docs/report-schema.md
# version 2). Read only where present, and only through these names, so a rename is one edit here.
GPU_IDLE_FIELDS = {
    "site_count": "bubble_count",  # per site: idle gaps attributed to its syncs
    "site_ns": "bubble_ns",  # per site: their GPU idle time
    "window": "bubbles",  # top level: the profiled window (an object)
    "window_idle_ns": ("total_idle_ns",),  # in it: every idle gap of every device in the window
    "window_attributed_ns": ("bubble_ns",),  # in it: the idle time caused by syncs
}


class HtmlInputError(ValueError):
    """A --lint or --compare input that cannot be used (one clear line for the CLI)."""


@dataclass
class LoadedReport:
    report: Report
    raw_sites: list[dict]  # as written: keeps keys SiteStats does not know (processes, bubbles)
    path: str


def load(path: str) -> LoadedReport:
    data = read_report_json(path)
    report = Report.from_json(data, origin=path)
    raw = [s if isinstance(s, dict) else {} for s in data.get("sites", [])]
    return LoadedReport(report, raw, path)


def load_lint(path: str) -> list[dict]:
    """Findings of `syncscope lint --output-format json` (a list, or an object with `findings`)."""
    from syncscope.lint.findings_json import LintJsonError, finding_list, finding_sites

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise HtmlInputError(f"{path}: no such lint output") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HtmlInputError(f"{path}: cannot read lint output ({exc})") from None
    if isinstance(data, dict) and "schema" in data:
        raise HtmlInputError(f"{path}: a syncscope report, not lint output (make it with `syncscope lint --output-format json`)")
    items = finding_list(data)
    if items is None:
        raise HtmlInputError(f"{path}: not lint JSON output (expected a list of findings)")
    try:
        finding_sites(items, path)
    except LintJsonError as exc:
        raise HtmlInputError(str(exc)) from None
    return items


# -- the page's data ---------------------------------------------------------------------------
def _ms(ns: int | None) -> str:
    return "" if ns is None else format_ms(ns)


def _group(s: SiteStats) -> str:
    if s.allowed:
        return "allowed"
    return "in scope" if s.in_scope else "out of scope"


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _gpu_idle_window(meta: dict) -> dict | None:
    window = meta.get(GPU_IDLE_FIELDS["window"])
    if not isinstance(window, dict):
        return None
    idle = next((_number(window.get(k)) for k in GPU_IDLE_FIELDS["window_idle_ns"] if _number(window.get(k)) is not None), None)
    attributed = next((_number(window.get(k)) for k in GPU_IDLE_FIELDS["window_attributed_ns"] if _number(window.get(k)) is not None), None)
    if idle is None and attributed is None:
        return None
    return {"idle_ms": _ms(idle), "attributed_ms": _ms(attributed)}


def _ranks(raw: dict) -> str:
    processes = raw.get("processes")
    if not isinstance(processes, list):
        return ""
    parts = []
    for p in processes:
        if isinstance(p, dict) and p.get("count"):
            who = f"rank {p['rank']}" if isinstance(p.get("rank"), int) else f"pid {p.get('pid')}"
            parts.append(f"{who}: {p['count']}")
    return ", ".join(parts)


def _site_records(loaded: LoadedReport, sources: SourceIndex, root: str | None) -> list[dict]:
    records = []
    for index, (s, raw) in enumerate(zip(loaded.report.sites, loaded.raw_sites + [{}] * len(loaded.report.sites))):
        on_disk = sources.line_text(s.path, s.line, root)
        idle_ns = _number(raw.get(GPU_IDLE_FIELDS["site_ns"]))
        stack = []
        for frame in s.stack:
            if not isinstance(frame, dict):
                continue
            path, line = str(frame.get("path", "")), _number(frame.get("line")) or 0
            stack.append({"path": path, "line": line, "function": str(frame.get("function", "")),
                          "x": sources.excerpt_for(path, line, root)})
        records.append({
            "i": index,
            "path": s.path,
            "line": s.line,
            "function": s.function,
            "kind": s.kind,
            "source": s.source,
            "count": s.count,
            "blocked_ns": s.blocked_ns if s.measured else None,
            "blocked_ms": _ms(s.blocked_ns if s.measured else None),
            "mean_ms": _ms(s.mean_blocked_ns),
            "idle_ns": idle_ns,
            "idle_ms": _ms(idle_ns),
            "idle_count": _number(raw.get(GPU_IDLE_FIELDS["site_count"])),
            "group": _group(s),
            "allow_reason": s.allow_reason,
            "apis": s.apis,
            "regions": s.regions,
            "ranks": _ranks(raw),
            "stack": stack,
            "related": s.related,
            "fingerprint": s.fingerprint,
            "lint": None,  # with --lint: "confirmed" or "runtime only" (in-scope sites only)
            "lint_codes": None,  # the rules a confirmed site confirmed
            "x": sources.excerpt_for(s.path, s.line, root),
            # the file changed since the run: the page shows the recorded line, and says so
            "stale": on_disk is not None and on_disk.strip() != s.source.strip(),
        })
    return records


def _timeline(report: Report) -> dict:
    """Events as compact rows [site, ms, blocked_ns, process, thread, region], with the lane
    names. Each process's clock starts at its own trap, so lanes of different processes share
    an axis but not an origin."""
    procs: dict[tuple, int] = {}
    proc_labels: list[str] = []
    threads: dict[tuple, int] = {}
    thread_labels: list[str] = []
    regions: dict[str, int] = {}
    rows = []
    events = [e for e in report.events[:MAX_TIMELINE_EVENTS] if isinstance(e, dict) and _number(e.get("site")) is not None]
    hosts = {e.get("host") for e in events}
    sites = len(report.sites)
    for e in events:
        site = int(e["site"])
        if not 0 <= site < sites:
            continue
        rank, pid, host = e.get("rank"), e.get("pid"), e.get("host")
        proc = (rank, pid, host)
        if proc not in procs:
            label = f"rank {rank}" if isinstance(rank, int) else f"pid {pid}"
            procs[proc] = len(proc_labels)
            proc_labels.append(label + (f" on {host}" if len(hosts) > 1 and host else ""))
        thread = (procs[proc], str(e.get("thread")))
        if thread not in threads:
            threads[thread] = len(thread_labels)
            thread_labels.append(thread[1])
        region = str(e["region"]) if e.get("region") is not None else "(no region)"
        regions.setdefault(region, len(regions))
        ts = _number(e.get("ts_ns")) or 0
        rows.append([site, round(ts / 1e6, 4), _number(e.get("blocked_ns")), procs[proc], threads[thread], regions[region]])
    return {
        "rows": rows,
        "processes": proc_labels,
        "threads": [[p, name] for (p, _), name in zip(threads, thread_labels)],
        "regions": list(regions),
        "shown": len(rows),
        "total": len(report.events) + report.events_truncated,
    }


def _lint_overlay(loaded: LoadedReport, findings: list[dict], sources: SourceIndex, records: list[dict], root: str | None) -> dict:
    """Findings as `syncscope lint --confirm` matches them (syncscope/lint/confirm.py): confirmed by the
    run, static only (no event reached them), runtime only (syncs no rule caught). The lint output
    is read as made from the run's project root, as `lint --confirm` assumes."""
    from syncscope.lint.confirm import confirm
    from syncscope.lint.findings_json import lint_site

    result = confirm(findings, loaded.report)
    index = {id(s): i for i, s in enumerate(loaded.report.sites)}

    def finding(item: dict, state: str, runtime=()) -> dict:
        site = lint_site(item)
        ids = [index[id(s)] for s in runtime]
        return {
            "state": state,
            "code": site.kind,
            "name": str(item.get("name") or ""),
            "message": str(item.get("message") or ""),
            "path": site.path,
            "line": site.line,
            "function": site.function,
            "sites": ids,
            "events": sum(records[i]["count"] for i in ids),
            "blocked_ms": _ms(sum(s.blocked_ns for s in runtime)) if any(s.measured for s in runtime) else "",
            "x": sources.excerpt_for(site.path, site.line, root),
        }

    confirmed = [finding(c.finding, "confirmed", c.runtime) for c in result.confirmed]
    static_only = [finding(f, "static only") for f in result.unconfirmed]
    for item in confirmed:
        for i in item["sites"]:
            codes = records[i]["lint_codes"] = records[i]["lint_codes"] or []
            if item["code"] not in codes:
                codes.append(item["code"])
            records[i]["lint"] = "confirmed"
    uncaught = [index[id(s)] for s in result.uncaught]
    for i in uncaught:
        records[i]["lint"] = "runtime only"
    return {"confirmed": confirmed, "static_only": static_only, "runtime_only": uncaught}


def _compare_view(before: LoadedReport, after: LoadedReport, sources: SourceIndex) -> dict:
    from syncscope.render.diff import compare

    result = compare(before.report, after.report)
    before_records = _site_records(before, sources, before.report.meta.get("project_root"))

    def side(t) -> dict | None:
        if t is None:
            return None
        return {"count": t.count, "blocked_ms": _ms(t.blocked_ns) if t.measured else "", "status": t.status}

    rows = []
    for c in result.changes:
        shown = c.shown.first
        rows.append({
            "state": c.state,
            "kind": shown.kind,
            "path": shown.path,
            "line": shown.line,
            "function": shown.function,
            "source": shown.source,
            "before": side(c.before),
            "after": side(c.after),
            "site": c.after.indices[0] if c.after else None,  # in this report
            "before_site": c.before.indices[0] if c.before else None,  # in the other one
        })

    def total(t: dict) -> dict:
        return {**t, "blocked_ms": _ms(t["blocked_ns"])}

    counts = {state: len(result.of(state)) for state in ("gone", "new", "changed", "unchanged")}
    return {"path": before.path, "rows": rows, "counts": counts, "before": total(result.totals_before),
            "after": total(result.totals_after), "before_sites": before_records}


def _summary(loaded: LoadedReport, records: list[dict]) -> dict:
    report, meta = loaded.report, loaded.report.meta
    in_scope, allowed, out_of_scope = report.grouped()
    measured = any(s.measured for s in report.sites)
    idle_sites = [r["idle_ns"] for r in records if r["idle_ns"] is not None]
    command = meta.get("command")
    parts = meta.get("combined_from") if isinstance(meta.get("combined_from"), list) else []
    oracle = meta.get("oracle") if isinstance(meta.get("oracle"), dict) else None
    calibration = oracle.get("calibration") if oracle and isinstance(oracle.get("calibration"), dict) else {}
    device = str(meta.get("device") or "?")
    return {
        "device": device + (f" ({meta['gpu']})" if meta.get("gpu") else "") + (" (simulated CUDA device)" if device == "sim" else ""),
        "command": " ".join(str(c) for c in command) if isinstance(command, list) else str(command or ""),
        "status": str(meta.get("status") or ""),
        "exit_code": meta.get("exit_code"),
        "error": meta.get("error"),
        "created": str(meta.get("created") or ""),
        "where": ", ".join(str(x) for x in (meta.get("host"), f"pid {meta['pid']}" if meta.get("pid") else None,
                                            f"rank {meta['rank']}" if isinstance(meta.get("rank"), int) else None) if x),
        "processes": [f"rank {p.get('rank')}" if isinstance(p.get("rank"), int) else f"{p.get('host')}:{p.get('pid')}"
                      for p in parts if isinstance(p, dict)],
        "oracle": bool(oracle),
        "oracle_sleep_ms": _ms(_number(calibration.get("sleep_ns"))) if calibration else "",
        "in_scope_sites": len(in_scope),
        "in_scope_events": sum(s.count for s in in_scope),
        "allowed_events": sum(s.count for s in allowed),
        "out_of_scope_events": sum(s.count for s in out_of_scope),
        "sites": len(report.sites),
        "measured": measured,
        "blocked_ms": _ms(sum(s.blocked_ns for s in in_scope)) if measured else "",
        "gpu_idle_ms": _ms(sum(idle_sites)) if idle_sites else "",
        "gpu_idle_window": _gpu_idle_window(meta),
        "events_truncated": report.events_truncated,
    }


def _oracle_lines(report: Report) -> list[list]:
    from syncscope.oracle.report import oracle_lines

    out = []
    for line in oracle_lines(report):
        if isinstance(line, dict) and isinstance(line.get("path"), str) and _number(line.get("line")) is not None:
            out.append([line["path"], int(line["line"]), str(line.get("verdict", "")), line.get("ratio")])
    return out


def page_data(loaded: LoadedReport, *, lint: list[dict] | None = None, before: LoadedReport | None = None) -> dict:
    """Everything the page shows, as plain data (the template's context; tests read it too)."""
    sources = SourceIndex()
    root = loaded.report.meta.get("project_root")
    records = _site_records(loaded, sources, root)
    data = {
        "title": os.path.basename(loaded.path),
        "report_path": loaded.path,
        "summary": _summary(loaded, records),
        "sites": records,
        "kinds": sorted({r["kind"] for r in records}),
        "timeline": _timeline(loaded.report),
        "oracle_lines": _oracle_lines(loaded.report),
        "lint": _lint_overlay(loaded, lint, sources, records, root) if lint is not None else None,
        "compare": _compare_view(before, loaded, sources) if before is not None else None,
    }
    data["excerpts"] = sources.to_json()  # last: the sections above registered what they show
    return data


# -- rendering ---------------------------------------------------------------------------------
def _asset(name: str) -> str:
    return resources.files("syncscope.render").joinpath("html_assets", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


# Site keys the page's script fills in itself when absent (report.js, DEFAULTS): leaving them out
# of the embedded data halves a 5,000-site page.
_SITE_DEFAULTS = {"blocked_ns": None, "blocked_ms": "", "mean_ms": "", "idle_ns": None, "idle_ms": "", "idle_count": None,
                  "allow_reason": None, "apis": [], "regions": [], "ranks": "", "stack": [], "related": None, "lint": None,
                  "lint_codes": None, "x": None, "stale": False, "group": "in scope"}


# Every site has these; the page gets them as an array, in this order, with the site's other
# non-default keys as an object after them (report.js, expandSites). Paths are indexes into one
# table. Object keys repeated on every site were half of a 5,000-site page, and the browser's
# HTML parser reads the embedded JSON at a few MB/s, so its size is the page's opening time.
_SITE_FIELDS = ("path", "line", "function", "kind", "source", "count")


def _compact_site(record: dict, paths: dict[str, int]) -> list:
    extra = {k: v for k, v in record.items()
             if k not in _SITE_FIELDS and k not in ("i", "fingerprint") and not (k in _SITE_DEFAULTS and v == _SITE_DEFAULTS[k])}
    stack = extra.get("stack")
    if stack and len(stack) == 1 and (stack[0]["path"], stack[0]["line"]) == (record["path"], record["line"]):
        del extra["stack"]  # the site's own frame only
    row = [paths.setdefault(record["path"], len(paths))] + [record[k] for k in _SITE_FIELDS[1:]]
    return row + [extra] if extra else row


def _embedded(data: dict) -> dict:
    """What the script reads: the page data less the summary (rendered as HTML), compacted.
    A site's index in its list is its `i`."""
    out = {k: v for k, v in data.items() if k != "summary"}
    paths: dict[str, int] = {}
    out["sites"] = [_compact_site(r, paths) for r in data["sites"]]
    if data["compare"]:
        out["compare"] = {**data["compare"], "before_sites": [_compact_site(r, paths) for r in data["compare"]["before_sites"]]}
    out["site_fields"] = list(_SITE_FIELDS)
    out["paths"] = list(paths)
    return out


def _script_json(data: Any) -> str:
    """JSON that cannot end its <script> element or open a comment: <, >, & and the two line
    separators JavaScript treats as newlines are written as \\u escapes."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def render(loaded: LoadedReport, *, lint: list[dict] | None = None, lint_path: str | None = None,
           before: LoadedReport | None = None) -> str:
    import jinja2

    data = page_data(loaded, lint=lint, before=before)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("syncscope.render", "html_assets"),
        autoescape=True,  # every value from a report is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    css, js = _asset("report.css"), _asset("report.js")
    return env.get_template("report.html.j2").render(
        d=data, lint_path=lint_path, page_rows=PAGE_ROWS, css=css, js=js, css_hash=_csp_hash(css), js_hash=_csp_hash(js),
        data_json=_script_json(_embedded(data)),
    )
