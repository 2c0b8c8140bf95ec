"""The roofline chart as server-side SVG: log-log axes, the compute roof of the work's dtype and
unit, the bandwidth slope (and the last-level cache's, where the work's bytes fit in it and
its bandwidth is catalogued: docs/formulas.md#the-cache-roof), the ridge point, the
workload's expected point and the measured one, with labels kept apart and a legend.
Overhead- and communication-bound work also shows what bounds it: the fixed-cost floor, or
the network time.

A time t puts a point at achieved FLOP/s = FLOPs / t, at the workload's arithmetic intensity;
a time the work cannot go below (a floor) is the ceiling FLOPs / t over every intensity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import pairwise

from app import formatting as fmt
from app.engine import Chip, Floor, ridge_intensity
from app.engine.cache import MIB
from app.schemas.answers import Check, ExpectedTime
from app.web.labels import Key, Label, draw_labels, legend, overlap, place_labels
from app.web.svg import (
    HEIGHT,
    WIDTH,
    Box,
    Scale,
    Svg,
    axes,
    axis_titles,
    decade_ticks,
    decades,
)

BOX = Box(left=64, top=16, right=WIDTH - 16, bottom=HEIGHT - 48)


def _box(width: int) -> Box:
    """The plot area of a chart `width` wide: BOX, or a phone's (NARROW) nearly square."""
    box = replace(BOX, right=width - 16)  # room for the last tick's label on its right
    return box if width >= WIDTH else replace(box, bottom=width - 24)


@dataclass(frozen=True, slots=True)
class Roof:
    """The compute roof the work runs under: its label (dtype and unit) and peak FLOP/s."""

    label: str
    flops_per_s: float


@dataclass(frozen=True, slots=True)
class TimeFloor:
    """A time the work cannot go below, beside the roofline: what bounds it, in words (the
    legend's too), and the time in seconds."""

    label: str
    time_s: float


@dataclass(frozen=True, slots=True)
class CacheCeiling:
    """The last-level cache's bandwidth roof, drawn where the work's bytes fit in the cache:
    its name and size (bytes), and its bandwidth in bytes/s."""

    name: str
    size_bytes: float
    bandwidth: float


@dataclass(frozen=True, slots=True)
class RooflineData:
    """What the chart shows. Times in seconds, bandwidth in bytes/s."""

    chip_name: str
    bandwidth: float
    roof: Roof
    flops: float
    bytes: float
    expected_time_s: float
    measured_time_s: float | None = None
    realistic_time_s: float | None = None
    realistic_range_s: tuple[float, float] | None = None
    floor: TimeFloor | None = None
    cache: CacheCeiling | None = None

    @property
    def intensity(self) -> float:
        """FLOPs per byte of the workload."""
        return self.flops / self.bytes


def data_of(answer: ExpectedTime, chip: Chip, measured_time_s: float | None) -> RooflineData:
    """The chart data of an /expected-time (or /check) answer on `chip`: only the roof of the
    dtype and unit the work runs on (the chip's other peaks do not bound it)."""
    return RooflineData(
        chip_name=chip.name,
        bandwidth=answer.memory_bandwidth,
        roof=Roof(f"{answer.peak.dtype} {answer.peak.unit}", answer.peak.flops_per_s),
        flops=answer.flops,
        bytes=answer.bytes,
        expected_time_s=answer.expected_time_s,
        # a time stored before times were bounded may give a rate beyond a float: not drawn
        measured_time_s=measured_time_s
        if measured_time_s and math.isfinite(answer.flops / measured_time_s)
        else None,
        realistic_time_s=answer.realistic_time_s,
        realistic_range_s=None
        if answer.realistic_range_s is None
        else (answer.realistic_range_s[0], answer.realistic_range_s[1]),
        floor=_floor_of(answer),
        cache=_cache_of(answer, chip),
    )


