"""Human-readable numbers for the edges (explanations, pages). GB = 1e9 bytes, decimal."""

from __future__ import annotations

import math
from decimal import Decimal

from app.engine.units import DAY, GIGA, HOUR, KILO, MEGA, MICRO, MILLI, NANO, PETA, TERA

_EXACT = 1e15  # below 2^53 (9.007e15), a float of whole numbers prints exactly
_PREFIXES = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, ""))


def number(value: float, digits: int = 3) -> str:
    """`digits` significant digits in positional notation, never an exponent:
    1365.3 -> '1,370', 0.012345 -> '0.0123', 2.0 -> '2'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:,.{digits}g}"  # the fast path: positional unless it needs an exponent
    if "e" not in text:
        return text
    if abs(value) < _EXACT:
        shift = digits - 1 - math.floor(math.log10(abs(value)))  # < 0: round left of the point
        text = f"{round(value, shift):,.{max(0, shift)}f}"
    else:  # rounded in decimal: past 2^53 a float's binary digits would show (1e30 prints as
        # 1,000,000,000,000,000,019,884,624,838,656); Decimal is slower, so only here
        text = f"{Decimal(f'{value:.{digits - 1}e}'):,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def percent(value: float, digits: int = 3) -> str:
    """A fraction as a percentage to `digits` significant digits: 0.4 -> '40%',
    0.0125 -> '1.25%'."""
    return f"{number(value * 100, digits)}%"


def times(value: float, decimals: int = 1) -> str:
    """A ratio: `decimals` decimals below 100 (2.5 -> '2.5x'), three significant digits
    above (12345.6 -> '12,300x')."""
    return f"{value:.{decimals}f}x" if abs(value) < 100 else f"{number(value)}x"


def _scaled(value: float, unit: str) -> str:
    for factor, prefix in _PREFIXES:
        if abs(value) >= factor:
            return f"{number(value / factor)} {prefix}{unit}"
    return f"{number(value)} {unit}"


def seconds(value: float) -> str:
    """1.5e-3 -> '1.5 ms'."""
    for factor, unit in ((1.0, "s"), (MILLI, "ms"), (MICRO, "µs")):
        if value >= factor:
            return f"{number(value / factor)} {unit}"
    return f"{number(value / NANO)} ns"


def duration(value: float) -> str:
    """Seconds in the largest of s, hours and days that keeps them at least 1:
    2.6e6 -> '30.1 days', 5400 -> '1.5 h', 1.5e-3 -> '1.5 ms'."""
    for factor, unit in ((DAY, "days"), (HOUR, "h")):
        if value >= factor:
            return f"{number(value / factor)} {unit}"
    return seconds(value)


def per_second(value: float, unit: str) -> str:
    """A rate in plain numbers: 12345.6, 'tok' -> '12,300 tok/s'."""
    return f"{number(value)} {unit}/s"


def bytes_(value: float) -> str:
    """16.06e9 -> '16.1 GB' (decimal prefixes)."""
    return _scaled(value, "B")


def flops(value: float) -> str:
    """3.12e14 -> '312 TFLOP'."""
    return _scaled(value, "FLOP")


def rate(value: float, unit: str) -> str:
    """3.12e14, 'FLOP/s' -> '312 TFLOP/s'."""
    return _scaled(value, unit)
