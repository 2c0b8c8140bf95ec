"""The one-sided Mann-Whitney U test: hand-worked examples, scipy's exact distribution, the
permutation distribution counted by brute force, and invariants."""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from app.engine import InvalidInput
from app.engine.rank_test import EXACT_ORDERINGS, mann_whitney_greater, normal_upper_tail


def test_every_pair_larger_without_ties_is_one_ordering_in_ten():
    # x = 3, 4, 5 against y = 1, 2: pooled ranks 3, 4, 5 | 1, 2; R_x = 12, U = 12 - 3*4/2 = 6
    # (all 3 x 2 pairs). Of the C(5, 3) = 10 equally likely choices of the x among the five,
    # only this one has U = 6: p = 1/10, also the smallest p of any ordering of 3 and 2 values
    test = mann_whitney_greater([3.0, 4.0, 5.0], [1.0, 2.0])
    assert (test.u, test.method) == (6, "exact")
    assert test.p_value == pytest.approx(0.1) and test.smallest_p == pytest.approx(0.1)


def test_ties_count_one_half_and_share_their_mean_rank():
    # x = 2, 3 against y = 1, 2: pairs 2>1, 2=2 (a half), 3>1, 3>2: U = 3.5. Pooled 1, 2, 2, 3
    # with ranks 1, 2.5, 2.5, 4; the C(4, 2) = 6 choices of two: {1, 2.5} twice (R = 3.5),
    # {1, 4} and {2.5, 2.5} (5), {2.5, 4} twice (6.5). Observed R = 2.5 + 4 = 6.5 (U = 6.5 - 3):
    # p = 2/6; the smallest p of two values against two, 1/6
    test = mann_whitney_greater([2.0, 3.0], [1.0, 2.0])
    assert test.u == 3.5
    assert test.p_value == pytest.approx(1 / 3) and test.smallest_p == pytest.approx(1 / 6)


def test_all_ties_give_no_evidence():
    # every value equal: every choice of the x has U = 1.5, the one observed: p = 1
    test = mann_whitney_greater([1.0, 1.0, 1.0], [1.0])
    assert (test.u, test.method, test.p_value) == (1.5, "exact", 1.0)


def test_large_samples_use_the_normal_approximation():
    # ten against ten: C(20, 10) = 184,756 choices, more than are counted. x = 11 .. 20 above
    # y = 1 .. 10: U = 100, mean 50, variance 10*10/12 * 21 = 175,
    # z = (100 - 50 - 0.5) / sqrt(175) = 3.742, p = 9.134e-5, the smallest at these sizes
    assert math.comb(20, 10) > EXACT_ORDERINGS
    test = mann_whitney_greater([float(v) for v in range(11, 21)], [float(v) for v in range(10)])
    assert (test.u, test.method) == (100, "normal")
    assert test.p_value == pytest.approx(9.134e-5, rel=1e-3)
    assert test.smallest_p == test.p_value
    # with every value tied there is no variance: z = 0, p = 1/2
    tied = mann_whitney_greater([1.0] * 10, [1.0] * 10)
    assert (tied.method, tied.p_value, tied.smallest_p) == ("normal", 0.5, 0.5)


def test_one_value_above_thirty_is_one_place_in_thirty_one():
    # the gate's blind spot: one repeat against 30. Exactly, p = 1/31 = 0.0323 <= 0.05, where
    # z = (30 - 15 - 0.5) / sqrt(30 * 32 / 12) = 1.621 gave 0.0525, never significant
    test = mann_whitney_greater([10.0], [1.0 + v / 100 for v in range(30)])
    assert test.method == "exact" and test.p_value == pytest.approx(1 / 31)
    assert normal_upper_tail(14.5 / math.sqrt(80)) == pytest.approx(0.0525, abs=1e-4)


def test_normal_tail_and_empty_samples():
    # the 95th percentile of the standard normal is 1.6449
    assert normal_upper_tail(1.6449) == pytest.approx(0.05, abs=1e-5)
    assert normal_upper_tail(0.0) == 0.5
    with pytest.raises(InvalidInput):
        mann_whitney_greater([], [1.0])


def _u(x, y):
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)


