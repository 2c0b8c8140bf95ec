"""Comparing measurements: the right means, changes, regressions against a window of
baseline runs, and the fixed overhead.

Averages follow Fleming and Wallace, "How not to lie with statistics: the correct way to
summarize benchmark results" (CACM 1986) and Smith (CACM 1988): arithmetic mean of times,
harmonic mean of rates, geometric mean of ratios.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.engine.errors import InvalidInput
from app.engine.rank_power import relative_noise, repeats_to_decide
from app.engine.rank_test import RankTest, mann_whitney_greater


@dataclass(frozen=True, slots=True)
class Repeats:
    """Repeated measurements of one run, summarised."""

    count: int
    mean: float  # arithmetic: the total time of the repeats divided by their number
    minimum: float
    maximum: float
    stdev: float  # sample standard deviation; 0 for a single value


def mean_time(times: Sequence[float]) -> float:
    """The arithmetic mean of repeated times (seconds), each positive and finite."""
    if not times:
        raise InvalidInput("measured", "needs at least one value")
    for value in times:
        if not (math.isfinite(value) and value > 0):
            raise InvalidInput("measured", f"times must be positive and finite, got {value}")
    return statistics.fmean(times)


def summarise_times(times: Sequence[float]) -> Repeats:
    """Summarise repeated times (seconds): their `mean_time` and spread."""
    mean = mean_time(times)
    stdev = statistics.stdev(times) if len(times) > 1 else 0.0
    return Repeats(len(times), mean, min(times), max(times), stdev)


def mean_rate(rates: Sequence[float]) -> float:
    """Harmonic mean: the rate of the same work done at each rate in turn."""
    return statistics.harmonic_mean(rates)


def mean_ratio(ratios: Sequence[float]) -> float:
    """Geometric mean: symmetric for ratios (2x and 0.5x average to 1x)."""
    return statistics.geometric_mean(ratios)


def change(new_time: float, old_time: float) -> float | None:
    """Relative change of a time: +0.10 means 10% slower than before; None where it is
    beyond a float's range (times stored before they were bounded, e.g. 1e9 s after 1e-300 s)."""
    relative = new_time / old_time - 1.0 if old_time > 0 else math.inf
    return relative if math.isfinite(relative) else None


# slower than the baseline by more than this fraction flags a regression unless told otherwise
DEFAULT_THRESHOLD = 0.1


def is_regression(new_time: float, old_time: float, threshold: float) -> bool:
    """Slower than `old_time` by more than `threshold` (a fraction, e.g. 0.1)."""
    return new_time > old_time * (1.0 + threshold)


def lost_efficiency(new: float, old: float, threshold: float) -> bool:
    """A fraction of the roofline `new` below `old` by more than `threshold` of it."""
    return new < old * (1.0 - threshold)


# the baseline window: the latest runs a new run is compared with, unless told otherwise
DEFAULT_WINDOW = 10
MAX_WINDOW = 100
# the confidence a slowdown must be significant at (one-sided), unless told otherwise
DEFAULT_CONFIDENCE = 0.95

# the most repeats of one run the rank test reads (beyond, that many of its quantiles, which
# keep the shape of its distribution): a window of 100 runs of 10,000 repeats would otherwise
# rank a million values on every post
TESTED_REPEATS = 100

Test = Literal["mann_whitney_u", "insufficient"]
Axis = Literal["time", "efficiency"]


@dataclass(frozen=True, slots=True)
class RunSample:
    """One run as the regression gate sees it: its repeated times and the roofline time it
    was judged by (seconds)."""

    repeats: tuple[float, ...]
    time_s: float  # the time judged: the arithmetic mean of the repeats
    expected_time_s: float

    @classmethod
    def of(cls, repeats: Sequence[float], expected_time_s: float) -> RunSample:
        """A run of these repeats (seconds), judged by their mean."""
        return cls(tuple(repeats), statistics.fmean(repeats), expected_time_s)

    @property
    def efficiency(self) -> float:
        """The fraction of the roofline the run reached: expected / measured."""
        return self.expected_time_s / self.time_s

    def tested(self) -> list[float]:
        """The repeats the rank test reads: all of them, or of a run with more than
        TESTED_REPEATS, that many evenly spaced order statistics (its quantiles)."""
        if len(self.repeats) <= TESTED_REPEATS:
            return list(self.repeats)
        ordered, last = sorted(self.repeats), len(self.repeats) - 1
        return [ordered[round(i * last / (TESTED_REPEATS - 1))] for i in range(TESTED_REPEATS)]


