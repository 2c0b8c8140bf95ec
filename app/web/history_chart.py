"""A workload's history chart: measured and roofline time, and the fraction of the roofline,
run by run (evenly spaced, the default: runs stored minutes apart after weeks of none no
longer bunch together) or over wall-clock time.

What it marks is read from the /workloads/{key} answer (app/services/history.py), never
recomputed here: the latest run, when the answer calls it a regression; each run whose
verdict is faster_than_roofline (a timing error); and the baseline window the latest run was
compared with, as its median and the band up to the threshold (down to it for the fraction
of the roofline, since less of it is worse)."""

from __future__ import annotations

from typing import Literal

from app import formatting as fmt
from app.engine import Verdict
from app.engine.units import ms_from_seconds
from app.schemas.measurement_bodies import HistoryPoint, WorkloadComparison
from app.web.panels import Band, Marker, Panel, Series, XAxis, stacked_svg, time_ticks
from app.web.svg import WIDTH

Axis = Literal["run", "time"]
AXES: tuple[Axis, ...] = ("run", "time")


def _x_axis(points: list[HistoryPoint], by: Axis) -> tuple[list[float], XAxis]:
    """Each run's x and the axis: its place in the history (1 = the oldest, each tick naming
    the stored run) or its time."""
    if by == "run":
        xs = [float(i) for i in range(1, len(points) + 1)]
        ticks = [(x, f"#{p.id}") for x, p in zip(xs, points, strict=True)]
        return xs, XAxis(0.5, len(points) + 0.5, "run (evenly spaced, oldest first)", ticks)
    xs = [p.created_at.timestamp() for p in points]
    lo, hi = min(xs), max(xs)
    if hi <= lo:
        lo, hi = lo - 60, hi + 60
    pad = (hi - lo) * 0.06  # keeps the first and last points and tick labels inside
    return xs, XAxis(lo - pad, hi + pad, "time (UTC)", time_ticks(lo, hi))


def _bands(c: WorkloadComparison, at: dict[int, float]) -> tuple[list[Band], list[Band]]:
    """The baseline window of the answer's comparison, from its oldest run to the latest run,
    for the time panel and the fraction panel (none without a window)."""
    window = c.comparison.window
    inside = [at[i] for i in window.run_ids if i in at] if window else []
    if window is None or not inside:
        return [], []
    x0, x1 = min(inside), at[c.latest.id]
    t = c.comparison.threshold
    median_ms = ms_from_seconds(window.median_time_s)
    label = f"window median and threshold ({fmt.percent(t)})"
    time = Band(label, x0, x1, median_ms, median_ms, median_ms * (1 + t))
    e = window.median_efficiency
    return [time], [Band(label, x0, x1, e, e * (1 - t), e)]


def history_svg(comparison: WorkloadComparison, width: int = WIDTH, by: Axis = "run") -> str:
    """Measured and roofline time (ms), and the fraction of the roofline, run by run (or over
    time), with the baseline window's band, the regressed run and timing errors marked."""
    c = comparison
    points = c.history
    xs, axis = _x_axis(points, by)
    at = {p.id: x for x, p in zip(xs, points, strict=True)}
    measured = [(x, ms_from_seconds(p.measured_time_s)) for x, p in zip(xs, points, strict=True)]
    expected = [(x, ms_from_seconds(p.expected_time_s)) for x, p in zip(xs, points, strict=True)]
    fraction = [(x, p.efficiency) for x, p in zip(xs, points, strict=True)]
    errors = [i for i, p in enumerate(points) if p.verdict == Verdict.FASTER_THAN_ROOFLINE]
    time_series = [Series("measured ms", measured, "b"), Series("roofline ms", expected, "c")]
    fraction_series = [Series("fraction of roofline", fraction, "a")]
    markers: list[Marker] = []
    if c.comparison.regression:
        change = c.comparison.change_vs_median
        said = f" {change:+.0%}" if change is not None else ""
        markers.append(Marker(f"regression #{c.latest.id}{said}", x=xs[-1], cls="regressed"))
        time_series.append(Series("regression", [measured[-1]], "regressed", line=False))
        fraction_series.append(Series("regression", [fraction[-1]], "regressed", line=False))
    if errors:
        name = "faster than roofline: a timing error"
        time_series.append(Series(name, [measured[i] for i in errors], "error", line=False))
        fraction_series.append(Series(name, [fraction[i] for i in errors], "error", line=False))
    time_bands, fraction_bands = _bands(c, at)
    fraction_markers = [*markers, Marker("roofline", y=1.0, cls="limit")]
    return stacked_svg(
        "History: time and fraction of roofline, run by run"
        if by == "run"
        else "History: time and fraction of roofline over time",
        axis,
        [
            Panel("ms", time_series, markers, bands=time_bands),
            Panel("fraction of roofline", fraction_series, fraction_markers, bands=fraction_bands),
        ],
        width,
    )
