"""Comparing measurements: the right means, changes, regressions, and the fixed overhead.

Averages follow Fleming and Wallace, "How not to lie with statistics: the correct way to
summarize benchmark results" (CACM 1986) and Smith (CACM 1988): arithmetic mean of times,
harmonic mean of rates, geometric mean of ratios.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Repeats:
    """Repeated measurements of one run, summarised."""

    count: int
    mean: float  # arithmetic: the total time of the repeats divided by their number
    minimum: float
    maximum: float
    stdev: float  # sample standard deviation; 0 for a single value


def summarise_times(times: Sequence[float]) -> Repeats:
    """Summarise repeated times (seconds)."""
    if not times:
        raise InvalidInput("measured", "needs at least one value")
    for value in times:
        if not (math.isfinite(value) and value > 0):
            raise InvalidInput("measured", f"times must be positive and finite, got {value}")
    stdev = statistics.stdev(times) if len(times) > 1 else 0.0
    return Repeats(len(times), statistics.fmean(times), min(times), max(times), stdev)


def mean_rate(rates: Sequence[float]) -> float:
    """Harmonic mean: the rate of the same work done at each rate in turn."""
    return statistics.harmonic_mean(rates)


def mean_ratio(ratios: Sequence[float]) -> float:
    """Geometric mean: symmetric for ratios (2x and 0.5x average to 1x)."""
    return statistics.geometric_mean(ratios)


def change(new_time: float, old_time: float) -> float | None:
    """Relative change of a time: +0.10 means 10% slower than before; None where it is
    beyond a float's range (times stored before they were bounded, e.g. 1e9 s after 1e-300 s)."""
    relative = new_time / old_time - 1.0
    return relative if math.isfinite(relative) else None


# slower than the baseline by more than this fraction flags a regression unless told otherwise
DEFAULT_THRESHOLD = 0.1


def is_regression(new_time: float, old_time: float, threshold: float) -> bool:
    """Slower than `old_time` by more than `threshold` (a fraction, e.g. 0.1)."""
    return new_time > old_time * (1.0 + threshold)


@dataclass(frozen=True, slots=True)
class OverheadFit:
    """measured = overhead + roofline_time / efficiency, fitted by least squares."""

    overhead_s: float
    efficiency: float | None  # fraction of the roofline the work reaches; None: no growth
    points: int

    def overhead_bound(self, expected_time: float) -> bool:
        """Whether the fixed overhead exceeds the work's own time at this size."""
        if self.efficiency is None:
            return True
        return self.overhead_s > expected_time / self.efficiency


def fit_overhead(points: Sequence[tuple[float, float]]) -> OverheadFit | None:
    """Fit (expected roofline time, measured time) pairs of one workload at several sizes.

    Ordinary least squares of measured = a + b expected; overhead = a (floored at 0: a
    negative intercept means no detectable fixed cost), efficiency = 1/b. When the time does
    not grow with the work (b <= 0) it is all overhead: the mean time, with no efficiency.
    None with fewer than two distinct sizes.
    """
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        return None
    mean_x = statistics.fmean(xs)
    mean_y = statistics.fmean(y for _, y in points)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    if slope <= 0:
        return OverheadFit(mean_y, None, len(points))
    intercept = mean_y - slope * mean_x
    return OverheadFit(max(intercept, 0.0), 1.0 / slope, len(points))