@dataclass(frozen=True, slots=True)
class WindowGate:
    """A run against a window of baseline runs: medians, spread, changes, tests, verdict."""

    runs: int  # baseline runs in the window
    samples: int  # their repeats (at most TESTED_REPEATS each), pooled for the tests
    median_time_s: float
    spread_time_s: float  # median absolute deviation of the runs' times from their median
    median_efficiency: float
    change: float | None  # +0.1: 10% slower than the median time; None beyond a float
    efficiency_change: float | None  # -0.1: 10% less of the roofline than the median
    alpha: float  # 1 - confidence: the largest p-value called significant
    time_test: RankTest  # "the run's repeats are slower than the window's"
    efficiency_test: RankTest  # "the window's repeats reached more of the roofline"
    slower: bool  # the time beyond the threshold of the median
    less_efficient: bool  # the efficiency beyond the threshold below the median
    slowest_time_s: float  # the slowest repeat of the window
    least_efficiency: float  # the lowest fraction of the roofline a repeat of the window had
    beyond_slowest: bool  # the time beyond the threshold of the slowest repeat
    below_least: bool  # the efficiency beyond the threshold below the least efficient repeat
    time_noise: float  # the window's repeats' spread over their median (rank_power)
    efficiency_noise: float  # the same of their fractions of the roofline
    tested_repeats: int  # the run's repeats the tests read (at most TESTED_REPEATS)

    @property
    def smallest_p(self) -> float:
        """The smallest p-value either test can give at these sizes."""
        return max(self.time_test.smallest_p, self.efficiency_test.smallest_p)

    @property
    def test(self) -> Test:
        """insufficient: no ordering of samples this few reaches the confidence, by the same
        distribution (exact or approximated) that gives the p-values."""
        return "insufficient" if self.smallest_p > self.alpha else "mann_whitney_u"

    @property
    def regressed_on(self) -> tuple[Axis, ...]:
        """What regressed: the time (slower) and/or the efficiency (less of the roofline),
        each beyond the threshold and significantly so; and whatever the test says, beyond
        the threshold of the window's whole range (slower than its slowest repeat, less of the
        roofline than its least efficient one)."""
        tested = self.test == "mann_whitney_u"
        axes: list[Axis] = []
        if self.beyond_slowest or (self.slower and tested and self.time_test.p_value <= self.alpha):
            axes.append("time")
        if self.below_least or (
            self.less_efficient and tested and self.efficiency_test.p_value <= self.alpha
        ):
            axes.append("efficiency")
        return tuple(axes)

    @property
    def regression(self) -> bool:
        """Whether anything regressed."""
        return bool(self.regressed_on)

    @property
    def suspected_on(self) -> tuple[Axis, ...]:
        """What is beyond the threshold but not (yet) significant, with too few samples for
        the test or a p above alpha: a suspected regression, which more repeats decide."""
        beyond: tuple[tuple[Axis, bool], ...] = (
            ("time", self.slower),
            ("efficiency", self.less_efficient),
        )
        return tuple(a for a, over in beyond if over and a not in self.regressed_on)

    @property
    def repeats_needed(self) -> int | None:
        """Of a suspected regression, the repeats of a run like this one that would make the
        test significant with power POWER at the window's noise (rank_power), the fewest over
        the suspected axes; None when none is suspected or no count the test reads would do."""
        changes = {
            "time": (self.change, self.time_noise),
            "efficiency": (
                None if self.efficiency_change is None else -self.efficiency_change,
                self.efficiency_noise,
            ),
        }
        counts = [
            repeats_to_decide(
                math.inf if size is None else size,
                noise,
                self.samples,
                self.alpha,
                most=TESTED_REPEATS,
            )
            for size, noise in (changes[axis] for axis in self.suspected_on)
        ]
        return min((c for c in counts if c is not None), default=None)


