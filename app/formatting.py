"""Human-readable numbers for the edges (explanations, pages). GB = 1e9 bytes, decimal."""

from __future__ import annotations

import math

from app.engine.units import GIGA, KILO, MEGA, MICRO, MILLI, NANO, PETA, TERA

_PREFIXES = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, ""))


def number(value: float, digits: int = 3) -> str:
    """`digits` significant digits in positional notation, never an exponent:
    1365.3 -> '1,370', 0.012345 -> '0.0123', 2.0 -> '2'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    shift = digits - 1 - math.floor(math.log10(abs(value)))  # < 0: round left of the point
    decimals = max(0, shift)
    text = f"{round(value, shift):,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


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


def bytes_(value: float) -> str:
    """16.06e9 -> '16.1 GB' (decimal prefixes)."""
    return _scaled(value, "B")


def flops(value: float) -> str:
    """3.12e14 -> '312 TFLOP'."""
    return _scaled(value, "FLOP")


def rate(value: float, unit: str) -> str:
    """3.12e14, 'FLOP/s' -> '312 TFLOP/s'."""
    return _scaled(value, unit)
