"""Timing a call: warm-up, repeats until the median is known, and the first call apart.

Standard library only: the clock is given. On the CPU it is `time.perf_counter` around the
call; on a GPU the caller gives one that records CUDA events around it and synchronises.
The median's 95% confidence interval is distribution-free: the order statistics of ranks
n/2 -+ 1.96 sqrt(n)/2 of the sorted times (the binomial interval of the median). Beside each
time, the process's CPU time over the call itself, read inside the clock (so on a GPU not over
the wait for the device, which may spin: docs/formulas.md#host-bound-runs).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# seconds one call takes, as the clock measures it
Clock = Callable[[Callable[[], object]], float]

Z_95 = 1.959964  # the normal quantile of a two-sided 95% interval
MIN_REPEATS = 10
MAX_REPEATS = 10_000
MAX_TIME_S = 5.0
TARGET_CI = 0.02  # the median's 95% interval within +-2% of it


@dataclass(frozen=True, slots=True)
class Timing:
    """Times of one call in seconds: the first (compilation, allocation) apart, then the
    repeats after `warmup` untimed calls: median, its 95% interval, and their spread.
    `relative_ci` is the interval's half-width over the median; `converged` says whether it
    reached the target within the count and time budget. `cpu_median_s` is the median of the
    process CPU times of the same calls, `cpu_share` it over `median_s`: on a GPU, >= 0.9 is a
    host busy throughout; on the CPU, the threads busy on average."""

    clock: str  # "perf_counter" or "cuda_events"
    first_call_s: float
    warmup: int
    repeats: int
    median_s: float
    ci_low_s: float
    ci_high_s: float
    relative_ci: float
    min_s: float
    max_s: float
    mean_s: float
    stdev_s: float
    p25_s: float
    p75_s: float
    converged: bool
    target_ci: float
    cpu_median_s: float
    cpu_share: float
    # the repeats themselves, in the order timed: what a stored run keeps (--submit)
    times_s: tuple[float, ...] = field(default=(), repr=False)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the statistics; not each repeat)."""
        return {k: v for k, v in asdict(self).items() if k != "times_s"}


def perf_counter_clock(call: Callable[[], object]) -> float:
    """Wall time of one call on the host: the CPU's clock."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def median_ci(times: Sequence[float]) -> tuple[float, float]:
    """The 95% confidence interval of the median of `times` (distribution-free)."""
    ordered = sorted(times)
    n = len(ordered)
    if n == 0:
        raise ValueError("no times")
    half = Z_95 * math.sqrt(n) / 2
    low = max(1, math.floor(n / 2 - half))  # 1-based ranks
    high = min(n, math.ceil(1 + n / 2 + half))
    return ordered[low - 1], ordered[high - 1]


def relative_ci(times: Sequence[float]) -> float:
    """The median's 95% interval half-width over the median (inf for a zero median)."""
    low, high = median_ci(times)
    median = statistics.median(times)
    return (high - low) / (2 * median) if median > 0 else math.inf


def time_calls(
    call: Callable[[], object],
    clock: Clock,
    *,
    first_call_s: float,
    clock_name: str = "perf_counter",
    warmup: int = 3,
    repeats: int = MIN_REPEATS,
    max_repeats: int = MAX_REPEATS,
    max_time_s: float = MAX_TIME_S,
    target_ci: float = TARGET_CI,
) -> Timing:
    """Time `call` after `warmup` untimed calls: at least `repeats` times, then on until the
    median's relative interval is under `target_ci`, `max_repeats` times or `max_time_s`
    seconds (of wall time, after the warm-up), whichever comes first."""
    if not 1 <= repeats <= max_repeats:
        raise ValueError(f"repeats must be 1 to max_repeats ({max_repeats}), got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    for _ in range(warmup):
        call()
    cpu_times: list[float] = []

    def timed() -> object:
        start = time.process_time()
        result = call()
        cpu_times.append(time.process_time() - start)
        return result

    times: list[float] = []
    deadline = time.perf_counter() + max_time_s
    next_check = repeats
    converged = False
    while len(times) < max_repeats:
        times.append(clock(timed))
        if len(times) < next_check:
            continue
        if relative_ci(times) <= target_ci:
            converged = True
            break
        if time.perf_counter() > deadline:
            break
        next_check = len(times) + max(1, len(times) // 10)  # sorting stays a small share
    return summarise(
        times,
        cpu_times,
        clock_name=clock_name,
        first_call_s=first_call_s,
        warmup=warmup,
        converged=converged,
        target_ci=target_ci,
    )


def summarise(
    times: Sequence[float],
    cpu_times: Sequence[float],
    *,
    clock_name: str,
    first_call_s: float,
    warmup: int,
    converged: bool,
    target_ci: float,
) -> Timing:
    """The statistics of `times` (seconds), and of the CPU times of the same calls."""
    low, high = median_ci(times)
    median, cpu_median = statistics.median(times), statistics.median(cpu_times)
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(
        clock=clock_name,
        first_call_s=first_call_s,
        warmup=warmup,
        repeats=len(times),
        median_s=median,
        ci_low_s=low,
        ci_high_s=high,
        relative_ci=relative_ci(times),
        min_s=min(times),
        max_s=max(times),
        mean_s=statistics.fmean(times),
        stdev_s=statistics.stdev(times) if len(times) > 1 else 0.0,
        p25_s=quartiles[0],
        p75_s=quartiles[2],
        converged=converged,
        target_ci=target_ci,
        cpu_median_s=cpu_median,
        cpu_share=cpu_median / median if median > 0 else math.inf,
        times_s=tuple(times),
    )
