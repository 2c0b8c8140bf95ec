"""Numbers in prose, for the engine's own sentences (advice) and the edges' (app/formatting.py):
significant digits in positional notation, never an exponent or a float's binary noise."""

from __future__ import annotations

import math
from decimal import Decimal

from app.engine.units import MICRO, MILLI, NANO

_EXACT = 1e15  # below 2^53 (9.007e15), a float of whole numbers prints exactly


def number(value: float, digits: int = 3) -> str:
    """`digits` significant digits in positional notation, never an exponent:
    1365.3 -> '1,370', 0.012345 -> '0.0123', 2.0 -> '2'."""
    magnitude = abs(value)
    if 0 < magnitude < 10.0**digits:  # 'g' is positional unless it needs an exponent
        text = format(value, f",.{digits}g")
        if "e" not in text:
            return text
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if magnitude < _EXACT:
        shift = digits - 1 - math.floor(math.log10(magnitude))  # < 0: round left of the point
        rounded = round(value, shift)
        text = f"{rounded:,.{shift}f}" if shift > 0 else f"{rounded:,.0f}"
    else:  # rounded in decimal: past 2^53 a float's binary digits would show (1e30 prints as
        # 1,000,000,000,000,000,019,884,624,838,656)
        text = f"{Decimal(f'{value:.{digits - 1}e}'):,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def times(value: float, decimals: int = 1) -> str:
    """A ratio: `decimals` decimals below 100 (2.5 -> '2.5x'), three significant digits
    above (12345.6 -> '12,300x')."""
    return f"{value:.{decimals}f}x" if abs(value) < 100 else f"{number(value)}x"


def seconds(value: float) -> str:
    """Seconds in the unit that keeps three digits readable: 1.5e-3 -> '1.5 ms'."""
    for factor, unit in ((1.0, "s"), (MILLI, "ms"), (MICRO, "µs")):
        if value >= factor:
            return f"{number(value / factor)} {unit}"
    return f"{number(value / NANO)} ns"
