"""Comparison maths on hand-worked examples."""

import math

import pytest

from app.engine import InvalidInput
from app.engine.compare import (
    change,
    fit_overhead,
    is_regression,
    mean_rate,
    mean_ratio,
    summarise_times,
)


def test_repeats_use_the_arithmetic_mean_of_times():
    # 1, 2, 3 ms: mean 2 ms; sample stdev sqrt(((1)^2 + 0 + (1)^2) / 2) = 1 ms
    repeats = summarise_times([1e-3, 2e-3, 3e-3])
    assert repeats.mean == pytest.approx(2e-3)
    assert repeats.stdev == pytest.approx(1e-3)
    assert (repeats.count, repeats.minimum, repeats.maximum) == (3, 1e-3, 3e-3)
    assert summarise_times([5.0]).stdev == 0
    with pytest.raises(InvalidInput):
        summarise_times([])
    with pytest.raises(InvalidInput):
        summarise_times([1.0, math.nan])


def test_rates_use_the_harmonic_mean_and_ratios_the_geometric_mean():
    # the same work at 100 and 300 tokens/s: 2 / (1/100 + 1/300) = 150 tokens/s, not 200
    assert mean_rate([100, 300]) == pytest.approx(150)
    # 2x and 0.5x average to 1x
    assert mean_ratio([2.0, 0.5]) == pytest.approx(1.0)


def test_change_and_regression():
    assert change(1.1, 1.0) == pytest.approx(0.1)
    assert is_regression(1.11, 1.0, 0.1)
    assert not is_regression(1.09, 1.0, 0.1)
    assert not is_regression(0.5, 1.0, 0.1)  # faster is never a regression


def test_overhead_fit_recovers_a_fixed_cost_and_an_efficiency():
    # measured = 5 ms + expected / 0.5: expected 1, 2, 4 ms -> measured 7, 9, 13 ms
    points = [(1e-3, 7e-3), (2e-3, 9e-3), (4e-3, 13e-3)]
    fit = fit_overhead(points)
    assert fit is not None
    assert fit.overhead_s == pytest.approx(5e-3)
    assert fit.efficiency == pytest.approx(0.5)
    # at expected 1 ms the work takes 2 ms < 5 ms of overhead: overhead-bound
    assert fit.overhead_bound(1e-3)
    # at expected 4 ms the work takes 8 ms > 5 ms
    assert not fit.overhead_bound(4e-3)


def test_time_that_does_not_grow_with_the_work_is_all_overhead():
    # double the batch, same 10 ms: no growth at all
    fit = fit_overhead([(1e-3, 10e-3), (2e-3, 10e-3)])
    assert fit is not None and fit.efficiency is None
    assert fit.overhead_s == pytest.approx(10e-3)
    assert fit.overhead_bound(1.0)


def test_one_size_cannot_separate_overhead_from_work():
    assert fit_overhead([(1e-3, 2e-3), (1e-3, 3e-3)]) is None


def test_a_change_beyond_a_float_is_unknown_but_still_a_regression():
    # 1.1 s after 1.0 s: +10%, not over a 10% threshold; 1e9 s after 1e-300 s: 1e309 - 1
    # overflows, so the change is None, yet the run is far slower than the threshold allows
    assert change(1.1, 1.0) == pytest.approx(0.1)
    assert not is_regression(1.1, 1.0, 0.1)
    assert change(1e9, 1e-300) is None
    assert is_regression(1e9, 1e-300, 0.1)
    assert not is_regression(1e-300, 1e9, 0.1)
