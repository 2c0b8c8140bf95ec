"""Stacked line-chart panels sharing one x axis: the batch-sweep and history charts.

Each panel has its own linear y axis from 0; the shared x axis may be logarithmic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from app import formatting as fmt
from app.web.svg import WIDTH, Box, Scale, Svg, axes, axis_titles, linear_ticks, nice_max, num

_PANEL_HEIGHT = 170
_GAP = 64
_TOP = 28


@dataclass(frozen=True, slots=True)
class Series:
    """A named line with dots; `off` marks points drawn grey (e.g. batches that do not fit)."""

    name: str
    points: Sequence[tuple[float, float]]
    cls: str = "a"
    off: Sequence[bool] = ()


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical line at x, or a horizontal one at y, with a label."""

    label: str
    x: float | None = None
    y: float | None = None
    cls: str = "marker"


@dataclass(frozen=True, slots=True)
class Panel:
    """One panel: its y-axis title, its series and its markers."""

    y_title: str
    series: Sequence[Series]
    markers: Sequence[Marker] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class XAxis:
    """The shared x axis: range, scale, title and labelled ticks."""

    lo: float
    hi: float
    title: str
    ticks: Sequence[tuple[float, str]]
    log: bool = False


def power_of_two_ticks(lo: float, hi: float, most: int = 9) -> list[tuple[float, str]]:
    """Powers of two within [lo, hi], thinned to at most `most`, labelled as integers."""
    first, last = math.ceil(math.log2(lo)), math.floor(math.log2(hi))
    exponents = list(range(first, last + 1))
    step = max(1, math.ceil(len(exponents) / most))
    return [(2.0**e, fmt.number(2.0**e, 7)) for e in exponents[::step]]


def time_ticks(lo: float, hi: float, count: int = 4) -> list[tuple[float, str]]:
    """`count` evenly spaced ticks over epoch seconds [lo, hi], labelled as dates and times."""
    if hi <= lo:
        return [(lo, datetime.fromtimestamp(lo, UTC).strftime("%Y-%m-%d %H:%M"))]
    spaced = [lo + (hi - lo) * i / (count - 1) for i in range(count)]
    same_day = datetime.fromtimestamp(lo, UTC).date() == datetime.fromtimestamp(hi, UTC).date()
    pattern = "%H:%M:%S" if same_day else "%m-%d %H:%M"
    return [(t, datetime.fromtimestamp(t, UTC).strftime(pattern)) for t in spaced]


def _panel(svg: Svg, box: Box, x: Scale, axis: XAxis, panel: Panel) -> None:
    values = [p[1] for s in panel.series for p in s.points]
    values += [m.y for m in panel.markers if m.y is not None]
    y = Scale(0, nice_max(max(values, default=1.0)), box.bottom, box.top)
    axes(svg, box, x, y, xs=[], ys=linear_ticks(y.lo, y.hi, 4))
    for value, label in axis.ticks:
        svg.line(x(value), box.top, x(value), box.bottom, "grid")
        svg.text(x(value), box.bottom + 16, label, "tick", "middle")
    axis_titles(svg, box, axis.title, panel.y_title)
    for marker in panel.markers:
        _marker(svg, box, x, y, marker)
    for series in panel.series:
        _series(svg, x, y, series)
    _legend(svg, box, panel.series)


def _marker(svg: Svg, box: Box, x: Scale, y: Scale, marker: Marker) -> None:
    if marker.x is not None and x.lo <= marker.x <= x.hi:
        px = x(marker.x)
        svg.line(px, box.top, px, box.bottom, marker.cls)
        svg.text(px + 4, box.top + 12, marker.label, f"{marker.cls}-label")
    if marker.y is not None:
        py = y(marker.y)
        svg.line(box.left, py, box.right, py, marker.cls)
        svg.text(box.right - 4, py - 4, marker.label, f"{marker.cls}-label", "end")


def _series(svg: Svg, x: Scale, y: Scale, series: Series) -> None:
    pixels = [(x(px), y(py)) for px, py in series.points]
    if len(pixels) > 1:
        svg.polyline(pixels, f"series-{series.cls}")
    off = list(series.off) + [False] * (len(pixels) - len(series.off))
    for (px, py), (vx, vy), grey in zip(pixels, series.points, off, strict=True):
        label = f"{series.name}: {fmt.number(vy, 4)} at {fmt.number(vx, 4)}"
        svg.point(px, py, "dot-off" if grey else f"dot-{series.cls}", label, r=3.5)


def _legend(svg: Svg, box: Box, series: Sequence[Series]) -> None:
    left = box.left + 8
    for item in series:
        svg.add(
            f'<rect x="{num(left)}" y="{num(box.top - 16)}" width="12" height="4" '
            f'class="dot-{item.cls}"/>'
        )
        svg.text(left + 16, box.top - 10, item.name, "label")
        left += 28 + 7 * len(item.name)


def stacked_svg(title: str, axis: XAxis, panels: Sequence[Panel]) -> str:
    """Panels stacked vertically over the shared x axis, as an SVG document."""
    height = _TOP + len(panels) * (_PANEL_HEIGHT + _GAP)
    svg = Svg(title, height=height)
    x = Scale(axis.lo, axis.hi, 64, WIDTH - 16, log=axis.log)
    for index, panel in enumerate(panels):
        top = _TOP + index * (_PANEL_HEIGHT + _GAP)
        box = Box(left=64, top=top, right=WIDTH - 16, bottom=top + _PANEL_HEIGHT)
        _panel(svg, box, x, axis, panel)
    return svg.render()
