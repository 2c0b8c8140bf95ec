"""Small SVG primitives: escaping, linear and log scales, ticks, and a document builder.

Pure Python, no image library: charts are strings of SVG markup built from these pieces.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from app import formatting as fmt
from app.engine.units import GIGA, KILO, MEGA, PETA, TERA

WIDTH = 640
HEIGHT = 400
# A phone's chart: a 375 px screen leaves the check page's answer column 315 px (its padding and
# border taken off), so a chart this wide is shown at its own size there, its text 11-12 px.
NARROW = 300


def esc(text: object) -> str:
    """`text` made safe for SVG/XML character data and attribute values."""
    return escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with two decimals, without trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


@dataclass(frozen=True, slots=True)
class Scale:
    """Maps data values in [lo, hi] to pixels in [start, end], linearly or logarithmically."""

    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def _t(self, value: float) -> float:
        if self.log:
            value = max(value, self.lo * 1e-6)
            return (math.log10(value) - math.log10(self.lo)) / (
                math.log10(self.hi) - math.log10(self.lo)
            )
        return (value - self.lo) / (self.hi - self.lo)

    def __call__(self, value: float) -> float:
        """The pixel position of `value`."""
        return self.start + self._t(value) * (self.end - self.start)


def decades(lo: float, hi: float) -> tuple[float, float]:
    """The smallest range of whole powers of ten that holds [lo, hi] (lo, hi > 0)."""
    low = 10.0 ** math.floor(math.log10(lo))
    high = 10.0 ** math.ceil(math.log10(hi))
    return low, high if high > low else low * 10


def decade_ticks(lo: float, hi: float) -> list[float]:
    """The powers of ten within [lo, hi]."""
    first, last = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    return [10.0**e for e in range(first, last + 1)]


def linear_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` round ticks (1, 2 or 5 times a power of ten apart) within [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [i * step for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def nice_max(value: float) -> float:
    """A round upper bound for a linear axis starting at 0."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= value)


def si(value: float) -> str:
    """A tick label: 1e12 -> '1T', 0.01 -> '0.01', 2048 -> '2k'."""
    for factor, prefix in ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k")):
        if abs(value) >= factor:
            return f"{fmt.number(value / factor)}{prefix}"
    return fmt.number(value)


@dataclass(frozen=True, slots=True)
class Box:
    """The plot area inside a chart, in pixels."""

    left: float
    top: float
    right: float
    bottom: float


@dataclass(slots=True)
class Svg:
    """An SVG document under construction."""

    title: str
    width: int = WIDTH
    height: int = HEIGHT
    parts: list[str] = field(default_factory=list)

    def add(self, markup: str) -> None:
        """Append raw markup (already escaped)."""
        self.parts.append(markup)

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str) -> None:
        """A line segment with a CSS class."""
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" class="{cls}"/>'
        )

    def polyline(self, points: Sequence[tuple[float, float]], cls: str) -> None:
        """A polyline through `points`."""
        coords = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.add(f'<polyline points="{coords}" class="{cls}"/>')

    def text(self, x: float, y: float, content: str, cls: str, anchor: str = "start") -> None:
        """Escaped text at (x, y)."""
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" class="{cls}" text-anchor="{anchor}">'
            f"{esc(content)}</text>"
        )

    def point(self, x: float, y: float, cls: str, label: str, r: float = 5) -> None:
        """A marker with a tooltip title."""
        self.add(
            f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" class="{cls}">'
            f"<title>{esc(label)}</title></circle>"
        )

    def render(self) -> str:
        """The complete document (of class `narrow` when drawn for a phone)."""
        cls = "chart narrow" if self.width <= NARROW else "chart"
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" '
            f'role="img" aria-label="{esc(self.title)}" class="{cls}">'
            f"<title>{esc(self.title)}</title><style>{STYLE}</style>"
        )
        return head + "".join(self.parts) + "</svg>"


def for_page(draw: Callable[[int], str], wide: int = WIDTH) -> str:
    """A chart as a page shows it: drawn `wide` and NARROW, for the stylesheet to show the one
    that fits its box at its own size (a container query). Scaled to the box instead, one
    chart's text came out 6 px on a phone and 23 px on a desktop."""
    return draw(wide) + draw(NARROW)


def axes(
    svg: Svg, box: Box, x: Scale, y: Scale, *, xs: Sequence[float], ys: Sequence[float]
) -> None:
    """The frame, grid lines and tick labels at `xs` and `ys`."""
    svg.add(
        f'<rect x="{num(box.left)}" y="{num(box.top)}" width="{num(box.right - box.left)}" '
        f'height="{num(box.bottom - box.top)}" class="frame"/>'
    )
    for value in xs:
        px = x(value)
        svg.line(px, box.top, px, box.bottom, "grid")
        svg.text(px, box.bottom + 16, si(value), "tick", "middle")
    for value in ys:
        py = y(value)
        svg.line(box.left, py, box.right, py, "grid")
        svg.text(box.left - 6, py + 4, si(value), "tick", "end")


