"""Median of paired ratios with a bootstrap 95% interval (standard library only).

A bench that alternates two arms in one process gets one (baseline, candidate) pair per round;
both members of a pair see the machine in the same state, so the ratio of a pair cancels the drift
between rounds that makes each arm's own median wander (+-20% on the shared GPU hosts). The figure
is the median of the per-round ratios, and the interval comes from resampling the rounds with
replacement (percentile bootstrap): it says how far the median would move on another run of as
many rounds, which is what "the figure reproduces" needs.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class RatioEstimate:
    median: float  # median of candidate/baseline over the rounds
    low: float  # 2.5th percentile of the bootstrap medians
    high: float  # 97.5th percentile
    rounds: int

    @property
    def width(self) -> float:
        """Width of the interval as a fraction (0.01: the interval spans one percentage point)."""
        return self.high - self.low

    def to_json(self) -> dict:
        return {"median": self.median, "ci95": [self.low, self.high], "ci95_width": self.width, "rounds": self.rounds}

    def describe(self) -> str:
        return f"{100 * (self.median - 1):+.2f}% (95% CI {100 * (self.low - 1):+.2f}% to {100 * (self.high - 1):+.2f}%, {self.rounds} rounds)"


def paired_ratios(baseline: list[float], candidate: list[float]) -> list[float]:
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("paired ratios need as many candidate rounds as baseline rounds, at least one")
    return [c / b for b, c in zip(baseline, candidate)]


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank `q` quantile (the spread a bench reports beside its interval: p10, p90)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bootstrap_interval(estimate, rounds: int, *, resamples: int = 5000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap 95% interval of `estimate(rows)`, a figure computed from a list of round
    indices: the rounds are resampled with replacement, so arms measured in the same round stay
    together. Seeded, so the same rounds always give the same interval."""
    rng = random.Random(seed)
    boot = sorted(estimate(rng.choices(range(rounds), k=rounds)) for _ in range(resamples))
    return _percentile(boot, 0.025), _percentile(boot, 0.975)


def median_ratio_interval(baseline: list[float], candidate: list[float], *, resamples: int = 5000, seed: int = 0) -> RatioEstimate:
    """The median paired ratio and its percentile-bootstrap 95% interval."""
    ratios = paired_ratios(baseline, candidate)
    low, high = bootstrap_interval(lambda rows: statistics.median(ratios[i] for i in rows), len(ratios), resamples=resamples, seed=seed)
    return RatioEstimate(statistics.median(ratios), low, high, len(ratios))