def _permutation_p(x, y):
    """P(U >= the observed U) over every choice of which pooled values are the x."""
    pooled, observed = [*x, *y], _u(x, y)
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(x)):
        rest = [v for i, v in enumerate(pooled) if i not in chosen]
        hits += _u([pooled[i] for i in chosen], rest) >= observed
        total += 1
    return hits / total


# distinct values split into two samples: scipy's exact distribution assumes no ties
_DISTINCT = st.lists(
    st.floats(min_value=1e-6, max_value=10.0), min_size=2, max_size=18, unique=True
).flatmap(lambda values: st.tuples(st.just(values), st.integers(1, len(values) - 1)))


@settings(max_examples=300, deadline=None)
@given(_DISTINCT)
def test_the_exact_p_is_scipys_exact_p_without_ties(split):
    values, m = split
    x, y = values[:m], values[m:]
    test = mann_whitney_greater(x, y)
    expected = mannwhitneyu(x, y, method="exact", alternative="greater").pvalue
    if test.method == "exact":
        assert test.p_value == pytest.approx(expected, rel=1e-9)
    else:  # sizes whose choices are too many to count
        assert math.comb(len(values), m) > EXACT_ORDERINGS


# small integers: many ties, where only counting every choice gives the exact p
_TIED = st.lists(st.integers(1, 4).map(float), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(_TIED, _TIED)
def test_with_ties_the_p_is_the_permutation_distributions(x, y):
    assert mann_whitney_greater(x, y).p_value == pytest.approx(_permutation_p(x, y), rel=1e-9)


_SAMPLE = st.lists(
    st.floats(min_value=1e-6, max_value=10.0, allow_nan=False), min_size=1, max_size=12
)
_MANY_TIES = st.lists(st.integers(1, 6).map(float), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_SAMPLE, _MANY_TIES), st.one_of(_SAMPLE, _MANY_TIES))
def test_p_lies_between_the_smallest_p_and_one_and_u_counts_pairs(x, y):
    test = mann_whitney_greater(x, y)
    assert test.smallest_p <= test.p_value <= 1.0
    assert 0.0 < test.smallest_p <= 0.5
    # U counts the pairs x > y, a tie a half; U_x + U_y = m n
    assert test.u == pytest.approx(_u(x, y))
    assert test.u + mann_whitney_greater(y, x).u == pytest.approx(len(x) * len(y))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 15), st.integers(1, 40))
def test_every_x_above_every_y_reaches_the_smallest_p(m, n):
    # what "too few samples to test" is decided by is what the test gives at its extreme,
    # exact or approximated: the two can never disagree
    test = mann_whitney_greater([float(n + i) for i in range(m)], [float(i) for i in range(n)])
    assert test.p_value == test.smallest_p
    assert test.method == ("exact" if math.comb(m + n, m) <= EXACT_ORDERINGS else "normal")


@settings(max_examples=300, deadline=None)
@given(_MANY_TIES, _MANY_TIES, st.integers(1, 5).map(float))
def test_shifting_the_first_sample_up_never_raises_p(x, y, shift):
    before = mann_whitney_greater(x, y).p_value
    assert mann_whitney_greater([v + shift for v in x], y).p_value <= before + 1e-12


@settings(max_examples=300, deadline=None)
@given(_DISTINCT, st.integers(0, 17))
def test_raising_one_value_of_x_above_all_never_raises_p(split, which):
    # without ties the null distribution is fixed by the sizes and U only grows. (With ties,
    # one value leaving or joining a tie changes the distribution it is judged by: that can
    # raise p a little, as the tie-corrected normal approximation's variance can)
    values, m = split
    x, y = values[:m], values[m:]
    raised = list(x)
    raised[which % m] = max(values) + 1.0
    before = mann_whitney_greater(x, y).p_value
    assert mann_whitney_greater(raised, y).p_value <= before + 1e-12


@settings(max_examples=200, deadline=None)
@given(_SAMPLE, st.floats(min_value=0.0, max_value=3.0))
def test_slowing_a_sample_by_a_factor_never_raises_p(x, slower):
    y = sorted(x)[::2]
    before = mann_whitney_greater(x, y).p_value
    assert mann_whitney_greater([v * (1 + slower) for v in x], y).p_value <= before + 1e-12