def median_absolute_deviation(values: Sequence[float]) -> float:
    """median(|v - median(v)|): a spread that one outlying run does not move."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def gate_against_window(
    new: RunSample, window: Sequence[RunSample], threshold: float, confidence: float
) -> WindowGate:
    """Judge `new` against the baseline runs `window` (at least one).

    Compared with the window's median time and median efficiency (not one run, which may
    have been a noisy one), and tested one-sided with Mann-Whitney U over the repeats: the
    run's repeats against the window's, pooled (at most TESTED_REPEATS of each run). Beyond
    the threshold of the window's whole range, it regressed whatever the test says.
    """
    if not window:
        raise InvalidInput("window", "needs at least one baseline run")
    times = [run.time_s for run in window]
    median_time = statistics.median(times)
    median_efficiency = statistics.median(run.efficiency for run in window)
    tested = [(run.expected_time_s, run.tested()) for run in [new, *window]]
    pooled = [t for _, repeats in tested[1:] for t in repeats]
    time_test = mann_whitney_greater(tested[0][1], pooled)
    # the fraction of the roofline of each repeat: expected / its time
    efficiencies = [[expected / t for t in repeats] for expected, repeats in tested]
    pooled_efficiencies = [e for run in efficiencies[1:] for e in run]
    efficiency_test = mann_whitney_greater(pooled_efficiencies, efficiencies[0])
    slowest, least = max(pooled), min(pooled_efficiencies)
    return WindowGate(
        runs=len(window),
        samples=len(pooled),
        median_time_s=median_time,
        spread_time_s=median_absolute_deviation(times),
        median_efficiency=median_efficiency,
        change=change(new.time_s, median_time),
        efficiency_change=change(new.efficiency, median_efficiency),
        alpha=1.0 - confidence,
        time_test=time_test,
        efficiency_test=efficiency_test,
        slower=is_regression(new.time_s, median_time, threshold),
        less_efficient=lost_efficiency(new.efficiency, median_efficiency, threshold),
        slowest_time_s=slowest,
        least_efficiency=least,
        beyond_slowest=is_regression(new.time_s, slowest, threshold),
        below_least=lost_efficiency(new.efficiency, least, threshold),
        time_noise=relative_noise(pooled),
        efficiency_noise=relative_noise(pooled_efficiencies),
        tested_repeats=len(tested[0][1]),
    )


# the fewest distinct sizes a fixed overhead is fitted over: two sizes fit any line exactly,
# so a third is the first that can disagree with it
MIN_SIZES = 3
# the largest RMS residual, as a fraction of the mean time, of a fit that is believed: the
# size of change the regression gate calls meaningful by default (a line that misses the
# times by more explains nothing)
POOR_FIT = DEFAULT_THRESHOLD


@dataclass(frozen=True, slots=True)
class OverheadFit:
    """measured = overhead + roofline_time / efficiency, fitted by least squares."""

    overhead_s: float
    efficiency: float | None  # fraction of the roofline the work reaches; None: no growth
    runs: int
    sizes: int  # distinct roofline times among the runs
    r_squared: float  # share of the times' variance the line explains (1 when none to explain)
    relative_residual: float  # RMS residual / mean time

    @property
    def good(self) -> bool:
        """Whether the line follows the times closely enough (POOR_FIT) to conclude from."""
        return self.relative_residual <= POOR_FIT

    @property
    def contradicts_roofline(self) -> bool:
        """Whether the line puts the work above 100% efficiency: each second of roofline time
        costing less than a second, faster than the chip allows. No real run does that, so
        such a fit says the times or the workload's spec (sizes, dtype, chip) are wrong, not
        how much of the time is overhead. At exactly 100% the work runs at the roofline."""
        return self.efficiency is not None and self.efficiency > 1.0

    def overhead_bound(self, expected_time: float) -> bool:
        """Whether the fixed overhead exceeds the work's own time at this size (never for a
        fit that contradicts the roofline)."""
        if self.contradicts_roofline:
            return False
        if self.efficiency is None:
            return True
        return self.overhead_s > expected_time / self.efficiency


def fit_overhead(points: Sequence[tuple[float, float]]) -> OverheadFit | None:
    """Fit (expected roofline time, measured time) pairs of one workload at several sizes.

    Ordinary least squares of measured = a + b expected; overhead = a (floored at 0: a
    negative intercept means no detectable fixed cost), efficiency = 1/b. When the time does
    not grow with the work (b <= 0) it is all overhead: the mean time, with no efficiency.
    Its quality: R^2 = 1 - SS_res / SS_tot and the RMS residual over the mean time, of the
    model reported (the constant in the flat case). None with fewer than MIN_SIZES sizes.
    """
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    sizes = len(set(xs))
    if sizes < MIN_SIZES:
        return None
    mean_x = statistics.fmean(xs)
    mean_y = statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    if slope <= 0:
        overhead, efficiency = mean_y, None
        predicted = [mean_y] * len(ys)
    else:
        intercept = mean_y - slope * mean_x
        overhead, efficiency = max(intercept, 0.0), 1.0 / slope
        predicted = [overhead + slope * x for x in xs]
    residual = sum((y - p) ** 2 for y, p in zip(ys, predicted, strict=True))
    total = sum((y - mean_y) ** 2 for y in ys)
    return OverheadFit(
        overhead_s=overhead,
        efficiency=efficiency,
        runs=len(points),
        sizes=sizes,
        r_squared=1.0 - residual / total if total > 0 else 1.0,
        relative_residual=math.sqrt(residual / len(ys)) / mean_y,
    )
