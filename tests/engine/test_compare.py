"""Comparison maths on hand-worked examples."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import InvalidInput
from app.engine.compare import (
    TESTED_REPEATS,
    RunSample,
    change,
    fit_overhead,
    gate_against_window,
    is_regression,
    mean_rate,
    mean_ratio,
    median_absolute_deviation,
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
    # measured = 5 ms + expected / 0.5: expected 1, 2, 4 ms -> measured 7, 9, 13 ms; on the
    # line exactly: no residual, R^2 = 1
    points = [(1e-3, 7e-3), (2e-3, 9e-3), (4e-3, 13e-3)]
    fit = fit_overhead(points)
    assert fit is not None
    assert fit.overhead_s == pytest.approx(5e-3)
    assert fit.efficiency == pytest.approx(0.5)
    assert (fit.runs, fit.sizes) == (3, 3)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.relative_residual == pytest.approx(0.0, abs=1e-9)
    assert fit.good
    # at expected 1 ms the work takes 2 ms < 5 ms of overhead: overhead-bound
    assert fit.overhead_bound(1e-3)
    # at expected 4 ms the work takes 8 ms > 5 ms
    assert not fit.overhead_bound(4e-3)


def test_runs_and_sizes_are_counted_apart():
    # 8 runs at 3 sizes (1, 2 and 4 ms expected), all on the line above
    times = {1e-3: 7e-3, 2e-3: 9e-3, 4e-3: 13e-3}
    sizes = [1e-3, 1e-3, 1e-3, 2e-3, 2e-3, 4e-3, 4e-3, 4e-3]
    fit = fit_overhead([(x, times[x]) for x in sizes])
    assert fit is not None and (fit.runs, fit.sizes) == (8, 3)


def test_time_that_does_not_grow_with_the_work_is_all_overhead():
    # 1, 2, 4 ms of work in 10.5, 10, 9.5 ms: the slope is negative, so the model is the
    # constant mean 10 ms; residuals 0.5, 0, -0.5 ms: RMS sqrt(0.5 / 3) = 0.408 ms, 4.1% of
    # 10 ms (good); R^2 of a constant: 1 - 0.5 / 0.5 = 0
    fit = fit_overhead([(1e-3, 10.5e-3), (2e-3, 10e-3), (4e-3, 9.5e-3)])
    assert fit is not None and fit.efficiency is None
    assert fit.overhead_s == pytest.approx(10e-3)
    assert fit.relative_residual == pytest.approx(math.sqrt(0.5 / 3) / 10)
    assert fit.r_squared == pytest.approx(0.0, abs=1e-9)
    assert fit.good and fit.overhead_bound(1.0)


def test_a_poor_fit_is_said_to_be_poor():
    # 1, 2, 3 ms of work in 2, 20, 4 ms: mean x 2, mean y 26/3; Sxx = 2, Sxy = 2: slope 1,
    # intercept 26/3 - 2 = 6.67 ms; residuals -5.67, 11.33, -5.67 ms: SS 192.67, RMS
    # sqrt(192.67 / 3) = 8.01 ms, 92% of the mean time; SS_tot 194.67: R^2 = 0.0103
    fit = fit_overhead([(1e-3, 2e-3), (2e-3, 20e-3), (3e-3, 4e-3)])
    assert fit is not None
    assert fit.relative_residual == pytest.approx(math.sqrt(192.667e-6 / 3) / (26e-3 / 3), 1e-4)
    assert fit.r_squared == pytest.approx(1 - 192.667 / 194.667, abs=1e-4)
    assert not fit.good


def test_a_fit_faster_than_the_roofline_contradicts_it():
    # expected 1, 2, 3 s measured in 6, 7, 8 s: mean x 2, mean y 7, Sxx = 2, Sxy = 2: slope
    # exactly 1, efficiency 100%: at the roofline, which is possible (5 s of overhead)
    at = fit_overhead([(1.0, 6.0), (2.0, 7.0), (3.0, 8.0)])
    assert at is not None and at.efficiency == 1.0
    assert not at.contradicts_roofline and at.overhead_s == pytest.approx(5.0)
    # 6, 6.999, 7.998 s: Sxy = 1.998, slope 0.999: efficiency 1 / 0.999 = 100.1%, each second
    # of roofline time taking less than a second: faster than the chip allows
    above = fit_overhead([(1.0, 6.0), (2.0, 6.999), (3.0, 7.998)])
    assert above is not None and above.efficiency == pytest.approx(1 / 0.999)
    assert above.contradicts_roofline
    # and never overhead-bound: it says the times or the spec are wrong, not what is overhead
    assert not above.overhead_bound(1.0)
    # as the issue saw it: 10 ms + expected / 3.66 (1, 2, 4 ms of work in 10.2732, 10.5464,
    # 11.0929 ms, to 0.1 µs): slope 1 / 3.66 = 0.2732, efficiency 366%
    seen = fit_overhead([(1e-3, 10.2732e-3), (2e-3, 10.5464e-3), (4e-3, 11.0929e-3)])
    assert seen is not None and seen.efficiency == pytest.approx(3.66, rel=1e-3)
    assert seen.contradicts_roofline and seen.good


def test_fewer_than_three_sizes_cannot_separate_overhead_from_work():
    # two sizes fit any line exactly: nothing to check the fit against
    assert fit_overhead([(1e-3, 2e-3), (1e-3, 3e-3)]) is None
    assert fit_overhead([(1e-3, 10e-3), (2e-3, 10e-3)] * 4) is None  # 8 runs at 2 sizes


def _runs(*times: float, expected: float = 0.5) -> list[RunSample]:
    return [RunSample.of((t,), expected) for t in times]


def test_a_noisy_slow_baseline_run_does_not_hide_a_regression():
    # main: nine runs at 0.96 .. 1.04 ms and one noisy 1.30 ms, the latest; the PR at 1.24,
    # 1.25, 1.26 ms (mean 1.25). Against the latest run alone: 1.25 < 1.30, passed.
    window = _runs(0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04, 1.30)
    new = RunSample.of((1.24, 1.25, 1.26), 0.5)
    assert not is_regression(new.time_s, 1.30, 0.1)
    gate = gate_against_window(new, window, 0.1, 0.95)
    # median of ten: (1.00 + 1.01) / 2 = 1.005 ms; deviations .045 .035 .025 .015 .005 .005
    # .015 .025 .035 .295: MAD = (0.025 + 0.025) / 2 = 0.025; change 1.25 / 1.005 - 1 = +24.4%
    assert gate.median_time_s == pytest.approx(1.005)
    assert gate.spread_time_s == pytest.approx(0.025)
    assert gate.change == pytest.approx(1.25 / 1.005 - 1)
    # U: each PR repeat beats nine runs and loses to 1.30: 27 of 30 pairs. Exactly, over the
    # C(13, 3) = 286 choices of three of the 13 values: U >= 27 leaves at most 3 pairs lost,
    # a partition of 0, 1, 2 or 3 into at most 3 parts: 1 + 1 + 2 + 3 = 7 choices,
    # p = 7/286 = 0.0245 < 0.05
    assert gate.time_test.u == 27 and gate.time_test.method == "exact"
    assert gate.time_test.p_value == pytest.approx(7 / 286)
    assert gate.test == "mann_whitney_u"
    # the same expectation throughout: efficiency 0.5 / 1.25 = 0.4 against the median of
    # the runs' efficiencies, (0.5 / 1.00 + 0.5 / 1.01) / 2 = 0.49752: -19.6%
    assert gate.median_efficiency == pytest.approx((0.5 + 0.5 / 1.01) / 2)
    assert gate.efficiency_change == pytest.approx(0.4 / ((0.5 + 0.5 / 1.01) / 2) - 1)
    assert gate.regressed_on == ("time", "efficiency") and gate.regression


def test_a_slowdown_within_the_noise_is_not_significant():
    # window 0.6, 0.8, 1.0, 1.2, 1.4 ms (median 1.0); new 0.9, 1.2, 1.5 (mean 1.2: +20%).
    # U = 2 + 3.5 + 5 = 10.5 (1.2 ties once). Pooled ranks 1, 2, 3, 4, 5.5, 5.5, 7, 8; the
    # run's sum 3 + 5.5 + 8 = 16.5. Of the C(8, 3) = 56 choices of three ranks, those summing
    # to 16.5 or more: 8 and 7 with 2, 3, 4, 5.5 or 5.5 (5); 8 without 7 and two of the rest
    # summing to 8.5 or more, 5.5 + 5.5, 5.5 + 4 twice, 5.5 + 3 twice (5); 7 without 8 and
    # 9.5 or more, 5.5 + 5.5, 5.5 + 4 twice (3): p = 13/56 = 0.232
    gate = gate_against_window(
        RunSample.of((0.9, 1.2, 1.5), 0.5), _runs(0.6, 0.8, 1.0, 1.2, 1.4), 0.1, 0.95
    )
    assert gate.slower and gate.change == pytest.approx(0.2)
    assert gate.time_test.p_value == pytest.approx(13 / 56)
    assert not gate.beyond_slowest  # 1.2 ms within 1.4 ms x 1.1
    assert not gate.regression


def test_a_lower_fraction_of_the_roofline_regresses_when_the_time_does_not():
    # the same times, but the expectation halved (a new catalog): 0.25 / t against 0.5 / t.
    # The window's 9 efficiencies all exceed the run's 3: U = 27, every pair; one choice of
    # the C(12, 3) = 220 of three values to be the lowest: p = 1/220 = 0.0045
    window = [
        RunSample.of(r, 0.5) for r in ((0.99, 1.0, 1.01), (0.98, 1.02, 1.03), (0.97, 1.04, 1.05))
    ]
    gate = gate_against_window(RunSample.of((0.995, 1.005, 1.015), 0.25), window, 0.1, 0.95)
    assert not gate.slower
    # median efficiency 0.5 / 1.01 (the runs' means 1.0, 1.01, 1.02); the run's 0.25 / 1.005
    assert gate.efficiency_change == pytest.approx((0.25 / 1.005) / (0.5 / 1.01) - 1)
    assert gate.efficiency_test.p_value == pytest.approx(1 / 220)
    assert gate.regressed_on == ("efficiency",)


def test_too_few_samples_fall_back_to_the_threshold_on_the_medians():
    # one repeat against one run: the smallest p of any ordering is 1 / C(2, 1) = 0.5 > 0.05
    gate = gate_against_window(RunSample.of((1.2,), 0.5), _runs(1.0), 0.1, 0.95)
    assert gate.test == "insufficient" and gate.time_test.smallest_p == 0.5
    assert gate.regression  # +20% > 10%, by the threshold alone
    assert not gate_against_window(RunSample.of((1.05,), 0.5), _runs(1.0), 0.1, 0.95).regression
    with pytest.raises(InvalidInput):
        gate_against_window(RunSample.of((1.0,), 0.5), [], 0.1, 0.95)


def test_a_run_beyond_the_whole_window_regresses_whatever_the_test_says():
    # window 1 .. 5 ms, one repeat each; the run 0.5 and 60 ms (mean 30.25 ms). U = 0 + 5 = 5
    # of 10 pairs: of the C(7, 2) = 21 choices of two of the seven, those with U >= 5 are the
    # pairs (b1 <= b2) of windows values below each with b1 + b2 >= 5: 21 less the 9 with a
    # sum of at most 4 ((0, 0..4), (1, 1..3), (2, 2)): p = 12/21 = 0.571, not significant.
    # But 30.25 ms is beyond the slowest repeat, 5 ms x 1.1: a regression, on both axes
    gate = gate_against_window(RunSample.of((0.5, 60.0), 0.5), _runs(1, 2, 3, 4, 5), 0.1, 0.95)
    assert gate.test == "mann_whitney_u"
    assert gate.time_test.p_value == pytest.approx(12 / 21)
    assert gate.slowest_time_s == 5 and gate.beyond_slowest
    assert gate.least_efficiency == pytest.approx(0.5 / 5) and gate.below_least
    assert gate.regressed_on == ("time", "efficiency")
    # at 5.4 ms, within 5 ms x 1.1, the test decides, and says no
    within = gate_against_window(RunSample.of((0.5, 10.3), 0.5), _runs(1, 2, 3, 4, 5), 0.1, 0.95)
    assert within.time_test.p_value == pytest.approx(12 / 21)
    assert not within.beyond_slowest and not within.regression


@pytest.mark.parametrize(
    ("window", "new", "test"),
    [
        # one repeat at 0.75 confidence (alpha 0.25) against two, three or four runs of one:
        # the smallest p is 1/3, 1/4, 1/5. Above alpha, too few: 1.8 ms, +20% over the median
        # 1.5 ms, within 2 ms x 1.1: suspected, not a regression (no test could decide it)
        ((1.0, 2.0), 1.8, "insufficient"),
        # exactly alpha: a p of 0.25 would be significant, so the test decides. 2.5 ms, +25%:
        # U = 2 of 3, p = 2/4 = 0.5, not significant; within 3 ms x 1.1: suspected
        ((1.0, 2.0, 3.0), 2.5, "mann_whitney_u"),
        # below: 3.5 ms, +40%: U = 3 of 4, p = 2/5, not significant; within 4 ms x 1.1
        ((1.0, 2.0, 3.0, 4.0), 3.5, "mann_whitney_u"),
    ],
)
def test_too_few_samples_is_a_smallest_p_above_alpha(window, new, test):
    gate = gate_against_window(RunSample.of((new,), 0.5), _runs(*window), 0.1, 0.75)
    assert gate.alpha == 0.25 and gate.smallest_p == pytest.approx(1 / (len(window) + 1))
    assert gate.slower and gate.test == test and not gate.regression
    assert gate.suspected_on == ("time", "efficiency")


def test_a_run_of_many_repeats_is_tested_by_its_quantiles():
    # 1000 repeats 1 .. 1000 (shuffled): the 100 order statistics at ranks round(i * 999 / 99),
    # i = 0 .. 99: 1, 11 (round(10.09) = 10, the 11th value), ..., 1000
    repeats = [float(v) for v in range(1000, 0, -1)]
    tested = RunSample.of(repeats, 0.5).tested()
    assert len(tested) == TESTED_REPEATS == 100
    assert (tested[0], tested[1], tested[-1]) == (1.0, 11.0, 1000.0)
    assert RunSample.of([3.0, 1.0], 0.5).tested() == [3.0, 1.0]  # few: all, as given
    gate = gate_against_window(RunSample.of(repeats, 0.5), [RunSample.of(repeats, 0.5)], 0.1, 0.95)
    assert gate.samples == 100 and not gate.regression


def test_the_median_absolute_deviation_ignores_one_outlier():
    # 1, 2, 3, 100: median 2.5; deviations 1.5, 0.5, 0.5, 97.5: MAD (0.5 + 1.5) / 2 = 1
    assert median_absolute_deviation([1.0, 2.0, 3.0, 100.0]) == 1.0


_REPEATS = st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=6).map(tuple)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_REPEATS, min_size=1, max_size=6),
    st.floats(min_value=0.01, max_value=2.0),
    st.floats(min_value=0.51, max_value=0.999),
)
def test_a_run_like_its_window_is_not_a_regression(window, threshold, confidence):
    runs = [RunSample.of(r, 1e-3) for r in window]
    # the window's own median run, and a run faster than every repeat of the window
    median_run = sorted(runs, key=lambda r: r.time_s)[(len(runs) - 1) // 2]
    assert not gate_against_window(median_run, runs, threshold, confidence).regression
    fastest = min(t for r in window for t in r)
    faster = RunSample.of((fastest / 2,), 1e-3)
    assert not gate_against_window(faster, runs, threshold, confidence).regression


def test_a_change_beyond_a_float_is_unknown_but_still_a_regression():
    # 1.1 s after 1.0 s: +10%, not over a 10% threshold; 1e9 s after 1e-300 s: 1e309 - 1
    # overflows, so the change is None, yet the run is far slower than the threshold allows
    assert change(1.1, 1.0) == pytest.approx(0.1)
    assert not is_regression(1.1, 1.0, 0.1)
    assert change(1e9, 1e-300) is None
    assert is_regression(1e9, 1e-300, 0.1)
    assert not is_regression(1e-300, 1e9, 0.1)
