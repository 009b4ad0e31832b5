"""The monitor's Prometheus metrics, through `prometheus_client` (no exposition format of ours).

Per site (labels `site` = `path:line`, `kind`, `function`):
  syncscope_host_syncs_total               syncs recorded in sampled regions
  syncscope_host_sync_blocked_seconds_total  host time spent waiting in them (0 where not measured)
  syncscope_host_sync_blocked_seconds      histogram of the wait of one sync (measured syncs only)
For scaling sampled counts up to the whole program:
  syncscope_regions_total, syncscope_sampled_regions_total     region mode
  syncscope_monitored_seconds_total, syncscope_sampled_seconds_total   time mode

Cardinality is bounded: the first `top_sites` distinct sites a process sees get label values of
their own; every later site is counted under `site="other", function="other"` (its kind kept).

Several processes of one replica share one multiprocess directory (prometheus_client's
multiprocess mode): each process writes its values to files there, and the one HTTP server, in
the `syncscope run` process, adds them up at every scrape. The files outlive the processes, so a
worker's counts stay in the sums after it exits.
"""

from __future__ import annotations

import threading

from syncscope.terminal import safe_text

DEFAULT_TOP_SITES = 50
OTHER = "other"
LABELS = ("site", "kind", "function")
# Host waits from a few microseconds (an idle GPU) to seconds (a long queue).
BUCKETS = (1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0)


class SiteFold:
    """Maps a site to its label values, folding all but the first `limit` sites into "other"."""

    def __init__(self, limit: int):
        self.limit = limit
        self._known: dict[tuple[str, int], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def labels(self, path: str, line: int, function: str, kind: str) -> tuple[str, str, str]:
        key = (path, line)
        known = self._known.get(key)
        if known is None:
            with self._lock:
                known = self._known.get(key)
                if known is None:
                    if len(self._known) < self.limit:
                        # label values end up on terminals (`curl .../metrics`) and dashboards:
                        # control characters of a hostile path or name shown escaped
                        known = (safe_text(f"{path}:{line}"), safe_text(function))
                        self._known[key] = known
                    else:
                        return (OTHER, kind, OTHER)
        return (known[0], kind, known[1])


class SyncMetrics:
    """The metrics of one process. Registered nowhere: in multiprocess mode the values go to the
    directory's files, and the server's collector reads them from there."""

    def __init__(self, top_sites: int = DEFAULT_TOP_SITES, registry=None):
        from prometheus_client import Counter, Histogram

        self.fold = SiteFold(top_sites)
        kw = {"registry": registry}
        self.syncs = Counter("syncscope_host_syncs", "Host<->GPU syncs recorded in sampled regions, per site", LABELS, **kw)
        self.blocked = Counter(
            "syncscope_host_sync_blocked_seconds", "Seconds the host waited in sampled syncs, per site", LABELS, **kw
        )
        self.blocked_hist = Histogram(
            "syncscope_host_sync_blocked_seconds_per_sync", "Host wait of one sync (measured syncs only)", buckets=BUCKETS, **kw
        )
        self.regions = Counter("syncscope_regions", "Outermost regions entered (sampled or not)", **kw)
        self.sampled_regions = Counter("syncscope_sampled_regions", "Outermost regions the trap was armed for", **kw)
        self.monitored_seconds = Counter("syncscope_monitored_seconds", "Seconds under time-sliced monitoring", **kw)
        self.sampled_seconds = Counter("syncscope_sampled_seconds", "Seconds the time-sliced trap was armed", **kw)

    def observe(self, event) -> None:
        site = event.site
        labels = self.fold.labels(site.path, site.line, site.function, event.kind)
        self.syncs.labels(*labels).inc()
        blocked = event.blocked_ns
        if blocked is not None:
            seconds = blocked / 1e9
            self.blocked.labels(*labels).inc(seconds)
            self.blocked_hist.observe(seconds)
        else:
            self.blocked.labels(*labels).inc(0)  # the series exists, so a rate of 0 can be graphed

    def on_regions(self, regions: int, sampled: int) -> None:
        self.regions.inc(regions)
        if sampled:
            self.sampled_regions.inc(sampled)

    def on_slice(self, armed_s: float, period_s: float) -> None:
        self.monitored_seconds.inc(period_s)
        self.sampled_seconds.inc(armed_s)


class ScrapeWatch:
    """Notes the start and the end of each scrape (two collectors that yield no metrics, one
    registered before the multiprocess collector and one after), so that the run can wait at exit
    for a scrape that read the files after its last count."""

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self._cond = threading.Condition()
        self.first, self.last = _Hook(self, "started"), _Hook(self, "finished")

    def _note(self, field: str) -> None:
        with self._cond:
            setattr(self, field, getattr(self, field) + 1)
            self._cond.notify_all()

    def wait_for_fresh_scrape(self, timeout: float) -> bool:
        """Wait until a scrape that started from now on has read every file."""
        with self._cond:
            target = self.started + 1
            return self._cond.wait_for(lambda: self.finished >= target, timeout=timeout)


class _Hook:
    def __init__(self, watch: ScrapeWatch, field: str):
        self.watch, self.field = watch, field

    def describe(self):
        return []  # no metrics: and registering does not call collect()

    def collect(self):
        self.watch._note(self.field)
        return []


def start_server(port: int, directory: str, addr: str = "127.0.0.1"):
    """Serve every process's values from `directory` on `addr`:`port`. Raises OSError when the
    port is taken or the address is none of this host's. Returns (server, watch)."""
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    watch = ScrapeWatch()
    registry.register(watch.first)
    MultiProcessCollector(registry, path=directory)
    registry.register(watch.last)
    server, _thread = start_http_server(port, addr=addr, registry=registry)
    return server, watch
