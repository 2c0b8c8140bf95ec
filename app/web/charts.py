"""The roofline chart as server-side SVG: log-log axes, the compute roof of the work's dtype and
unit, the bandwidth slope, the ridge point, the workload's expected point and the measured one,
with labels kept apart and a legend.

A time t puts a point at achieved FLOP/s = FLOPs / t, at the workload's arithmetic intensity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from app import formatting as fmt
from app.engine import Chip, ridge_intensity
from app.schemas.answers import ExpectedTime
from app.web.labels import Key, Label, draw_labels, legend, place_labels
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


@dataclass(frozen=True, slots=True)
class Roof:
    """The compute roof the work runs under: its label (dtype and unit) and peak FLOP/s."""

    label: str
    flops_per_s: float


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
    )


def _scales(data: RooflineData) -> tuple[Scale, Scale]:
    ridge = ridge_intensity(data.roof.flops_per_s, data.bandwidth)
    xs = [ridge] + ([data.intensity] if data.flops > 0 else [])
    x_lo, x_hi = decades(min(xs) / 10, max(xs) * 10)
    ys = [data.bandwidth * x_lo, data.roof.flops_per_s]
    if data.flops > 0:
        ys.append(data.flops / data.expected_time_s)
        if data.measured_time_s:
            ys.append(data.flops / data.measured_time_s)
        if data.realistic_range_s:
            ys.append(data.flops / data.realistic_range_s[1])
    y_lo, y_hi = decades(min(ys), max(ys) * 1.5)
    x = Scale(x_lo, x_hi, BOX.left, BOX.right, log=True)
    y = Scale(y_lo, y_hi, BOX.bottom, BOX.top, log=True)
    return x, y


def _roof(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> list[Label]:
    """The bandwidth slope up to the ridge and the roof from it, with their labels."""
    peak = data.roof.flops_per_s
    ridge = ridge_intensity(peak, data.bandwidth)
    svg.polyline([(x(x.lo), y(data.bandwidth * x.lo)), (x(ridge), y(peak))], "slope")
    svg.line(x(ridge), y(peak), x(x.hi), y(peak), "roof-used")
    memory = f"memory {fmt.rate(data.bandwidth, 'B/s')}"
    roof = f"{data.roof.label} peak {fmt.rate(peak, 'FLOP/s')}"
    return [
        Label(BOX.right - 4, y(peak) - 5, roof, "label-used", "end"),
        Label(x(x.lo) + 8, y(data.bandwidth * x.lo) - 8, memory, "label-used"),
    ]


def _points(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> tuple[list[Label], list[Key]]:
    """The ridge, expected, realistic (with the published range) and measured points, their
    labels and their legend entries."""
    peak = data.roof.flops_per_s
    ridge = ridge_intensity(peak, data.bandwidth)
    label = f"ridge {fmt.number(ridge)} FLOP/B"
    svg.point(x(ridge), y(peak), "ridge", label)
    labels = [Label(x(ridge) - 10, y(peak) - 8, label, "label", "end")]
    keys = [Key("ridge point", "ridge", "dot")]
    if data.flops <= 0:
        svg.text(BOX.left + 10, BOX.bottom - 10, "no FLOPs: nothing to place on a log axis", "note")
        return labels, keys
    ai = data.intensity
    expected = data.flops / data.expected_time_s
    svg.line(x(ai), y(y.lo), x(ai), y(expected), "grid")
    svg.point(x(ai), y(expected), "expected", f"expected {fmt.rate(expected, 'FLOP/s')}")
    labels.append(Label(x(ai) + 9, y(expected) + 4, "expected"))
    keys.append(Key("expected (roofline time)", "expected", "dot"))
    if data.realistic_range_s and data.realistic_time_s:
        low, high = data.realistic_range_s
        realistic = data.flops / data.realistic_time_s
        svg.line(x(ai), y(data.flops / high), x(ai), y(data.flops / low), "published")
        label = f"published runs {fmt.rate(data.flops / high, 'FLOP/s')} to "
        label += fmt.rate(data.flops / low, "FLOP/s")
        svg.point(x(ai), y(realistic), "realistic", label, r=4)
        labels.append(Label(x(ai) - 9, y(realistic) + 4, "realistic", "label", "end"))
        keys += [Key("realistic", "realistic", "dot"), Key("published runs", "published")]
    if data.measured_time_s:
        achieved = data.flops / data.measured_time_s
        share = data.expected_time_s / data.measured_time_s
        text = f"measured {fmt.rate(achieved, 'FLOP/s')} ({share:.0%} of roofline)"
        svg.point(x(ai), y(achieved), "measured", f"measured {fmt.rate(achieved, 'FLOP/s')}")
        labels.insert(0, Label(x(ai) + 9, y(achieved) + 4, text))
        keys.append(Key("measured", "measured", "dot"))
    return labels, keys


def roofline_svg(data: RooflineData) -> str:
    """The roofline chart of `data` as an SVG document, with a legend under the axes."""
    x, y = _scales(data)
    svg = Svg(f"Roofline of {data.chip_name}")
    axes(svg, BOX, x, y, xs=decade_ticks(x.lo, x.hi), ys=decade_ticks(y.lo, y.hi))
    axis_titles(svg, BOX, "arithmetic intensity (FLOP/B)", "FLOP/s")
    roof_labels = _roof(svg, data, x, y)
    point_labels, point_keys = _points(svg, data, x, y)
    # the labels stay inside the plot's frame: outside it are the ticks and axis titles
    inside = [replace(a, x=a.x - BOX.left, y=a.y - BOX.top) for a in point_labels + roof_labels]
    placed = place_labels(inside, BOX.right - BOX.left, BOX.bottom - BOX.top)
    draw_labels(svg, [replace(a, x=a.x + BOX.left, y=a.y + BOX.top) for a in placed])
    keys = [
        Key("memory bandwidth", "slope"),
        Key(f"{data.roof.label} peak", "roof-used"),
        *point_keys,
    ]
    svg.height = math.ceil(legend(svg, keys, BOX.left, HEIGHT - 4, svg.width - 8) + 6)
    return svg.render()