def _cache_of(answer: ExpectedTime, chip: Chip) -> CacheCeiling | None:
    """The chip's last-level cache as a roof, where the work's bytes (its working set, as
    app/engine/cache.py bounds it) fit in it and the catalog has its bandwidth."""
    size, bandwidth = chip.cache_bytes, chip.cache_bandwidth
    if size is None or bandwidth is None or answer.bytes > size:
        return None
    return CacheCeiling(chip.cache_name, size, bandwidth)


def _floor_of(answer: ExpectedTime) -> TimeFloor | None:
    """What bounds overhead- and communication-bound work, as a time: the least time its fixed
    costs allow (the floor a check judged it against; else the low end of the realistic range,
    which for overhead-bound work is that floor), or the time its collectives take."""
    if answer.bound == "overhead":
        judged = isinstance(answer, Check) and answer.judged_against == Floor.FIXED_COSTS
        low = answer.realistic_range_s[0] if answer.realistic_range_s else None
        time_s = answer.floor_time_s if isinstance(answer, Check) and judged else low
        return TimeFloor("fixed-cost floor", time_s) if time_s else None
    if answer.bound == "communication" and answer.communication_time_s > 0:
        return TimeFloor("network time", answer.communication_time_s)
    return None


def _scales(data: RooflineData, box: Box) -> tuple[Scale, Scale]:
    ridge = ridge_intensity(data.roof.flops_per_s, data.bandwidth)
    xs = [ridge] + ([data.intensity] if data.flops > 0 else [])
    if data.cache:
        xs.append(ridge_intensity(data.roof.flops_per_s, data.cache.bandwidth))
    x_lo, x_hi = decades(min(xs) / 10, max(xs) * 10)
    ys = [data.bandwidth * x_lo, data.roof.flops_per_s]
    if data.flops > 0:
        ys.append(data.flops / data.expected_time_s)
        if data.measured_time_s:
            ys.append(data.flops / data.measured_time_s)
        if data.realistic_range_s:
            ys.append(data.flops / data.realistic_range_s[1])
        if data.floor:
            ys.append(data.flops / data.floor.time_s)
    y_lo, y_hi = decades(min(ys), max(ys) * 1.5)
    x = Scale(x_lo, x_hi, box.left, box.right, log=True)
    y = Scale(y_lo, y_hi, box.bottom, box.top, log=True)
    return x, y


