"""The roofline chart as server-side SVG: log-log axes, compute roofs per dtype, the bandwidth
slope, the ridge point, the workload's expected point and the measured one.

A time t puts a point at achieved FLOP/s = FLOPs / t, at the workload's arithmetic intensity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app import formatting as fmt
from app.engine import Chip, Unit, ridge_intensity
from app.schemas.answers import ExpectedTime
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
_LABEL_GAP = 13  # pixels between two roof labels


@dataclass(frozen=True, slots=True)
class Roof:
    """A compute roof: its label (dtypes and unit) and peak FLOP/s."""

    label: str
    flops_per_s: float
    used: bool = False


@dataclass(frozen=True, slots=True)
class RooflineData:
    """What the chart shows. Times in seconds, bandwidth in bytes/s."""

    chip_name: str
    bandwidth: float
    roofs: tuple[Roof, ...]
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

    @property
    def used(self) -> Roof:
        """The roof the workload runs under."""
        return next((r for r in self.roofs if r.used), max(self.roofs, key=lambda r: r.flops_per_s))


def roofs_of(chip: Chip, used_dtype: str, used_unit: str, used_peak: float) -> tuple[Roof, ...]:
    """The chip's roofs, one per distinct peak of each unit (dtypes sharing a peak share a roof);
    the roof the workload uses is marked, and added if the chip does not list it."""
    roofs: list[Roof] = []
    for unit, peaks in ((Unit.MATRIX, chip.matrix_peaks), (Unit.VECTOR, chip.vector_peaks)):
        by_peak: dict[float, list[str]] = {}
        for dtype, peak in peaks.items():
            by_peak.setdefault(peak, []).append(str(dtype))
        for peak, dtypes in by_peak.items():
            used = unit == used_unit and used_dtype in dtypes and peak == used_peak
            roofs.append(Roof(f"{'/'.join(dtypes)} {unit}", peak, used))
    if not any(r.used for r in roofs):
        roofs.append(Roof(f"{used_dtype} {used_unit}", used_peak, True))
    return tuple(roofs)


def data_of(answer: ExpectedTime, chip: Chip, measured_time_s: float | None) -> RooflineData:
    """The chart data of an /expected-time (or /check) answer on `chip`."""
    return RooflineData(
        chip_name=chip.name,
        bandwidth=answer.memory_bandwidth,
        roofs=roofs_of(chip, answer.peak.dtype, answer.peak.unit, answer.peak.flops_per_s),
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
    ridges = [ridge_intensity(r.flops_per_s, data.bandwidth) for r in data.roofs]
    xs = ridges + ([data.intensity] if data.flops > 0 else [])
    x_lo, x_hi = decades(min(xs) / 10, max(xs) * 10)
    ys = [data.bandwidth * x_lo, *(r.flops_per_s for r in data.roofs)]
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


def _roofs(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> None:
    top = max(data.roofs, key=lambda r: r.flops_per_s)
    svg.polyline(
        [
            (x(x.lo), y(data.bandwidth * x.lo)),
            (x(top.flops_per_s / data.bandwidth), y(top.flops_per_s)),
        ],
        "slope",
    )
    svg.text(
        x(x.lo) + 8,
        y(data.bandwidth * x.lo) - 8,
        f"memory {fmt.rate(data.bandwidth, 'B/s')}",
        "label-used",
    )
    last_label = -1e9
    for roof in sorted(data.roofs, key=lambda r: -r.flops_per_s):
        ridge = ridge_intensity(roof.flops_per_s, data.bandwidth)
        py = y(roof.flops_per_s)
        svg.line(x(ridge), py, x(x.hi), py, "roof-used" if roof.used else "roof")
        label_y = max(py - 4, last_label + _LABEL_GAP)
        last_label = label_y
        svg.text(
            BOX.right - 4,
            label_y,
            f"{roof.label} {fmt.rate(roof.flops_per_s, 'FLOP/s')}",
            "label-used" if roof.used else "label",
            "end",
        )


def _points(svg: Svg, data: RooflineData, x: Scale, y: Scale) -> None:
    used = data.used
    ridge = ridge_intensity(used.flops_per_s, data.bandwidth)
    label = f"ridge {fmt.number(ridge)} FLOP/B"
    svg.point(x(ridge), y(used.flops_per_s), "ridge", label)
    svg.text(x(ridge) - 10, y(used.flops_per_s) - 8, label, "label", "end")
    if data.flops <= 0:
        svg.text(BOX.left + 10, BOX.bottom - 10, "no FLOPs: nothing to place on a log axis", "note")
        return
    ai = data.intensity
    expected = data.flops / data.expected_time_s
    svg.line(x(ai), y(y.lo), x(ai), y(expected), "grid")
    svg.point(x(ai), y(expected), "expected", f"expected {fmt.rate(expected, 'FLOP/s')}")
    svg.text(x(ai) + 9, y(expected) + 4, "expected", "label")
    if data.realistic_range_s and data.realistic_time_s:
        low, high = data.realistic_range_s
        realistic = data.flops / data.realistic_time_s
        svg.line(x(ai), y(data.flops / high), x(ai), y(data.flops / low), "published")
        label = f"published runs {fmt.rate(data.flops / high, 'FLOP/s')} to "
        label += fmt.rate(data.flops / low, "FLOP/s")
        svg.point(x(ai), y(realistic), "realistic", label, r=4)
        svg.text(x(ai) - 9, y(realistic) + 4, "realistic", "label", "end")
    if data.measured_time_s:
        achieved = data.flops / data.measured_time_s
        share = data.expected_time_s / data.measured_time_s
        svg.point(x(ai), y(achieved), "measured", f"measured {fmt.rate(achieved, 'FLOP/s')}")
        svg.text(
            x(ai) + 9,
            y(achieved) + 4,
            f"measured {fmt.rate(achieved, 'FLOP/s')} ({share:.0%} of roofline)",
            "label",
        )


def roofline_svg(data: RooflineData) -> str:
    """The roofline chart of `data` as an SVG document."""
    x, y = _scales(data)
    svg = Svg(f"Roofline of {data.chip_name}")
    axes(svg, BOX, x, y, xs=decade_ticks(x.lo, x.hi), ys=decade_ticks(y.lo, y.hi))
    axis_titles(svg, BOX, "arithmetic intensity (FLOP/B)", "FLOP/s")
    _roofs(svg, data, x, y)
    _points(svg, data, x, y)
    return svg.render()
