"""Numbers for people: three significant digits, never an exponent."""

import pytest

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
    ],
)
def test_number(value, text):
    assert fmt.number(value) == text


def test_units_never_use_an_exponent():
    # 1,500 s is '1,500 s', 2.5e18 FLOP/s past the largest prefix '2,500 PFLOP/s'
    assert fmt.seconds(1500) == "1,500 s"
    assert fmt.rate(2.5e18, "FLOP/s") == "2,500 PFLOP/s"
    assert fmt.bytes_(16.06e9) == "16.1 GB"
    assert fmt.seconds(1.5e-3) == "1.5 ms"
