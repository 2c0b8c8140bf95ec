"""The one-sided Mann-Whitney U test: hand-worked examples and invariants."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import InvalidInput
from app.engine.rank_test import mann_whitney_greater, normal_upper_tail


def test_every_pair_larger_without_ties():
    # x = 3, 4, 5 against y = 1, 2: pooled ranks 3, 4, 5 | 1, 2; R_x = 12, U = 12 - 3*4/2 = 6
    # (all 3 x 2 pairs). Mean 3*2/2 = 3, variance 3*2/12 * (5 + 1) = 3:
    # z = (6 - 3 - 0.5) / sqrt(3) = 1.4434, p = P(Z >= 1.4434) = 0.07446;
    # the smallest p of any ordering of 3 and 2 values: 1 / C(5, 3) = 0.1
    test = mann_whitney_greater([3.0, 4.0, 5.0], [1.0, 2.0])
    assert test.u == 6
    assert test.z == pytest.approx(2.5 / math.sqrt(3))
    assert test.p_value == pytest.approx(0.07446, abs=1e-5)
    assert test.smallest_p == pytest.approx(0.1)


def test_ties_count_one_half_and_shrink_the_variance():
    # x = 2, 3 against y = 1, 2: pairs 2>1, 2=2 (a half), 3>1, 3>2: U = 3.5. Mean 2*2/2 = 2;
    # one tie of t = 2 values (t^3 - t = 6), N = 4: variance 4/12 * (5 - 6/(4*3)) = 1.5;
    # z = (3.5 - 2 - 0.5) / sqrt(1.5) = 0.8165, p = 0.2071
    test = mann_whitney_greater([2.0, 3.0], [1.0, 2.0])
    assert test.u == 3.5
    assert test.z == pytest.approx(1 / math.sqrt(1.5))
    assert test.p_value == pytest.approx(0.2071, abs=1e-4)


def test_all_ties_give_no_evidence():
    # every value equal: U = 1.5 = its mean, no variance: z = 0, p = 1/2
    test = mann_whitney_greater([1.0, 1.0, 1.0], [1.0])
    assert (test.u, test.z, test.p_value) == (1.5, 0.0, 0.5)


def test_normal_tail_and_empty_samples():
    # the 95th percentile of the standard normal is 1.6449
    assert normal_upper_tail(1.6449) == pytest.approx(0.05, abs=1e-5)
    assert normal_upper_tail(0.0) == 0.5
    with pytest.raises(InvalidInput):
        mann_whitney_greater([], [1.0])


_SAMPLE = st.lists(
    st.floats(min_value=1e-6, max_value=10.0, allow_nan=False), min_size=1, max_size=12
)
# small integers: many ties, where a normal approximation is most likely to misbehave
_TIED = st.lists(st.integers(1, 6).map(float), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_SAMPLE, _TIED), st.one_of(_SAMPLE, _TIED))
def test_p_is_a_probability_and_u_counts_pairs(x, y):
    test = mann_whitney_greater(x, y)
    assert 0.0 <= test.p_value <= 1.0
    assert 0.0 < test.smallest_p <= 0.5
    # U counts the pairs x > y, a tie a half; U_x + U_y = m n
    pairs = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)
    assert test.u == pytest.approx(pairs)
    assert test.u + mann_whitney_greater(y, x).u == pytest.approx(len(x) * len(y))


@settings(max_examples=300, deadline=None)
@given(_TIED, _TIED, st.integers(1, 5).map(float))
def test_shifting_the_first_sample_up_never_raises_p(x, y, shift):
    before = mann_whitney_greater(x, y).p_value
    assert mann_whitney_greater([v + shift for v in x], y).p_value <= before + 1e-12


@settings(max_examples=200, deadline=None)
@given(_SAMPLE, st.floats(min_value=0.0, max_value=3.0))
def test_slowing_a_sample_by_a_factor_never_raises_p(x, slower):
    y = sorted(x)[::2]
    before = mann_whitney_greater(x, y).p_value
    assert mann_whitney_greater([v * (1 + slower) for v in x], y).p_value <= before + 1e-12
