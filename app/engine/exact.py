"""The sample standard deviation of floats, exact then correctly rounded, in integers.

`statistics.stdev` gives the same float (the exact variance of the values as given, its
square root rounded once to the nearest float) through `Fraction`s, which costs about five
times as much for a run's few repeats (docs/performance.md, "Thirteenth pass").

Every finite float is a dyadic rational p / 2^e, so the values scaled to one denominator D
are integers X_i, and the sample variance is exactly

    s^2 = (n * sum(X_i^2) - (sum X_i)^2) / (n * (n - 1) * D^2)

Its square root is rounded by computing floor(sqrt(s^2) * 2^k) for a k that keeps at least
KEPT_BITS bits (a float's 53 and three more), forcing the last bit to 1 when anything was cut off
("round to odd"), and dividing by 2^k, which Python rounds correctly: a result rounded to odd
with two or more extra bits rounds to the nearest float exactly as the true value would
(Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
rounding to odd", IEEE Transactions on Computers 57(4), 2008).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# the bits the scaled square root keeps: a float's 53, and three for round-to-odd (two needed)
KEPT_BITS = 53 + 3


def sqrt_of_ratio(numerator: int, denominator: int) -> float:
    """sqrt(numerator / denominator) rounded to the nearest float (numerator >= 0 and
    denominator > 0, integers)."""
    # 2k extra bits in the radicand give k in its root: enough for KEPT_BITS (one spare for
    # the bit lengths' rounding)
    shift = KEPT_BITS + 1 - (numerator.bit_length() - denominator.bit_length()) // 2
    if shift >= 0:
        quotient, remainder = divmod(numerator << 2 * shift, denominator)
    else:
        quotient, remainder = divmod(numerator, denominator << -2 * shift)
    root = math.isqrt(quotient)
    if remainder or root * root != quotient:
        root |= 1  # inexact: round to odd
    return root / (1 << shift) if shift >= 0 else float(root << -shift)


def sample_stdev(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator) of two or more finite floats,
    equal to `statistics.stdev(values)`."""
    ratios = [value.as_integer_ratio() for value in values]
    scale = max(denominator for _, denominator in ratios)  # a power of two: all divide it
    scaled = [numerator * (scale // denominator) for numerator, denominator in ratios]
    n = len(scaled)
    total = sum(scaled)
    spread = n * sum(x * x for x in scaled) - total * total  # n times the sum of squared deviations
    return sqrt_of_ratio(spread, n * (n - 1) * scale * scale)