def _roof(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> tuple[list[Label], list[Box]]:
    """The bandwidth slope up to the ridge and the roof from it, with their labels, and the
    roof's line as a box that no label may cross."""
    peak = data.roof.flops_per_s
    ridge = ridge_intensity(peak, data.bandwidth)
    start, end = (x(x.lo), y(data.bandwidth * x.lo)), (x(ridge), y(peak))
    svg.polyline([start, end], "slope")
    svg.line(x(ridge), y(peak), x(x.hi), y(peak), "roof-used")
    memory = Label(
        start[0] + 8, start[1] - 8, f"memory {fmt.rate(data.bandwidth, 'B/s')}", "label-used"
    )
    # right of the slope where it passes the label's top, the label's highest point (the
    # slope rises to the right, so it is further left everywhere lower): never across it
    top = memory.box().top
    if end[1] < top < start[1]:
        crossing = start[0] + (top - start[1]) * (end[0] - start[0]) / (end[1] - start[1])
        memory = replace(memory, x=max(memory.x, crossing + 6))
    roof = f"{data.roof.label} peak {fmt.rate(peak, 'FLOP/s')}"
    labels = [Label(x.end - 4, y(peak) - 6, roof, "label-used", "end"), memory]
    if data.cache is None:
        return labels, [_band(x(ridge), x.end, y(peak)), *_along(start, end)]
    cache = data.cache
    knee = ridge_intensity(peak, cache.bandwidth)  # where the cache's slope meets the roof
    cache_start, cache_end = (x(x.lo), y(cache.bandwidth * x.lo)), (x(knee), y(peak))
    svg.polyline([cache_start, cache_end], "cache-slope")
    text = (
        f"{cache.name} {fmt.number(cache.size_bytes / MIB)} MiB {fmt.rate(cache.bandwidth, 'B/s')}"
    )
    labels.append(Label(cache_start[0] + 8, cache_start[1] - 8, text, "cache-label"))
    boxes = [_band(x(min(ridge, knee)), x.end, y(peak)), *_along(start, end)]
    return labels, [*boxes, *_along(cache_start, cache_end)]


_STEP = 4.0  # px of height each box of a sloped line covers


def _along(start: tuple[float, float], end: tuple[float, float]) -> list[Box]:
    """A sloped line as boxes that no label may overlap: one for each _STEP px of its height,
    as wide as the line runs over it (and a little more, for its stroke)."""
    steps = max(1, math.ceil(abs(end[1] - start[1]) / _STEP))
    corners = [
        (start[0] + (end[0] - start[0]) * i / steps, start[1] + (end[1] - start[1]) * i / steps)
        for i in range(steps + 1)
    ]
    return [
        Box(min(ax, bx) - 1, min(ay, by), max(ax, bx) + 1, max(ay, by))
        for (ax, ay), (bx, by) in pairwise(corners)
    ]


def _band(left: float, right: float, at: float) -> Box:
    """A horizontal line's box, a little thicker than its stroke."""
    return Box(left, at - 2, right, at + 2)


def _floor(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> tuple[list[Label], list[Box]]:
    """The floor's ceiling (FLOPs / its time) across the plot, with its label."""
    if data.floor is None or data.flops <= 0:
        return [], []
    at = y(data.flops / data.floor.time_s)
    svg.line(x.start, at, x.end, at, "floor")
    text = f"{data.floor.label} {fmt.seconds(data.floor.time_s)}"
    return [Label(x.start + 6, at - 6, text, "floor-label")], [_band(x.start, x.end, at)]


Side = str  # where a point's label goes: "right", "left", "above" or "below" it


def _beside(
    x: Scale, at: tuple[float, float], text: str, sides: tuple[Side, ...], blocked: list[Box]
) -> Label:
    """A point's label, on the first of `sides` where it fits in the plot and covers no line
    or point (`blocked`); on the first where it fits when none is free (placed later)."""
    px, py = at
    candidates = {
        "right": Label(px + 9, py + 4, text),
        "left": Label(px - 9, py + 4, text, anchor="end"),
        "above": Label(px, py - 9, text, anchor="middle"),
        "below": Label(px, py + 18, text, anchor="middle"),
    }
    fitting = [
        candidates[side]
        for side in sides
        if x.start <= candidates[side].box().left and candidates[side].box().right <= x.end
    ]
    free = [c for c in fitting if not any(overlap(c.box(), b) for b in blocked)]
    return (free or fitting or [candidates[sides[0]]])[0]


_POINT = 5.0  # px, the radius of the chart's points (svg.point's)


def _points(
    svg: Svg, data: RooflineData, x: Scale, y: Scale, lines: list[Box]
) -> tuple[list[Label], list[Key]]:
    """The ridge, expected, realistic (with the published range) and measured points, their
    labels (each beside its point, off the `lines` and the points) and legend entries."""
    peak = data.roof.flops_per_s
    ridge = ridge_intensity(peak, data.bandwidth)
    label = f"ridge {fmt.number(ridge)} FLOP/B"
    svg.point(x(ridge), y(peak), "ridge", label)
    labels = [Label(x(ridge) - 10, y(peak) - 8, label, "label", "end")]
    keys = [Key("ridge point", "ridge", "dot")]
    if data.flops <= 0:
        svg.text(x.start + 10, y.start - 10, "no FLOPs: nothing to place on a log axis", "note")
        return labels, keys
    ai = data.intensity
    expected = data.flops / data.expected_time_s
    svg.line(x(ai), y(y.lo), x(ai), y(expected), "grid")
    svg.point(x(ai), y(expected), "expected", f"expected {fmt.rate(expected, 'FLOP/s')}")
    # each point's label and the sides it may go to, in order, once every point is drawn
    beside: list[tuple[tuple[float, float], str, tuple[Side, ...]]] = [
        ((x(ai), y(expected)), "expected", ("right", "left", "above"))
    ]
    keys.append(Key("expected (roofline time)", "expected", "dot"))
    if data.realistic_range_s and data.realistic_time_s:
        low, high = data.realistic_range_s
        realistic = data.flops / data.realistic_time_s
        svg.line(x(ai), y(data.flops / high), x(ai), y(data.flops / low), "published")
        label = f"published runs {fmt.rate(data.flops / high, 'FLOP/s')} to "
        label += fmt.rate(data.flops / low, "FLOP/s")
        svg.point(x(ai), y(realistic), "realistic", label, r=4)
        beside.append(((x(ai), y(realistic)), "realistic", ("left", "right", "below")))
        keys += [Key("realistic", "realistic", "dot"), Key("published runs", "published")]
    if data.measured_time_s:
        achieved = data.flops / data.measured_time_s
        share = data.expected_time_s / data.measured_time_s
        text = f"measured {fmt.rate(achieved, 'FLOP/s')} ({share:.0%} of roofline)"
        if Label(0, 0, text).width > (x.end - x.start) * 0.7:  # a phone's chart: the share
            text = f"measured ({share:.0%} of roofline)"
        svg.point(x(ai), y(achieved), "measured", f"measured {fmt.rate(achieved, 'FLOP/s')}")
        beside.insert(0, ((x(ai), y(achieved)), text, ("right", "left", "above", "below")))
        keys.append(Key("measured", "measured", "dot"))
    dots = [
        Box(px - _POINT, py - _POINT, px + _POINT, py + _POINT)
        for px, py in [(x(ridge), y(peak)), *(at for at, _, _ in beside)]
    ]
    points = [_beside(x, at, text, sides, lines + dots) for at, text, sides in beside]
    measured = 1 if data.measured_time_s else 0  # the measured point's label comes first
    return [*points[:measured], *labels, *points[measured:]], keys


def roofline_svg(data: RooflineData, width: int = WIDTH) -> str:
    """The roofline chart of `data` as an SVG document `width` wide (WIDTH, or a phone's
    NARROW), with a legend under the axes."""
    box = _box(width)
    x, y = _scales(data, box)
    svg = Svg(f"Roofline of {data.chip_name}", width=width)
    axes(svg, box, x, y, xs=decade_ticks(x.lo, x.hi), ys=decade_ticks(y.lo, y.hi))
    axis_titles(svg, box, "arithmetic intensity (FLOP/B)", "FLOP/s")
    roof_labels, lines = _roof(svg, data, x, y)
    floor_labels, floor_lines = _floor(svg, data, x, y)
    point_labels, point_keys = _points(svg, data, x, y, lines + floor_lines)
    # the labels stay inside the plot's frame (outside it are the ticks and axis titles), and
    # off the roof's, the slope's and the floor's lines, which would strike them through
    inside = [
        replace(a, x=a.x - box.left, y=a.y - box.top)
        for a in point_labels + roof_labels + floor_labels
    ]
    obstacles = [
        Box(b.left - box.left, b.top - box.top, b.right - box.left, b.bottom - box.top)
        for b in lines + floor_lines
    ]
    placed = place_labels(inside, box.right - box.left, box.bottom - box.top, obstacles)
    draw_labels(svg, [replace(a, x=a.x + box.left, y=a.y + box.top) for a in placed])
    keys = [
        Key("memory bandwidth", "slope"),
        *(
            [Key(f"{data.cache.name} bandwidth (bytes fit in it)", "cache-slope")]
            if data.cache
            else []
        ),
        Key(f"{data.roof.label} peak", "roof-used"),
        *([Key(data.floor.label, "floor")] if data.floor and data.flops > 0 else []),
        *point_keys,
    ]
    left = box.left if width >= WIDTH else 8
    svg.height = math.ceil(legend(svg, keys, left, box.bottom + 44, svg.width - 8) + 6)
    return svg.render()
