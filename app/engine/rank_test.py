"""The Mann-Whitney U test, one-sided, by its normal approximation (docs/formulas.md,
"Statistics").

Mann and Whitney, "On a test of whether one of two random variables is stochastically larger
than the other", Annals of Mathematical Statistics 18 (1947): U counts the pairs (x, y) with
x > y (a tie counts one half); under the null hypothesis (both samples from one distribution)
U has mean m n / 2 and, with ties, variance m n / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1)))
(N = m + n, t the size of each group of tied values). The p-value of "x is larger" is the
upper tail of the normal distribution at z = (U - m n / 2 - 1/2) / sd, the 1/2 a continuity
correction for a statistic that moves in steps of one half or one. When every value ties,
U sits at its mean with no variance: z = 0, p = 1/2, no evidence either way (the limit of the
uncorrected statistic, and what keeps p from rising as the first sample moves up through a
tie).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class RankTest:
    """A one-sided Mann-Whitney test of "the first sample is larger"."""

    u: float  # pairs (x, y) with x > y, ties counted as one half
    z: float  # the normal approximation's standard score (0 when every value ties)
    p_value: float  # upper tail: the chance of a U this large if both samples were alike
    smallest_p: float  # 1 / C(m + n, m): the smallest p any ordering of these sizes has


# past this many orderings, one in their number is below the smallest normal float
# (2.2e-308): taken as 0, far below any 1 - confidence
_COUNTLESS = 10**308


def _one_in_orderings(m: int, n: int) -> float:
    """1 / C(m + n, m), exactly, without building the binomial of a large sample (a number
    of thousands of digits): C(n + i, i) for i = 1 .. min(m, n), stopped once past a float."""
    k, orderings = min(m, n), 1
    for i in range(1, k + 1):
        orderings = orderings * (m + n - k + i) // i
        if orderings > _COUNTLESS:
            return 0.0
    return 1 / orderings


def normal_upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_greater(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Test whether values of `x` tend to be larger than those of `y` (both non-empty).

    U = R_x - m (m + 1) / 2, R_x the sum of x's ranks in the pooled sample (ties given their
    mean rank): the same as counting, for each x, the y below it and half those equal to it,
    which a binary search in the sorted y does in O((m + n) log n).
    """
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise InvalidInput("sample", "both samples need at least one value")
    ordered = sorted(y)
    # each x beats the y below it and ties (a half each) with those equal to it
    u = 0.0
    for value in x:
        below, up_to = bisect_left(ordered, value), bisect_right(ordered, value)
        u += below + (up_to - below) / 2
    total = m + n
    ties = sum(t**3 - t for t in Counter([*x, *y]).values() if t > 1)
    variance = m * n / 12 * ((total + 1) - ties / (total * (total - 1)))
    smallest = _one_in_orderings(m, n)
    if variance <= 0:
        return RankTest(u, 0.0, 0.5, smallest)
    z = (u - m * n / 2 - 0.5) / math.sqrt(variance)
    return RankTest(u, z, min(1.0, max(0.0, normal_upper_tail(z))), smallest)
