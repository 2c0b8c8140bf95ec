"""Human-readable numbers for the edges (explanations, pages). GB = 1e9 bytes, decimal."""

from __future__ import annotations

from app.engine.units import GIGA, KILO, MEGA, MICRO, MILLI, NANO, PETA, TERA

_PREFIXES = ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, ""))


def _scaled(value: float, unit: str) -> str:
    for factor, prefix in _PREFIXES:
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def seconds(value: float) -> str:
    """1.5e-3 -> '1.5 ms'."""
    for factor, unit in ((1.0, "s"), (MILLI, "ms"), (MICRO, "µs")):
        if value >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value / NANO:.3g} ns"


def bytes_(value: float) -> str:
    """16.06e9 -> '16.1 GB' (decimal prefixes)."""
    return _scaled(value, "B")


def flops(value: float) -> str:
    """3.12e14 -> '312 TFLOP'."""
    return _scaled(value, "FLOP")


def rate(value: float, unit: str) -> str:
    """3.12e14, 'FLOP/s' -> '312 TFLOP/s'."""
    return _scaled(value, unit)
