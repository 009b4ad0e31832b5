"""From timed passes to a verdict per line. Standard library only.

For each hit of a line (its n-th execution within one call; loops give many hits):

    wait  = host time behind the queue - host time on an idle GPU      (the idle time is the
                                                                        minimum over idle passes)
    ratio = wait / GPU work estimated ahead of the line

and of the `repeat` queued passes the one with the smallest ratio counts, so a one-off stall
(GC, page fault, another process) in one pass does not make a line blocked. A hit is

    blocked    ratio >= 0.5   the line waited for (most of) the queue;
    free       ratio <  0.1   it returned while the queue was still running;
    uncertain  in between.

Why these numbers: a line that synchronizes waits for the whole queue ahead, ratio ~1 (the work
ahead is >= 12.5 ms with the default 25 ms sleep, and the host-clock estimate of it is good to tens
of microseconds; GPU clock drift after calibration moves it by a few percent). A free line takes
microseconds against >= 12.5 ms ahead: ratio < 0.01. The GPU check prints the observed ranges. The wide band in between is kept
for what is neither: a wait on an event recorded part-way through the queue, a launch that blocks
because the launch queue is full, host work that varies between passes. A line is blocked when any
of its hits is (a line that blocks on 1 iteration of 10 is a sync site), else uncertain when any
hit is, else free.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from syncscope.oracle.measure import CallSample

BLOCKED = "blocked"
FREE = "free"
UNCERTAIN = "uncertain"

BLOCKED_AT = 0.5
FREE_BELOW = 0.1


@dataclass(frozen=True)
class Thresholds:
    blocked_at: float = BLOCKED_AT
    free_below: float = FREE_BELOW

    def __post_init__(self):
        if not 0 < self.free_below <= self.blocked_at:
            raise ValueError("thresholds: need 0 < free_below <= blocked_at")

    def classify(self, ratio: float) -> str:
        if ratio >= self.blocked_at:
            return BLOCKED
        if ratio < self.free_below:
            return FREE
        return UNCERTAIN

    def to_json(self) -> dict:
        return {"blocked_at": self.blocked_at, "free_below": self.free_below}


@dataclass
class Hit:
    host_ns: int  # host time behind the queue, in the pass that gave the smallest ratio
    idle_ns: int  # host time on an idle GPU (minimum over idle passes)
    ahead_ns: int  # GPU work estimated ahead of the line in that pass
    ratio: float
    verdict: str

    @property
    def wait_ns(self) -> int:
        return max(0, self.host_ns - self.idle_ns)


@dataclass
class LineResult:
    filename: str
    line: int
    function: str  # qualified name of the measured function
    label: str  # the --scope it was measured under
    hits: list[Hit] = field(default_factory=list)
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def source(self) -> str:
        return linecache.getline(self.filename, self.line).strip()

    @property
    def verdict(self) -> str:
        verdicts = {h.verdict for h in self.hits}
        if BLOCKED in verdicts:
            return BLOCKED
        if UNCERTAIN in verdicts:
            return UNCERTAIN
        return FREE

    @property
    def ratio(self) -> float:
        return max((h.ratio for h in self.hits), default=0.0)

    def _sum(self, attr: str, verdict: str | None = None) -> int:
        return sum(getattr(h, attr) for h in self.hits if verdict is None or h.verdict == verdict)

    def to_json(self, path: str) -> dict:
        return {
            "path": path,
            "line": self.line,
            "function": self.function,
            "scope": self.label,
            "source": self.source,
            "verdict": self.verdict,
            "ratio": round(self.ratio, 4),
            "hits": len(self.hits),
            "blocked_hits": sum(h.verdict == BLOCKED for h in self.hits),
            "uncertain_hits": sum(h.verdict == UNCERTAIN for h in self.hits),
            "host_ns": self._sum("host_ns"),
            "idle_ns": self._sum("idle_ns"),
            "ahead_ns": self._sum("ahead_ns"),
            "wait_ns": self._sum("wait_ns"),
            "blocked_wait_ns": self._sum("wait_ns", BLOCKED),
        }


def analyse_sample(sample: CallSample, thresholds: Thresholds = Thresholds()) -> dict[int, list[Hit]]:
    """Per line of one measured call: its hits, each judged on its best (minimum-ratio) pass."""
    lines: set[int] = set()
    for record in sample.queued:
        lines.update(record.hits)
    out: dict[int, list[Hit]] = {}
    for line in sorted(lines):
        idle_by_hit = [[h for h, _ in p.hits.get(line, ())] for p in sample.idle]
        all_idle = [h for hits in idle_by_hit for h in hits]
        count = max(len(p.hits.get(line, ())) for p in sample.queued)
        hits = []
        for i in range(count):
            idle_candidates = [hits_[i] for hits_ in idle_by_hit if i < len(hits_)]
            idle = min(idle_candidates) if idle_candidates else (min(all_idle) if all_idle else 0)
            best = None
            for record in sample.queued:
                pass_hits = record.hits.get(line, ())
                if i >= len(pass_hits):
                    continue
                host, ahead = pass_hits[i]
                ratio = max(0, host - idle) / max(ahead, 1)
                if best is None or ratio < best[2]:
                    best = (host, ahead, ratio)
            host, ahead, ratio = best
            hits.append(Hit(host, idle, ahead, ratio, thresholds.classify(ratio)))
        out[line] = hits
    return out


def analyse(samples: list[CallSample], thresholds: Thresholds = Thresholds()) -> list[LineResult]:
    """Line results over all measured calls, grouped by function, in source order."""
    results: dict[tuple, LineResult] = {}
    for sample in samples:
        fid = sample.function
        for line, hits in analyse_sample(sample, thresholds).items():
            key = (fid.filename, fid.firstlineno, fid.qualname, line)
            result = results.get(key)
            if result is None:
                result = results[key] = LineResult(fid.filename, line, fid.qualname, fid.label, thresholds=thresholds)
            result.hits.extend(hits)
    return [results[k] for k in sorted(results)]
