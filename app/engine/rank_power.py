"""How many repeats of a run would decide a suspected regression: the power of the one-sided
Mann-Whitney test (app/engine/rank_test.py) against a window of baseline repeats, by Noether's
formula, and the fewest repeats whose best ordering the exact test can call significant at all
(docs/formulas.md, "Statistics", "Repeats that would decide").

Noether, "Sample size determination for some common nonparametric tests", JASA 82 (1987)
645-647: the Wilcoxon-Mann-Whitney test at one-sided level alpha has power 1 - beta against an
alternative with P(X > Y) = p when the total N = m + n and the share c = m / N satisfy
N = (z_{1-alpha} + z_{1-beta})^2 / (12 c (1 - c) (p - 1/2)^2). Since N c (1 - c) = m n / N,
with the window's n fixed that is m n / (m + n) >= K, K = (z_{1-alpha} + z_{1-beta})^2 /
(12 (p - 1/2)^2), so m >= K n / (n - K) while n > K; no m suffices when n <= K (the window
itself is too small). p comes from the change over the noise under normality: X ~ N(mu (1 +
d), sigma^2), Y ~ N(mu, sigma^2) give X - Y ~ N(mu d, 2 sigma^2), p = Phi(d / (s sqrt 2)),
s = sigma / mu the relative noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist, median

from app.engine.errors import InvalidInput
from app.engine.rank_test import smallest_p

# the power a suspected regression is confirmed with: the conventional 0.8 (Cohen,
# "Statistical power analysis for the behavioral sciences", 2nd ed. 1988, section 2.4: a
# miss four times as likely as a false alarm at alpha = 0.05 is the balance he proposes)
POWER = 0.8

_STANDARD = NormalDist()
# the median absolute deviation of a normal sample is sigma times Phi^-1(3/4) (0.6745):
# dividing by it makes the MAD an estimate of sigma (Rousseeuw and Croux, "Alternatives to
# the median absolute deviation", JASA 88 (1993) 1273-1283, section 1)
_MAD_PER_SIGMA = _STANDARD.inv_cdf(0.75)


def relative_noise(values: Sequence[float]) -> float:
    """The spread of `values` as a share of their median: the median absolute deviation
    scaled to a normal's standard deviation, over the median (0 when half or more tie)."""
    if not values:
        raise InvalidInput("window", "needs at least one value")
    middle = median(values)
    if middle <= 0:
        raise InvalidInput("window", f"values must be positive, median {middle}")
    deviation = median(abs(v - middle) for v in values)
    return deviation / _MAD_PER_SIGMA / middle


def superiority(change: float, noise: float) -> float:
    """P(X > Y) for X a repeat `change` (a fraction, +0.1 = 10% slower) above Y, both normal
    with a standard deviation `noise` times the centre: Phi(change / (noise sqrt 2)); with no
    noise every pair is ordered by the change alone."""
    if noise == 0:
        return 1.0 if change > 0 else 0.5 if change == 0 else 0.0
    return _STANDARD.cdf(change / (noise * math.sqrt(2.0)))


def noether_repeats(p: float, window: int, alpha: float, power: float = POWER) -> int | None:
    """The fewest repeats m of a run against `window` baseline repeats for the one-sided
    Mann-Whitney test at level `alpha` to reach `power` when P(run > baseline) = p: m >= K n /
    (n - K), K = (z_{1-alpha} + z_{power})^2 / (12 (p - 1/2)^2). None when p <= 1/2 (no
    slowdown to find) or the window is too small (n <= K) for any m."""
    if not (0 < alpha < 1 and 0 < power < 1) or window < 1:
        raise InvalidInput("alpha", "alpha and power in (0, 1), a window of at least one")
    if p <= 0.5:
        return None
    z = _STANDARD.inv_cdf(1 - alpha) + _STANDARD.inv_cdf(power)
    k = z * z / (12 * (p - 0.5) ** 2)
    if window <= k:
        return None
    return max(1, math.ceil(k * window / (window - k)))


def fewest_testable(window: int, alpha: float, most: int) -> int | None:
    """The fewest repeats (up to `most`) whose best ordering, every repeat above the window's
    `window` untied values, the test can call significant: smallest p <= alpha. With one
    repeat that p is 1 / (window + 1): above alpha, no single run can confirm anything."""
    return next((m for m in range(1, most + 1) if smallest_p(m, window) <= alpha), None)


def repeats_to_decide(
    change: float, noise: float, window: int, alpha: float, *, most: int, power: float = POWER
) -> int | None:
    """The repeats of a run `change` slower than a window of `window` repeats of relative
    spread `noise` that the test needs to call it significant with probability `power`: the
    larger of Noether's count and the fewest the test can call significant at all. None when
    none up to `most` (the repeats the test reads) would do."""
    by_power = noether_repeats(superiority(change, noise), window, alpha, power)
    testable = fewest_testable(window, alpha, most)
    if by_power is None or testable is None:
        return None
    needed = max(by_power, testable)
    return needed if needed <= most else None
