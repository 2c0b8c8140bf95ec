"""The sample standard deviation in integers: statistics.stdev's float, on worked examples and
on any floats."""

import math
import statistics
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.exact import sample_stdev, sqrt_of_ratio


def test_worked_examples():
    # 1, 2, 3: n = 3, sum 6, sum of squares 14; (3 * 14 - 36) / (3 * 2) = 1, root 1
    assert sample_stdev([1.0, 2.0, 3.0]) == 1.0
    # 2, 4: (2 * 20 - 36) / 2 = 2, root sqrt(2): the float nearest it
    assert sample_stdev([2.0, 4.0]) == math.sqrt(2)
    # equal values: no spread at all
    assert sample_stdev([0.1, 0.1, 0.1]) == 0.0
    # 9.8, 10.1, 10.0 ms (a posted run): 0.15275... ms, as statistics.stdev gives it
    assert sample_stdev([0.0098, 0.0101, 0.0100]) == statistics.stdev([0.0098, 0.0101, 0.0100])


def test_roots_of_ratios_are_rounded_once_to_the_nearest_float():
    # exact squares give exact roots at any scale
    assert sqrt_of_ratio(9, 4) == 1.5
    assert sqrt_of_ratio(1, 4**600) == 2.0**-600
    assert sqrt_of_ratio(4**600, 1) == 2.0**600
    assert sqrt_of_ratio(0, 7) == 0.0
    # sqrt(2) is math.sqrt's correctly rounded float (IEEE 754 requires it of sqrt)
    assert sqrt_of_ratio(2, 1) == math.sqrt(2)
    assert sqrt_of_ratio(2 * 10**40, 10**40) == math.sqrt(2)


@settings(max_examples=500)
@given(st.integers(0, 2**200), st.integers(1, 2**200))
def test_a_root_is_the_float_nearest_the_exact_one(numerator, denominator):
    """The true root lies between the midpoints from the float returned to its neighbours:
    (midpoint below)^2 <= numerator / denominator <= (midpoint above)^2, in exact fractions."""
    root = sqrt_of_ratio(numerator, denominator)
    exact = Fraction(numerator, denominator)
    below = (Fraction(root) + Fraction(math.nextafter(root, -math.inf))) / 2
    above = (Fraction(root) + Fraction(math.nextafter(root, math.inf))) / 2
    assert (root == 0 or below * below <= exact) and exact <= above * above


finite = st.floats(min_value=5e-324, max_value=1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=1000)
@given(st.lists(finite, min_size=2, max_size=30))
def test_it_is_statistics_stdev(values):
    assert sample_stdev(values) == statistics.stdev(values)


@settings(max_examples=300)
@given(st.floats(1e-6, 1e3), st.lists(st.integers(-3, 3), min_size=2, max_size=10))
def test_it_is_statistics_stdev_for_values_a_few_ulps_apart(base, steps):
    """Repeats that differ in their last bits: the exact variance is tiny and cancels almost
    all of the sum of squares, where a float formula loses every digit."""
    values = [base + step * math.ulp(base) for step in steps]
    assert sample_stdev(values) == statistics.stdev(values)
