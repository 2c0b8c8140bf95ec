"""The repeats that would decide a suspected regression: Noether's sample size for the
Mann-Whitney test, and the fewest repeats the exact test can call significant at all."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import InvalidInput
from app.engine.compare import RunSample, gate_against_window
from app.engine.rank_power import (
    fewest_testable,
    noether_repeats,
    relative_noise,
    repeats_to_decide,
    superiority,
)
from app.engine.rank_test import EXACT_ORDERINGS, smallest_p


def test_noethers_count_by_hand():
    # alpha 0.05, power 0.8: z_0.95 + z_0.8 = 1.6449 + 0.8416 = 2.4865, squared 6.1826.
    # P(X > Y) = 0.75: K = 6.1826 / (12 x 0.25^2) = 8.2435. Against 100 repeats,
    # m >= K n / (n - K) = 824.35 / 91.757 = 8.98: 9 repeats
    assert noether_repeats(0.75, 100, 0.05) == 9
    # against 8 (n <= K), no number of repeats reaches the power
    assert noether_repeats(0.75, 8, 0.05) is None
    # no slowdown to find
    assert noether_repeats(0.5, 100, 0.05) is None
    with pytest.raises(InvalidInput):
        noether_repeats(0.75, 100, 1.5)


def test_the_change_over_the_noise_gives_p_under_normality():
    # a shift of one noise: P(X - Y > 0), X - Y ~ N(0.1, 2 x 0.1^2): Phi(1 / sqrt 2) = 0.7602
    assert superiority(0.1, 0.1) == pytest.approx(0.76025, abs=1e-5)
    assert superiority(0.1, 0.0) == 1.0 and superiority(0.0, 0.0) == 0.5


def test_the_noise_is_the_mad_scaled_to_a_standard_deviation():
    # 0.96 .. 1.04 ms and 1.30: median 1.005, MAD 0.025 (tests/engine/test_compare.py);
    # 0.025 / Phi^-1(3/4) = 0.025 / 0.67449 = 0.037065, over 1.005: 0.036881
    window = [0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04, 1.30]
    assert relative_noise(window) == pytest.approx(0.036881, rel=1e-4)
    assert relative_noise([2.0, 2.0, 5.0]) == 0.0  # half or more tie: no spread


def test_one_repeat_cannot_confirm_against_a_window_of_ten():
    # one repeat against 10: its best ordering is one of C(11, 1) = 11, p = 1/11 = 0.091 >
    # 0.05; two against 10: 1 / C(12, 2) = 1/66 = 0.015 <= 0.05
    assert smallest_p(1, 10) == pytest.approx(1 / 11)
    assert fewest_testable(10, 0.05, most=100) == 2
    # against 19: 1/20 = 0.05, exactly alpha, is significant
    assert fewest_testable(19, 0.05, most=100) == 1
    # one value against one, allowed at most one repeat: never
    assert fewest_testable(1, 0.05, 1) is None


def test_beyond_the_exact_count_the_normal_tail_decides():
    # two among 448: C(450, 2) = 100,725 > EXACT_ORDERINGS, so the normal tail at U = m n
    # = 896: mean 448, sd sqrt(2 x 448 x 451 / 12) = 183.5, z = (896 - 448 - 0.5) / 183.5
    assert math.comb(450, 2) > EXACT_ORDERINGS
    z = (896 - 448 - 0.5) / math.sqrt(2 * 448 * 451 / 12)
    assert smallest_p(2, 448) == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))


def test_a_suspected_slowdown_against_ten_single_runs_needs_three_repeats():
    # the window 0.96 .. 1.04 ms and 1.30 ms, one repeat each; the run 1.15 ms, +14.4% on the
    # median 1.005 ms, within 1.30 x 1.1: one repeat can reach p = 1/11 at best (insufficient),
    # so it is suspected. Noise 0.036881 (above); d = 1.15 / 1.005 - 1 = 0.14428;
    # p = Phi(0.14428 / (0.036881 sqrt 2)) = Phi(2.766) = 0.99716;
    # K = 6.1826 / (12 x 0.49716^2) = 2.0845; m >= 20.845 / 7.9155 = 2.63: 3 repeats (and two
    # are the fewest the test can call significant). The efficiency (-12.6%) needs as many
    window = [
        RunSample.of((ms,), 0.5) for ms in (0.96, 0.97, 0.98, 0.99, 1.0, 1.01, 1.02, 1.03, 1.04)
    ]
    window.append(RunSample.of((1.30,), 0.5))
    gate = gate_against_window(RunSample.of((1.15,), 0.5), window, 0.1, 0.95)
    assert gate.test == "insufficient" and not gate.regression
    assert gate.suspected_on == ("time", "efficiency")
    assert gate.time_noise == pytest.approx(0.036881, rel=1e-4)
    assert repeats_to_decide(gate.change or 0, gate.time_noise, 10, 0.05, most=100) == 3
    assert gate.repeats_needed == 3
    # not over the threshold: nothing suspected, nothing needed
    calm = gate_against_window(RunSample.of((1.05,), 0.5), window, 0.1, 0.95)
    assert calm.suspected_on == () and calm.repeats_needed is None


def test_a_change_lost_in_the_noise_needs_more_than_the_test_reads():
    # +1% against a noise of 10%: p = Phi(0.01 / 0.1414) = 0.528, K = 6.1826 / (12 x 0.028^2)
    # = 657: a window of 100 repeats is smaller than K, no count of repeats would do
    assert repeats_to_decide(0.01, 0.1, 100, 0.05, most=100) is None


_SIZE = st.floats(min_value=0.001, max_value=2.0)
_NOISE = st.floats(min_value=0.0, max_value=1.0)


def _count(needed: int | None) -> float:
    return math.inf if needed is None else needed


@settings(max_examples=300, deadline=None)
@given(_SIZE, _SIZE, _NOISE, st.integers(min_value=1, max_value=2000))
def test_a_larger_change_never_needs_more_repeats(a, b, noise, window):
    small, large = sorted((a, b))
    needed = [_count(repeats_to_decide(d, noise, window, 0.05, most=100)) for d in (small, large)]
    assert needed[1] <= needed[0]


@settings(max_examples=300, deadline=None)
@given(_SIZE, _NOISE, _NOISE, st.integers(min_value=1, max_value=2000))
def test_more_noise_never_needs_fewer_repeats(change, a, b, window):
    quiet, loud = sorted((a, b))
    needed = [_count(repeats_to_decide(change, s, window, 0.05, most=100)) for s in (quiet, loud)]
    assert needed[0] <= needed[1]
