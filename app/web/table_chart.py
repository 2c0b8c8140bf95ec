"""A benchmark table's roofline: the chip's memory slope and every roof the table's rows run
under (the roofline chart's own drawing, app/web/charts.py), and each judged row as one small
point at its arithmetic intensity and achieved FLOP/s, coloured by its verdict.

A table may hold 10,000 rows, so a point is a bare circle in its verdict's group; only the
rows that lost the most time carry a tooltip (<title>) and a label, their rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from app import formatting as fmt
from app.engine import Verdict, ridge_intensity
from app.schemas.table_bodies import TableRow
from app.web.charts import Roof, RooflineData, _box, _roof
from app.web.labels import Key, Label, draw_labels, legend, place_labels
from app.web.svg import WIDTH, Box, Scale, Svg, axes, axis_titles, decade_ticks, decades

NAMED = 5  # the rows that lost the most time, named on the chart (the summary's worst)


def drawn(rows: Sequence[TableRow]) -> list[TableRow]:
    """The rows the chart places: judged, with FLOPs (a log axis has no place for none)."""
    return [r for r in rows if r.peak is not None and r.flops and r.achieved_flops_per_s]


def _roofs(rows: Sequence[TableRow]) -> list[Roof]:
    """Each roof the rows run under, highest first."""
    peaks = {(r.peak.dtype, r.peak.unit): r.peak.flops_per_s for r in rows if r.peak}
    return sorted(
        (Roof(f"{dtype} {unit}", peak) for (dtype, unit), peak in peaks.items()),
        key=lambda roof: -roof.flops_per_s,
    )


def _scales(
    rows: Sequence[TableRow], roofs: Sequence[Roof], bandwidth: float, box: Box
) -> tuple[Scale, Scale]:
    ridges = [ridge_intensity(roof.flops_per_s, bandwidth) for roof in roofs]
    xs = ridges + [r.arithmetic_intensity or 0.0 for r in rows]
    x_lo, x_hi = decades(min(xs) / 10, max(xs) * 10)
    ys = [bandwidth * x_lo, *(roof.flops_per_s for roof in roofs)]
    ys += [r.achieved_flops_per_s or 0.0 for r in rows]
    y_lo, y_hi = decades(min(ys), max(ys) * 1.5)
    return (
        Scale(x_lo, x_hi, box.left, box.right, log=True),
        Scale(y_lo, y_hi, box.bottom, box.top, log=True),
    )


def table_svg(
    rows: Sequence[TableRow], chip_name: str, bandwidth: float, width: int = WIDTH
) -> str:
    """The roofline chart of a judged table's `rows` on a chip of memory `bandwidth` (bytes/s),
    `width` wide (WIDTH, or a phone's NARROW)."""
    placed = drawn(rows)
    roofs = _roofs(placed)
    box = _box(width)
    svg = Svg(f"Roofline of {chip_name}: {len(placed):,} rows", width=width)
    if not roofs:
        svg.height = math.ceil(box.bottom)
        svg.text(box.left, box.top + 20, "no judged row with FLOPs to place", "note")
        return svg.render()
    x, y = _scales(placed, roofs, bandwidth, box)
    axes(svg, box, x, y, xs=decade_ticks(x.lo, x.hi), ys=decade_ticks(y.lo, y.hi))
    axis_titles(svg, box, "arithmetic intensity (FLOP/B)", "FLOP/s")
    labels: list[Label] = []
    lines: list[Box] = []
    for i, roof in enumerate(roofs):
        data = RooflineData(chip_name, bandwidth, roof, 0.0, 1.0, 1.0)
        roof_labels, roof_lines = _roof(svg, data, x, y)
        # the memory slope's label once: each roof's slope is the same line
        labels += roof_labels if i == 0 else roof_labels[:1]
        lines += roof_lines
    _points(svg, placed, x, y)
    worst = sorted((r for r in placed if r.rank is not None), key=lambda r: r.rank or 0)
    for (cx, cy), named in _by_point(worst[:NAMED], x, y).items():
        # named rows at one place (one shape timed again) share a ring and a label: "#1, #3"
        tips = "\n".join(_tooltip(row) for row in named)
        svg.point(cx, cy, f"pt-{named[0].verdict} named", tips, r=4)
        labels.append(Label(cx + 7, cy + 4, ", ".join(f"#{row.rank}" for row in named)))
    _draw_placed(svg, box, labels, lines)
    verdicts = {row.verdict for row in placed}
    keys = [
        Key("memory bandwidth", "slope"),
        Key("peak of a dtype", "roof-used"),
        *(Key(_words(v), f"pt-{v}", "dot") for v in Verdict if v in verdicts),
    ]
    left = box.left if width >= WIDTH else 8
    svg.height = math.ceil(legend(svg, keys, left, box.bottom + 44, svg.width - 8) + 6)
    return svg.render()


def _points(svg: Svg, rows: Sequence[TableRow], x: Scale, y: Scale) -> None:
    """Each row as a bare circle, in one group per verdict (which colours it); rows at the
    same place to a tenth of a pixel (a shape measured again, or by several implementations
    alike) share one circle: a second would show nothing more."""
    groups: dict[str, dict[str, None]] = {}
    for row in rows:
        cx, cy = x(row.arithmetic_intensity or 0.0), y(row.achieved_flops_per_s or 0.0)
        at = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.5"/>'
        groups.setdefault(str(row.verdict), {})[at] = None
    for verdict, circles in groups.items():
        svg.add(f'<g class="pt-{verdict}">{"".join(circles)}</g>')


def _by_point(
    rows: Sequence[TableRow], x: Scale, y: Scale
) -> dict[tuple[float, float], list[TableRow]]:
    """`rows` by where they are drawn, to a tenth of a pixel (as `_points` shares circles)."""
    at: dict[tuple[float, float], list[TableRow]] = {}
    for row in rows:
        cx, cy = x(row.arithmetic_intensity or 0.0), y(row.achieved_flops_per_s or 0.0)
        at.setdefault((round(cx, 1), round(cy, 1)), []).append(row)
    return at


def _words(verdict: object) -> str:
    return str(verdict).replace("_", " ")


def _tooltip(row: TableRow) -> str:
    name = f"row {row.row}" + (f" {row.label}" if row.label else "")
    return (
        f"#{row.rank} {name}: {row.efficiency or 0.0:.1%} of the roofline, "
        f"{fmt.seconds(row.time_lost_s or 0.0)} lost, {_words(row.verdict)}"
    )


def _draw_placed(svg: Svg, box: Box, labels: list[Label], lines: list[Box]) -> None:
    """The labels placed inside the plot's frame, clear of one another and of the roofs."""
    inside = [replace(a, x=a.x - box.left, y=a.y - box.top) for a in labels]
    obstacles = [
        Box(b.left - box.left, b.top - box.top, b.right - box.left, b.bottom - box.top)
        for b in lines
    ]
    placed = place_labels(inside, box.right - box.left, box.bottom - box.top, obstacles)
    draw_labels(svg, [replace(a, x=a.x + box.left, y=a.y + box.top) for a in placed])