def axis_titles(svg: Svg, box: Box, x_title: str, y_title: str) -> None:
    """Titles under the x axis and along the y axis."""
    svg.text((box.left + box.right) / 2, box.bottom + 36, x_title, "axis", "middle")
    mid = (box.top + box.bottom) / 2
    svg.add(
        f'<text x="14" y="{num(mid)}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {num(mid)})">{esc(y_title)}</text>'
    )


# the charts' one stylesheet, inline in each chart: the CSP allows it by its hash (app/main.py
# hands it to app/security.py)
STYLE = (
    "text{font:12px system-ui,sans-serif;fill:#222}"
    ".tick{font-size:11px;fill:#555}.axis{font-size:12px;font-weight:600}"
    ".frame{fill:#fff;stroke:#999}.grid{stroke:#e4e4e4}"
    ".roof{stroke:#888;stroke-width:1.5;stroke-dasharray:5 4;fill:none}"
    ".roof-used{stroke:#1f5fbf;stroke-width:2.5;fill:none}"
    ".slope{stroke:#1f5fbf;stroke-width:2.5;fill:none}"
    ".cache-slope{stroke:#0b7a75;stroke-width:2;stroke-dasharray:9 3;fill:none}"
    ".cache-label{font-size:11px;fill:#0b7a75;font-weight:600}"
    ".label,.key-label{font-size:11px;fill:#333}.label-used{font-size:11px;fill:#1f5fbf;font-weight:600}"
    ".ridge{fill:#fff;stroke:#1f5fbf;stroke-width:2}"
    ".expected{fill:#2a9d4b;stroke:#fff;stroke-width:1.5}"
    ".measured{fill:#d1495b;stroke:#fff;stroke-width:1.5}"
    ".published{stroke:#e0a526;stroke-width:7;stroke-linecap:round;opacity:.55}"
    ".realistic{fill:#e0a526;stroke:#fff;stroke-width:1.5}"
    ".series-a{stroke:#1f5fbf;stroke-width:2;fill:none}"
    ".series-b{stroke:#d1495b;stroke-width:2;fill:none}"
    ".series-c{stroke:#2a9d4b;stroke-width:2;fill:none;stroke-dasharray:6 4}"
    ".dot-a{fill:#1f5fbf}.dot-b{fill:#d1495b}.dot-c{fill:#2a9d4b}.dot-off{fill:#bbb}"
    ".marker{stroke:#6a4c93;stroke-width:1.5;stroke-dasharray:4 3}"
    ".limit{stroke:#b5651d;stroke-width:1.5;stroke-dasharray:2 3}"
    ".latency{stroke:#0b7a75;stroke-width:2;stroke-dasharray:8 3 2 3}"
    ".floor{stroke:#9a6200;stroke-width:2;stroke-dasharray:7 4}"
    ".marker-label{font-size:11px;fill:#6a4c93}.limit-label{font-size:11px;fill:#b5651d}"
    ".latency-label{font-size:11px;fill:#0b7a75}.floor-label{font-size:11px;fill:#9a6200}"
    ".you{stroke:#111;stroke-width:2}.you-label{font-size:11px;fill:#111;font-weight:600}"
    ".note{font-size:12px;fill:#555}"
    ".band{fill:#6a4c93;fill-opacity:.13;stroke:#6a4c93;stroke-opacity:.5;stroke-dasharray:3 3}"
    ".band-median{stroke:#6a4c93;stroke-width:1.5}"
    ".ring-regressed{fill:none;stroke:#b00020;stroke-width:2.5}"
    ".ring-error{fill:none;stroke:#e07b00;stroke-width:2.5;stroke-dasharray:3 2}"
    ".regressed{stroke:#b00020;stroke-width:1.5;stroke-dasharray:4 3}"
    ".regressed-label{font-size:11px;fill:#b00020;font-weight:600}"
    ".bar-fits{fill:#1f5fbf}.bar-unfit{fill:#bbb}"
    ".bar-value{font-size:11px;fill:#fff;font-weight:600}"
    # a benchmark table's rows, by verdict (app/web/table_chart.py)
    ".named{stroke:#111;stroke-width:1.5}"
    ".pt-near_roofline{fill:#2a9d4b}.pt-overhead_bound{fill:#6a4c93}"
    ".pt-room_to_improve{fill:#e0a526}.pt-order_of_magnitude_slower{fill:#d1495b}"
    ".pt-faster_than_roofline{fill:#111}.pt-does_not_fit{fill:#888}"
)
