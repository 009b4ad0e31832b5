"""A monitor session: checks the options, prepares the multiprocess directory and the metrics
server, and builds the sampled trap, in the `syncscope run` process and in each child it follows.

Everything that can fail on bad input (the sample rate, the port, the directory) is checked in
`start()`, before the wrapped program starts, and raises `MonitorError` with one line to print.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
from dataclasses import asdict, dataclass
from typing import Iterator

from syncscope.monitoring.metrics import DEFAULT_TOP_SITES
from syncscope.monitoring.sampling import MODES

DEFAULT_SAMPLE = 0.01
# Sampled regions come in runs of this many consecutive regions, so that arming the detector is
# paid once per run (docs/monitor.md: "Runs of sampled regions").
DEFAULT_SAMPLE_RUN = 8
DEFAULT_PORT = 9400
# Loopback: the labels carry the program's paths and lines, which a port open to every interface
# would give to anyone on the network (docs/monitor.md says how to expose it on purpose).
DEFAULT_ADDR = "127.0.0.1"
DEFAULT_EXIT_WAIT_S = 30.0
ENV_DIR = "PROMETHEUS_MULTIPROC_DIR"


class MonitorError(ValueError):
    pass


@dataclass(frozen=True)
class MonitorOptions:
    """What `--monitor` was given; travels to spawned children inside their ChildConfig."""

    sample: float = DEFAULT_SAMPLE
    port: int | None = DEFAULT_PORT  # None: no server in this process (children, LOCAL_RANK > 0)
    addr: str = DEFAULT_ADDR  # the interface the server listens on
    directory: str | None = None  # the multiprocess directory; None: a fresh temporary one
    mode: str = "auto"  # auto | region | time (monitoring/sampling.py)
    run_length: int = DEFAULT_SAMPLE_RUN
    period_s: float = 1.0
    top_sites: int = DEFAULT_TOP_SITES
    exit_wait_s: float = DEFAULT_EXIT_WAIT_S
    seed: int | None = None

    def for_child(self, directory: str) -> "MonitorOptions":
        # No seed: workers drawing the same sequence would sample the same steps.
        return MonitorOptions(**{**asdict(self), "port": None, "directory": directory, "seed": None})

    def child_trap(self, device: str, policy, **trap_args):
        """The sampled trap of a child process the monitor follows (`ChildConfig.child_trap`,
        called in the child with `trap()`'s arguments): a session of its own that writes to the
        parent's directory and serves nothing."""
        return start_child(self).trap(device, policy, **trap_args)


def check_options(options: MonitorOptions) -> None:
    if not (0.0 < options.sample <= 1.0):
        raise MonitorError(f"--sample {options.sample:g}: must be in (0, 1]")
    if options.mode not in MODES:
        raise MonitorError(f"--sample-by {options.mode!r}: choose auto, region or time")
    if isinstance(options.run_length, bool) or not isinstance(options.run_length, int) or options.run_length < 1:
        raise MonitorError(f"--sample-run {options.run_length!r}: must be a whole number of regions, at least 1")
    if options.period_s <= 0:
        raise MonitorError(f"--slice-period {options.period_s:g}: must be positive")
    if options.top_sites < 1:
        raise MonitorError(f"--top-sites {options.top_sites}: must be at least 1")
    if options.port is not None and not (0 <= options.port <= 65535):
        raise MonitorError(f"--metrics-port {options.port}: not a TCP port")
    if not isinstance(options.addr, str) or not options.addr.strip() or any(c.isspace() for c in options.addr):
        raise MonitorError(f"--metrics-addr {options.addr!r}: give an interface's address (127.0.0.1, 0.0.0.0, ::) or a host name")


def _check_writable(directory: str, origin: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".syncscope-probe-"):
            pass
    except OSError as exc:
        raise MonitorError(f"{origin} {directory}: not a writable directory ({exc.strerror or exc})") from None


class MonitorSession:
    """One process's part of a monitored run."""

    def __init__(self, options: MonitorOptions, directory: str, owns_directory: bool):
        self.options = options
        self.directory = directory
        self.owns_directory = owns_directory
        self.server = None
        self.watch = None
        self.metrics = None
        self.gate = None

    # -- the program's trap ------------------------------------------------------------------
    @contextlib.contextmanager
    def trap(self, device: str, policy, *, allow=(), scope=(), module_forward=False, root=None) -> Iterator:
        from syncscope.monitoring.trap import sampled_trap

        with sampled_trap(self, device, policy, allow=allow, scope=scope, module_forward=module_forward, root=root) as t:
            yield t

    def make_metrics(self):
        from syncscope.monitoring.metrics import SyncMetrics

        self.metrics = SyncMetrics(self.options.top_sites)
        return self.metrics

    def report_meta(self) -> dict:
        """What the JSON report says about the sampling: its events are the sampled regions' only."""
        counts = self.gate.counts if self.gate is not None else None
        mode = self.gate.mode if self.gate is not None else self.options.mode
        if mode == "auto":  # no region entered: it sampled by time all along
            mode = "time"
        return {
            "sampled": True,
            "sampling": {
                "mode": mode,
                "sample_by": self.options.mode,
                "rate": self.options.sample,
                "run_length": self.options.run_length,
                "regions": counts.regions if counts else 0,
                "sampled_regions": counts.sampled if counts else 0,
                "period_s": self.options.period_s if mode != "region" else None,
                "monitored_s": round(counts.monitored_s, 3) if counts else 0.0,
                "sampled_s": round(counts.sampled_s, 3) if counts else 0.0,
                "top_sites": self.options.top_sites,
                "metrics_dir": self.directory,
            },
        }

    def child_options(self) -> MonitorOptions:
        return self.options.for_child(self.directory)

    def finish(self) -> None:
        """After the program: if something has been scraping us, wait (a bounded time) for one
        scrape that reads the last counts of every process, then stop serving."""
        if self.server is None:
            return
        if self.watch.finished > 0 and self.options.exit_wait_s > 0:
            import sys

            # Said, not silent: the program has ended and the process waits (issue 28).
            print(f"syncscope: waiting up to {self.options.exit_wait_s:g} s for a last scrape of /metrics on port "
                  f"{self.options.port} (--metrics-exit-wait 0 to skip)", file=sys.stderr, flush=True)
            if not self.watch.wait_for_fresh_scrape(self.options.exit_wait_s):
                print(f"syncscope: no scrape came within {self.options.exit_wait_s:g} s: the last counts were not "
                      "read from /metrics (they are in the JSON report)", file=sys.stderr, flush=True)
        self.server.shutdown()
        self.server.server_close()
        self.server = None
        if self.owns_directory:
            import shutil

            shutil.rmtree(self.directory, ignore_errors=True)


def start(options: MonitorOptions) -> MonitorSession:
    """Check everything, then set up: the directory (exported as PROMETHEUS_MULTIPROC_DIR before
    prometheus_client is imported, which is how it picks multiprocess values) and the server."""
    check_options(options)
    directory = options.directory
    owns = False
    env_dir = os.environ.get(ENV_DIR)
    if directory is None and env_dir:
        directory, origin = env_dir, ENV_DIR
    elif directory is None:
        directory, origin, owns = tempfile.mkdtemp(prefix="syncscope-metrics-"), "", True
    else:
        origin = "--metrics-dir"
    directory = os.path.abspath(directory)
    if not owns:
        _check_writable(directory, origin)
    if env_dir and os.path.abspath(env_dir) != directory:
        raise MonitorError(f"--metrics-dir {directory}: {ENV_DIR} is already set to {env_dir} (use that, or unset it)")
    import sys

    if "prometheus_client" in sys.modules and not env_dir:
        from prometheus_client import values

        if values.ValueClass is values.MutexValue:
            raise MonitorError("prometheus_client was imported before the monitor started: start it first")
    os.environ[ENV_DIR] = directory
    session = MonitorSession(options, directory, owns)
    if options.port is not None and _serves_here():
        if options.directory is not None and owns is False and not env_dir:
            _clear_stale_values(directory)
        from syncscope.monitoring.metrics import start_server

        try:
            session.server, session.watch = start_server(options.port, directory, options.addr)
        except OSError as exc:
            raise MonitorError(f"--metrics-port {options.port}: cannot listen on {options.addr} ({exc.strerror or exc})") from None
    return session


def _serves_here() -> bool:
    """Under torchrun every rank is a `syncscope run`: the first rank of each node serves the
    node's directory, the others only write to it."""
    local_rank = os.environ.get("LOCAL_RANK", "")
    return not local_rank.isdigit() or int(local_rank) == 0


def _clear_stale_values(directory: str) -> None:
    """A directory given with --metrics-dir may hold the values of an earlier run, which the
    server would add to this one's (prometheus_client's rule: wipe it between runs)."""
    if os.environ.get("LOCAL_RANK"):
        return  # other ranks may already be writing; a launch needs a fresh directory
    for path in glob.glob(os.path.join(directory, "*.db")):
        with contextlib.suppress(OSError):
            os.remove(path)


def start_child(options: MonitorOptions) -> MonitorSession:
    """In a spawned or forked child: write to the parent's directory, serve nothing."""
    os.environ[ENV_DIR] = options.directory
    return MonitorSession(options, options.directory, False)
