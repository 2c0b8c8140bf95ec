"""Stacked line-chart panels sharing one x axis: the batch-sweep and history charts.

Each panel has its own y axis, linear from 0 or logarithmic; the shared x axis may be
logarithmic. One legend under the panels names every series and marker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from app import formatting as fmt
from app.web.labels import (
    GLYPH_EM,
    LABEL_GAP,
    LABEL_SIZE,
    Key,
    Label,
    draw_labels,
    legend,
    place_labels,
)
from app.web.svg import (
    WIDTH,
    Box,
    Scale,
    Svg,
    axes,
    axis_titles,
    linear_ticks,
    nice_max,
    num,
)

_PANEL_HEIGHT = 170
_GAP = 64
_TOP = 16
_RING = 7  # px, the radius of a ring around a marked point (a dot's is 3.5)


@dataclass(frozen=True, slots=True)
class Series:
    """A named line with dots; `off` marks points drawn grey (e.g. batches that do not fit)."""

    name: str
    points: Sequence[tuple[float, float]]
    cls: str = "a"
    off: Sequence[bool] = ()
    line: bool = True  # False: marks alone (rings around other series' points), no line


@dataclass(frozen=True, slots=True)
class Band:
    """A baseline window drawn as Bencher draws its thresholds: from x0 to x1, the window's
    median as a line and the band between it and the threshold (`lo` to `hi`) shaded."""

    label: str
    x0: float
    x1: float
    median: float
    lo: float
    hi: float


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
    log: bool = False  # a log y axis over whole powers of two (values > 0)
    bands: Sequence[Band] = field(default_factory=tuple)


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


def _time_label(moment: datetime, pattern: str, milliseconds: bool) -> str:
    text = moment.strftime(pattern)
    return f"{text}.{moment.microsecond // 1000:03d}" if milliseconds else text


def time_ticks(lo: float, hi: float, count: int = 4) -> list[tuple[float, str]]:
    """`count` evenly spaced ticks over epoch seconds [lo, hi], labelled as dates and times
    only as finely as tells them apart: seconds, then milliseconds for runs stored within a
    second or two of each other; ticks that would still read alike (runs a few milliseconds
    apart) are left out but the first."""
    if hi <= lo:
        return [(lo, datetime.fromtimestamp(lo, UTC).strftime("%Y-%m-%d %H:%M"))]
    spaced = [lo + (hi - lo) * i / (count - 1) for i in range(count)]
    moments = [datetime.fromtimestamp(t, UTC) for t in spaced]
    same_day = moments[0].date() == moments[-1].date()
    resolutions = (
        (("%H:%M:%S", False), ("%H:%M:%S", True))
        if same_day
        else (("%m-%d %H:%M", False), ("%m-%d %H:%M:%S", False), ("%m-%d %H:%M:%S", True))
    )
    for pattern, milliseconds in resolutions:
        labels = [_time_label(m, pattern, milliseconds) for m in moments]
        if len(set(labels)) == len(labels):
            break
    ticks: dict[str, float] = {}
    for t, label in zip(spaced, labels, strict=True):
        ticks.setdefault(label, t)
    return [(t, label) for label, t in ticks.items()]


def _y_scale(box: Box, panel: Panel) -> tuple[Scale, list[float]]:
    """The panel's y scale and ticks: from 0 to a round maximum, or over powers of two."""
    values = [p[1] for s in panel.series for p in s.points]
    values += [m.y for m in panel.markers if m.y is not None]
    values += [v for b in panel.bands for v in (b.lo, b.hi)]
    if panel.log:
        positive = [v for v in values if v > 0] or [1.0]
        lo = 2.0 ** math.floor(math.log2(min(positive)))
        hi = max(2.0 ** math.ceil(math.log2(max(positive))), 2 * lo)
        return Scale(lo, hi, box.bottom, box.top, log=True), [
            t for t, _ in power_of_two_ticks(lo, hi, most=6)
        ]
    y = Scale(0, nice_max(max(values, default=1.0)), box.bottom, box.top)
    return y, linear_ticks(y.lo, y.hi, 4)


def _thinned(ticks: Sequence[tuple[float, str]], room: float) -> Sequence[tuple[float, str]]:
    """Every n-th tick, n as small as keeps their labels (estimated widths, a gap of two
    glyphs) apart over `room` pixels: a phone's chart has room for fewer."""
    if not ticks:
        return ticks
    widest = max(len(label) for _, label in ticks) + 2
    fit = max(1, int(room / (widest * LABEL_SIZE * GLYPH_EM)))
    return ticks[:: math.ceil(len(ticks) / fit)]


def _panel(
    svg: Svg, box: Box, x: Scale, axis: XAxis, panel: Panel
) -> tuple[list[Label], list[Box]]:
    """Draw one panel; returns its marker labels (placed with the others) and the boxes of
    its rings, which a label must leave readable."""
    y, y_ticks = _y_scale(box, panel)
    axes(svg, box, x, y, xs=[], ys=y_ticks)
    for value, label in _thinned(axis.ticks, box.right - box.left):
        svg.line(x(value), box.top, x(value), box.bottom, "grid")
        svg.text(x(value), box.bottom + 16, label, "tick", "middle")
    axis_titles(svg, box, axis.title, panel.y_title)
    for band in panel.bands:
        _band(svg, x, y, band)
    verticals = [x(m.x) for m in panel.markers if m.x is not None and x.lo <= m.x <= x.hi]
    ringed = {vx for series in panel.series if not series.line for vx, _ in series.points}
    labels = [
        _marker(svg, box, x, y, marker, verticals=verticals, ringed=marker.x in ringed)
        for marker in panel.markers
    ]
    for series in panel.series:
        _series(svg, x, y, series)
    rings = [
        Box(px - _RING, py - _RING, px + _RING, py + _RING)
        for series in panel.series
        if not series.line
        for px, py in ((x(vx), y(vy)) for vx, vy in series.points)
    ]
    return [label for label in labels if label is not None], rings


