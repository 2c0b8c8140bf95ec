"""The Mann-Whitney U test, one-sided: exact for small samples, by its normal approximation
for large ones (docs/formulas.md, "Statistics").

Mann and Whitney, "On a test of whether one of two random variables is stochastically larger
than the other", Annals of Mathematical Statistics 18 (1947): U counts the pairs (x, y) with
x > y (a tie counts one half). Under the null hypothesis (both samples from one distribution)
every choice of which m of the m + n pooled values are the x is equally likely, and the p-value
of "x is larger" is the share of the C(m + n, m) choices whose U is at least the one observed.

Exact: while those choices number at most EXACT_ORDERINGS, they are counted, by their rank sum
given the pooled values' ties (tied values share their mean rank), one group of tied values at
a time: the permutation distribution of U for these very values, which without ties is Mann
and Whitney's exact null distribution.

Normal: beyond, U has mean m n / 2 and, with ties, variance m n / 12 ((N + 1) - sum(t^3 - t) /
(N (N - 1))) (N = m + n, t the size of each group of tied values); p is the upper tail of the
normal distribution at z = (U - m n / 2 - 1/2) / sd, the 1/2 a continuity correction. When
every value ties, U sits at its mean with no variance: z = 0, p = 1/2, no evidence either way.

Each test says the smallest p its method can give for samples of these sizes (`smallest_p`),
so that "too few samples to test" is decided by the same distribution as the p-value.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.engine.errors import InvalidInput

Method = Literal["exact", "normal"]

# the most choices of the x among the pooled values that are counted one by one: the count
# stays within a few hundred thousand additions (the worst case: two values among 447), and
# beyond it the smaller sample is large enough (two among 448, three among 86, ten among 20)
# for the normal approximation's p at the 5% level to be within 6% of the exact one, and above
# it further out (docs/formulas.md, "Statistics"). One repeat against any window the gate
# reads (at most 100 runs of 100 repeats: 10,101 choices) is counted
EXACT_ORDERINGS = 100_000


@dataclass(frozen=True, slots=True)
class RankTest:
    """A one-sided Mann-Whitney test of "the first sample is larger"."""

    u: float  # pairs (x, y) with x > y, ties counted as one half
    method: Method  # exact: counted over every choice of the x; normal: its approximation
    p_value: float  # upper tail: the chance of a U this large if both samples were alike
    smallest_p: float  # the p of every x above every y (U = m n), by the same method


def normal_upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _u_statistic(x: Sequence[float], y: Sequence[float]) -> float:
    """U = R_x - m (m + 1) / 2, R_x the sum of x's ranks in the pooled sample (ties given their
    mean rank): the same as counting, for each x, the y below it and half those equal to it,
    which a binary search in the sorted y does in O((m + n) log n)."""
    ordered = sorted(y)
    u = 0.0
    for value in x:
        below, up_to = bisect_left(ordered, value), bisect_right(ordered, value)
        u += below + (up_to - below) / 2
    return u


def _rank_sums(tie_sizes: Sequence[int], k: int) -> list[int]:
    """ways[v]: how many choices of k of the pooled values have twice their rank sum = v.

    The pooled values in ascending order, as groups of tied values of these sizes: a group of
    t after s smaller values holds ranks s + 1 .. s + t, each valued at their mean, so twice
    it, 2 s + t + 1, is a whole number. Taking c of a group adds c times that and can be done
    in C(t, c) ways; the groups are added one at a time, the most values chosen first so that
    each group is taken from at most once (a knapsack count)."""
    top = k * (2 * sum(tie_sizes) - k + 1)  # twice the largest rank sum: the k highest
    ways = [[0] * (top + 1) for _ in range(k + 1)]
    ways[0][0] = 1
    reach = [0] * (k + 1)  # the largest doubled sum reached with each number chosen
    before = 0
    for size in tie_sizes:
        doubled_rank = 2 * before + size + 1
        for chosen in range(k, 0, -1):
            for c in range(1, min(size, chosen) + 1):
                # every choice of chosen - c values before, with c of this group: C(t, c) ways
                source = ways[chosen - c][: reach[chosen - c] + 1]
                shift, times = c * doubled_rank, math.comb(size, c)
                target, end = ways[chosen], shift + len(source)
                target[shift:end] = [
                    had + times * new for had, new in zip(target[shift:end], source, strict=True)
                ]
                reach[chosen] = max(reach[chosen], end - 1)
        before += size
    return ways[k]


def _exact_p(x: Sequence[float], y: Sequence[float], u: float, orderings: int) -> float:
    """P(U >= u) over every choice of which pooled values are the x, counted by the rank sum
    of the smaller sample (k values): 2 U_x = 2 R_x - k (k + 1), or when the y are fewer,
    U_x = m n - U_y."""
    m, n = len(x), len(y)
    k = min(m, n)
    counts = Counter([*x, *y])
    ways = _rank_sums([counts[value] for value in sorted(counts)], k)
    offset = k * (k + 1)  # twice the smallest rank sum, k (k + 1) / 2
    if m <= n:  # 2 R_x >= 2 u + k (k + 1)
        tail = sum(ways[round(2 * u) + offset :])
    else:  # 2 U_y = 2 m n - 2 U_x <= 2 m n - 2 u
        tail = sum(ways[: 2 * m * n - round(2 * u) + offset + 1])
    return tail / orderings


def mann_whitney_greater(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Test whether values of `x` tend to be larger than those of `y` (both non-empty)."""
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise InvalidInput("sample", "both samples need at least one value")
    u = _u_statistic(x, y)
    orderings = math.comb(m + n, m)
    if orderings <= EXACT_ORDERINGS:
        return RankTest(u, "exact", _exact_p(x, y, u, orderings), 1 / orderings)
    ties = sum(t**3 - t for t in Counter([*x, *y]).values() if t > 1)
    return RankTest(u, "normal", _normal_p(u, m, n, ties), _normal_p(m * n, m, n, ties))


def _normal_p(u: float, m: int, n: int, ties: int) -> float:
    """P(U >= u) by the normal approximation, with the tie correction (ties: sum of t^3 - t
    over the groups of tied values) and a continuity correction of 1/2; 1/2 with no variance."""
    total = m + n
    variance = m * n / 12 * ((total + 1) - ties / (total * (total - 1)))
    if variance <= 0:
        return 0.5
    return normal_upper_tail((u - m * n / 2 - 0.5) / math.sqrt(variance))


def smallest_p(m: int, n: int) -> float:
    """The smallest p-value of m values against n untied ones, every x above every y (U = m
    n), by the method `mann_whitney_greater` would use at these sizes."""
    orderings = math.comb(m + n, m)
    if orderings <= EXACT_ORDERINGS:
        return 1 / orderings
    return _normal_p(m * n, m, n, 0)
