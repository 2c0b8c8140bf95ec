"""Human-readable numbers for the edges (explanations, pages). GB = 1e9 bytes, decimal."""

from __future__ import annotations

from app.engine.prose import number, seconds, times
from app.engine.units import DAY, GIGA, HOUR, KILO, MEGA, PETA, TERA

# number and times live in the engine, which writes numbers in its own advice too
__all__ = [
    "bytes_",
    "duration",
    "flops",
    "number",
    "per_second",
    "percent",
    "rate",
    "seconds",
    "times",
]

_PREFIXES = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, ""))


def percent(value: float, digits: int = 3) -> str:
    """A fraction as a percentage to `digits` significant digits: 0.4 -> '40%',
    0.0125 -> '1.25%'."""
    return f"{number(value * 100, digits)}%"


def _scaled(value: float, unit: str) -> str:
    magnitude = abs(value)
    for factor, prefix in _PREFIXES:
        if magnitude >= factor:
            return f"{number(value / factor)} {prefix}{unit}"
    return f"{number(value)} {unit}"


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