def _marker(
    svg: Svg,
    box: Box,
    x: Scale,
    y: Scale,
    marker: Marker,
    *,
    verticals: Sequence[float],
    ringed: bool,
) -> Label | None:
    """Draw a marker's line; returns its label: beside a vertical line, never across it (and
    clear of the ring a point on it wears, when `ringed`); at the right end of a horizontal
    one, left of any vertical line (`verticals`) it would cross."""
    if marker.x is not None and x.lo <= marker.x <= x.hi:
        px = x(marker.x)
        svg.line(px, box.top, px, box.bottom, marker.cls)
        gap = _RING + LABEL_GAP if ringed else 4
        label = Label(px + gap, box.top + 12, marker.label, f"{marker.cls}-label")
        if label.box().right > box.right:  # beside its line on the left, never across it
            return replace(label, x=px - gap, anchor="end")
        return label
    if marker.y is not None:
        py = y(marker.y)
        svg.line(box.left, py, box.right, py, marker.cls)
        label = Label(box.right - 4, py - 4, marker.label, f"{marker.cls}-label", "end")
        for px in sorted(verticals, reverse=True):
            if label.box().left - 4 <= px <= label.box().right + 4:
                label = replace(label, x=px - 4)
        return label
    return None


def _band(svg: Svg, x: Scale, y: Scale, band: Band) -> None:
    left, right = x(band.x0), x(band.x1)
    top, bottom = y(band.hi), y(band.lo)
    svg.add(
        f'<rect x="{num(left)}" y="{num(top)}" width="{num(max(right - left, 1))}" '
        f'height="{num(max(bottom - top, 1))}" class="band"/>'
    )
    svg.line(left, y(band.median), right, y(band.median), "band-median")


def _series(svg: Svg, x: Scale, y: Scale, series: Series) -> None:
    pixels = [(x(px), y(py)) for px, py in series.points]
    if not series.line:  # rings, drawn over the points they mark
        for (px, py), (vx, _) in zip(pixels, series.points, strict=True):
            svg.point(px, py, f"ring-{series.cls}", f"{series.name}: {fmt.number(vx, 4)}", r=_RING)
        return
    if len(pixels) > 1:
        svg.polyline(pixels, f"series-{series.cls}")
    off = list(series.off) + [False] * (len(pixels) - len(series.off))
    for (px, py), (vx, vy), grey in zip(pixels, series.points, off, strict=True):
        label = f"{series.name}: {fmt.number(vy, 4)} at {fmt.number(vx, 4)}"
        svg.point(px, py, "dot-off" if grey else f"dot-{series.cls}", label, r=3.5)


def _keys(panels: Sequence[Panel]) -> list[Key]:
    """A legend entry for every series and marker (once each), and for grey points."""
    keys: dict[str, Key] = {}
    for panel in panels:
        for band in panel.bands:
            keys.setdefault(band.label, Key(band.label, "band", "bar"))
        for series in panel.series:
            key = (
                Key(series.name, f"series-{series.cls}")
                if series.line
                else Key(series.name, f"ring-{series.cls}", "dot")
            )
            keys.setdefault(series.name, key)
        for marker in panel.markers:
            keys.setdefault(marker.label, Key(marker.label, marker.cls))
    if any(any(s.off) for p in panels for s in p.series):
        keys["off"] = Key("does not fit in memory", "dot-off", "dot")
    return list(keys.values())


def stacked_svg(title: str, axis: XAxis, panels: Sequence[Panel], width: int = WIDTH) -> str:
    """Panels stacked vertically over the shared x axis, with one legend under them, as an
    SVG document `width` wide; the marker labels are kept apart and inside their panels."""
    height = _TOP + len(panels) * (_PANEL_HEIGHT + _GAP)
    svg = Svg(title, width=width, height=height)
    x = Scale(axis.lo, axis.hi, 64, width - 16, log=axis.log)
    for index, panel in enumerate(panels):
        top = _TOP + index * (_PANEL_HEIGHT + _GAP)
        box = Box(left=64, top=top, right=width - 16, bottom=top + _PANEL_HEIGHT)
        labels, rings = _panel(svg, box, x, axis, panel)
        inside = [replace(a, x=a.x - box.left, y=a.y - box.top) for a in labels]
        around = [
            Box(r.left - box.left, r.top - box.top, r.right - box.left, r.bottom - box.top)
            for r in rings
        ]
        placed = place_labels(inside, box.right - box.left, box.bottom - box.top, around)
        draw_labels(svg, [replace(a, x=a.x + box.left, y=a.y + box.top) for a in placed])
    left = 64 if width >= WIDTH else 8
    bottom = legend(svg, _keys(panels), left, height - _GAP + 44, width - 8)
    svg.height = math.ceil(bottom + 6)
    return svg.render()
