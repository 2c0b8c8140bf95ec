"""Human-readable numbers for the edges (explanations, pages). GB = 1e9 bytes, decimal."""

from __future__ import annotations

from app.engine.prose import number, times
from app.engine.units import DAY, GIGA, HOUR, KILO, MEGA, MICRO, MILLI, NANO, PETA, TERA

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


# Texts already written, by writer and unit, then value: an answer shows most of its times and
# sizes twice (its explanation and its `formatted` object) and the chip's peaks and capacity
# in every answer. A dictionary per writer and unit, so that a text is found without building
# a key. Bounded (each cleared when full); zero is never kept, since 0.0 and -0.0 are one key
# but read '0' and '-0'.
_MAX_WRITTEN = 4096
_SECONDS: dict[float, str] = {}
_SCALED: dict[str, dict[float, str]] = {}  # by unit


def forget_written() -> None:
    """Drop every text kept (a test's fresh start)."""
    _SECONDS.clear()
    _SCALED.clear()


def _keep(texts: dict[float, str], value: float, text: str) -> str:
    if value:
        if len(texts) >= _MAX_WRITTEN:
            texts.clear()
        texts[value] = text
    return text


def _write_scaled(value: float, unit: str) -> str:
    magnitude = abs(value)
    for factor, prefix in _PREFIXES:
        if magnitude >= factor:
            return f"{number(value / factor)} {prefix}{unit}"
    return f"{number(value)} {unit}"


def _scaled(value: float, unit: str) -> str:
    texts = _SCALED.get(unit)
    if texts is None:
        texts = _SCALED[unit] = {}
    text = texts.get(value)
    return _keep(texts, value, _write_scaled(value, unit)) if text is None else text


def _write_seconds(value: float) -> str:
    if value >= 1.0:
        return f"{number(value)} s"
    if value >= MILLI:
        return f"{number(value / MILLI)} ms"
    if value >= MICRO:
        return f"{number(value / MICRO)} µs"
    return f"{number(value / NANO)} ns"


def seconds(value: float) -> str:
    """1.5e-3 -> '1.5 ms'."""
    text = _SECONDS.get(value)
    return _keep(_SECONDS, value, _write_seconds(value)) if text is None else text


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
