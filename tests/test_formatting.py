"""Numbers for people: three significant digits, never an exponent."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app import formatting as fmt


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1365.3, "1,370"),  # an intensity: not '1.37e+03'
        (0.012345, "0.0123"),
        (2.0, "2"),
        (999.6, "1,000"),
        (5.4e9, "5,400,000,000"),
        (1.5e-5, "0.000015"),
        (-42.42, "-42.4"),
        (0.0, "0"),
        # the edges of 'g' notation (positional from 1e-4 to what rounds to 999)
        (999.4999999999999, "999"),
        (999.5, "1,000"),  # 'g' would print 1e+03
        (-999.5, "-1,000"),
        (1e-4, "0.0001"),
        (9.9995e-5, "0.0001"),  # rounds up to 1e-4; 'g' would print 9.99e-05 (or 1e-04)
        (-0.00012345, "-0.000123"),
    ],
)
def test_number(value, text):
    assert fmt.number(value) == text


@settings(max_examples=2000)
@given(
    st.floats(min_value=-1e16, max_value=1e16, allow_nan=False),
    st.sampled_from([2, 3, 4, 6]),
)
def test_number_is_the_value_rounded_to_its_significant_digits(value, digits):
    # whichever path formats it: the text reads back as the value rounded to `digits`
    # significant digits (in decimal), and never shows an exponent
    text = fmt.number(value, digits)
    assert "e" not in text
    if value == 0:
        assert text in ("0", "-0")
        return
    rounded = float(f"{value:.{digits - 1}e}")
    assert float(text.replace(",", "")) == pytest.approx(rounded, rel=1e-12)


def test_units_never_use_an_exponent():
    # 1,500 s is '1,500 s', 2.5e18 FLOP/s past the largest prefix '2,500 PFLOP/s'
    assert fmt.seconds(1500) == "1,500 s"
    assert fmt.rate(2.5e18, "FLOP/s") == "2,500 PFLOP/s"
    assert fmt.bytes_(16.06e9) == "16.1 GB"
    assert fmt.seconds(1.5e-3) == "1.5 ms"


def test_number_rounds_in_decimal_so_no_binary_digit_shows():
    # 1e30 is 1,000,000,000,000,000,019,884,624,838,656 as a binary float
    assert fmt.number(1e30) == "1,000,000,000,000,000,000,000,000,000,000"
    assert fmt.number(0.1 + 0.2, 6) == "0.3"  # 0.30000000000000004
    assert fmt.number(123456789.0, 6) == "123,457,000"


def test_percent_times_duration_and_rates():
    assert fmt.percent(0.0125) == "1.25%"  # a given MFU, not '1%'
    assert fmt.percent(0.4) == "40%"
    assert fmt.times(2.5) == "2.5x" and fmt.times(3.0) == "3.0x"
    assert fmt.times(12345.6) == "12,300x"  # not '12345.6x'
    assert fmt.duration(2.6e6) == "30.1 days"  # 2.6e6 / 86,400 = 30.09
    assert fmt.duration(5400) == "1.5 h"
    assert fmt.duration(1.5e-3) == "1.5 ms"
    assert fmt.per_second(12345.6, "tok") == "12,300 tok/s"


def test_zero_keeps_its_sign_and_each_unit_its_prefix():
    assert [fmt.seconds(0.0), fmt.seconds(-0.0), fmt.seconds(0.0)] == ["0 ns", "-0 ns", "0 ns"]
    assert [fmt.bytes_(-0.0), fmt.bytes_(0.0)] == ["-0 B", "0 B"]
    # the same value in two units is two texts
    assert fmt.rate(3.12e14, "FLOP/s") == "312 TFLOP/s"
    assert fmt.rate(3.12e14, "B/s") == "312 TB/s"
    # a rate in a unit 's' is not a time
    assert [fmt.seconds(0.0015), fmt.rate(0.0015, "s")] == ["1.5 ms", "0.0015 s"]


@given(st.floats(min_value=-999.4999, max_value=999.4999, allow_nan=False))
def test_number_below_a_thousand_is_what_format_writes(value):
    # three significant digits as format's ',.3g' writes them where it needs no exponent
    assume(abs(value) >= 1e-4)
    assert fmt.number(value) == format(value, ",.3g")
