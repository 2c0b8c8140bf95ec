"""The SVG charts: log scaling, decade ticks, the ridge's coordinates, points, escaping."""

import math
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from statistics import fmean
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Bound
from app.engine.compare import mean_ratio
from app.schemas.answers import ExpectedTime
from app.schemas.comparison import Comparison as ChipComparison
from app.schemas.comparison_bodies import BaselineWindow, Comparison
from app.schemas.measurement_bodies import HistoryPoint, Means, WorkloadComparison
from app.schemas.planning_answers import OptimalBatchAnswer, ScalingAnswer, SweepRow
from app.web import charts, svg
from app.web.bars import comparison_svg
from app.web.charts import BOX, CacheCeiling, Roof, RooflineData, roofline_svg
from app.web.history_chart import history_svg
from app.web.labels import LABEL_GAP, Label, overlap, place_labels
from app.web.panels import time_ticks
from app.web.trends import scaling_svg, sweep_svg
from tests.engine.chips import A100

NS = {"s": "http://www.w3.org/2000/svg"}
DECODE8 = {"chip": "a100", "model": "llama-3.1-8b", "batch": "8"}
TRAINING = {
    "chip": "h100",
    "model": "llama-3.1-8b",
    "phase": "training",
    "batch": "512",
    "dp": "64",
    "zero": "1",
    "chip_counts": "8,16,32,64,128,256",
    "serial_fraction": "0.02",
}
A100ISH = RooflineData(
    chip_name="Test <chip> & co",
    bandwidth=2e12,
    roof=Roof("bf16 matrix", 300e12),
    flops=1e12,
    bytes=1e11,  # intensity 10 FLOP/B, memory-bound under a ridge of 150
    expected_time_s=0.05,
    measured_time_s=0.1,
)


def parse(document: str) -> ElementTree.Element:
    return ElementTree.fromstring(document)


def circles(document: str) -> dict[str, tuple[float, float]]:
    return {
        c.get("class", ""): (float(c.get("cx", 0)), float(c.get("cy", 0)))
        for c in parse(document).iter(f"{{{NS['s']}}}circle")
    }


def test_log_scale_maps_decades_evenly():
    scale = svg.Scale(1, 1000, 0, 300, log=True)
    assert scale(1) == 0 and scale(1000) == 300
    assert scale(10) == pytest.approx(100) and scale(100) == pytest.approx(200)
    assert scale(math.sqrt(10)) == pytest.approx(50)


def test_inverted_linear_scale():
    scale = svg.Scale(0, 10, 200, 100)
    assert scale(0) == 200 and scale(10) == 100 and scale(5) == 150


def test_decades_and_ticks():
    assert svg.decades(0.15, 1500) == (0.1, 10000)
    assert svg.decades(100, 100) == (100, 1000)
    assert svg.decade_ticks(0.1, 1000) == pytest.approx([0.1, 1, 10, 100, 1000])
    assert svg.linear_ticks(0, 10) == pytest.approx([0, 2, 4, 6, 8, 10])
    assert svg.nice_max(7300) == 8000 and svg.nice_max(0) == 1
    assert svg.si(2.5e12) == "2.5T" and svg.si(0.01) == "0.01"


def test_roofline_is_valid_svg_with_escaped_text():
    document = roofline_svg(A100ISH)
    root = parse(document)  # well-formed XML despite the chip's name
    # the plot's 400 px, then the legend's rows under it
    assert root.get("viewBox") == f"0 0 {svg.WIDTH} {root.get('height')}"
    assert root.get("width") == str(svg.WIDTH) and int(root.get("height", 0)) > svg.HEIGHT
    assert "Test &lt;chip&gt; &amp; co" in document
    assert "<chip>" not in document


def test_escaping_of_labels_in_text_and_titles():
    chart = svg.Svg('a "quoted" <title>')
    chart.text(0, 0, "<script>alert(1)</script>", "label")
    chart.point(1, 1, "ridge", "x < y & z")
    document = chart.render()
    assert "<script>" not in document
    assert "&lt;script&gt;" in document and "x &lt; y &amp; z" in document
    assert 'aria-label="a &quot;quoted&quot; &lt;title&gt;"' in document
    parse(document)


def test_ridge_point_sits_where_the_slope_meets_the_used_roof():
    x, y = charts._scales(A100ISH, BOX)
    ridge = circles(roofline_svg(A100ISH))["ridge"]
    assert ridge == pytest.approx((x(150), y(300e12)), abs=0.01)
    # on log axes the slope (bandwidth x intensity) is a straight 45-degree-in-decades line
    # [least of intensity and ridges / 10, greatest * 10], rounded out to decades: 1 .. 1e4
    assert (x.lo, x.hi) == (1, 10000)
    decade_x = x(10) - x(1)
    decade_y = y(1e13) - y(1e12)
    assert decade_x == pytest.approx((BOX.right - BOX.left) / 4)
    assert decade_y < 0  # up is smaller y


def test_workload_and_measured_points_use_flops_over_time():
    x, y = charts._scales(A100ISH, BOX)
    points = circles(roofline_svg(A100ISH))
    assert points["expected"] == pytest.approx((x(10), y(1e12 / 0.05)), abs=0.01)
    assert points["measured"] == pytest.approx((x(10), y(1e12 / 0.1)), abs=0.01)
    assert "(50% of roofline)" in roofline_svg(A100ISH)


def test_only_the_roof_of_the_works_dtype_and_unit_is_drawn():
    document = roofline_svg(A100ISH)
    assert document.count('class="roof-used"') == 1
    assert 'class="roof"' not in document
    assert "bf16 matrix peak 300 TFLOP/s" in document and "fp32" not in document
    assert "memory 2 TB/s" in document


def test_no_measured_point_without_a_time_and_none_at_zero_flops():
    plain = roofline_svg(RooflineData("c", 1e12, Roof("bf16 matrix", 1e14), 1e9, 1e9, 1e-3))
    assert "measured" not in circles(plain) and "expected" in circles(plain)
    empty = roofline_svg(RooflineData("c", 1e12, Roof("bf16 matrix", 1e14), 0, 1e9, 1e-3))
    assert "expected" not in circles(empty) and "no FLOPs" in empty


def test_the_answers_dtype_and_unit_make_the_one_roof(client):
    # fp8 on an H100: the fp8 matrix peak (1979 TFLOP/s dense) is the only roof, not bf16's
    # 989 nor any vector peak
    answer = ExpectedTime.model_validate(
        client.get("/expected-time?chip=h100&model=llama-8b&dtype=fp8").json()
    )
    data = charts.data_of(answer, A100, None)
    assert data.roof == Roof("fp8 matrix", answer.peak.flops_per_s)
    document = roofline_svg(data)
    assert "fp8 matrix peak" in document and "bf16" not in document
    assert "vector" not in document


def _row(batch: int, fits: bool) -> SweepRow:
    step = 0.01 + batch * 1e-4
    return SweepRow(
        batch=batch,
        compute_time_s=step / 2,
        memory_time_s=step,
        expected_time_s=step,
        realistic_time_s=step * 1.5,
        memory_required_bytes=1e9 * batch,
        fits=fits,
        tokens_per_s=batch / step,
        bound=Bound.MEMORY,
    )


def test_sweep_chart_marks_ridge_and_memory_limit():
    answer = OptimalBatchAnswer(
        catalog_version="v",
        chip={"id": "c", "name": "C"},
        workload={"kind": "matmul", "m": 1, "n": 1, "k": 1},
        optimal_batch=64,
        limited_by="ridge",
        ridge_batch=64,
        max_step_time_s=None,
        latency_batch=None,
        max_batch=200,
        throughput_asymptote_tokens_per_s=1e4,
        near_asymptote_batch=128,
        asymptotic_intensity=100,
        ridge_intensity=150,
        sweep=[_row(b, b <= 200) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)],
    )
    document = sweep_svg(answer)
    parse(document)
    assert "ridge 64" in document and "memory limit 200" in document
    assert document.count('class="dot-off"><title>') == 6  # 256 and 512, in three series
    assert "tokens/s" in document and "ideal time per step (ms)" in document
    assert "realistic time per step (ms)" in document
    assert "your batch" not in document and "latency limit" not in document  # a kernel


def test_sweep_chart_marks_the_questions_batch_and_the_latency_limit():
    answer = OptimalBatchAnswer(
        catalog_version="v",
        chip={"id": "c", "name": "C"},
        workload={"kind": "transformer", "model": "llama-8b", "batch": 1000},
        optimal_batch=40,
        limited_by="latency",
        ridge_batch=None,
        max_step_time_s=0.02,
        latency_batch=40,
        max_batch=200,
        throughput_asymptote_tokens_per_s=1e4,
        near_asymptote_batch=128,
        asymptotic_intensity=100,
        ridge_intensity=150,
        sweep=[_row(b, b <= 200) for b in (1, 2, 4, 8, 16, 32, 40, 64, 128, 256)],
    )
    document = sweep_svg(answer)
    parse(document)
    assert "latency limit 40" in document and "your batch 1000" in document
    assert 'class="you"' in document  # the user's batch, past the sweep: the axis reaches it


def _history(
    times_s: list[float], expected_s: float, comparison: Comparison, step: timedelta
) -> WorkloadComparison:
    """A workload's history of runs `times_s` long (roofline `expected_s`), stored `step`
    apart, and its latest run's `comparison`."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    points = [
        HistoryPoint(
            id=i,
            created_at=start + step * i,
            measured_time_s=t,
            expected_time_s=expected_s,
            ratio=t / expected_s,
            efficiency=expected_s / t,
            verdict="faster_than_roofline" if t < expected_s else "room_to_improve",
            tokens_per_s=None,
            label=None,
            branch=None,
            git_commit=None,
            catalog_version="v",
        )
        for i, t in enumerate(times_s, start=1)
    ]
    return WorkloadComparison(
        workload_key="k" * 64,
        chip_id="c",
        workload={},
        count=len(points),
        history=points,
        best=min(points, key=lambda p: p.measured_time_s),
        latest=points[-1],
        means=Means(
            time_s=fmean(times_s),
            tokens_per_s=None,
            efficiency=mean_ratio([p.efficiency for p in points]),
            ratio=mean_ratio([p.ratio for p in points]),
        ),
        comparison=comparison,
        overhead=None,
    )


def test_history_chart_plots_time_and_fraction_of_roofline():
    latest = Comparison(
        previous_id=2,
        change_vs_previous=0.09,
        baseline_id=None,
        change_vs_baseline=None,
        threshold=0.1,
        regression=False,
    )
    comparison = _history([0.011, 0.012, 0.013], 0.008, latest, timedelta(hours=1))
    document = history_svg(comparison, by="time")
    parse(document)
    assert document.count('class="dot-b"><title>') == 3
    assert document.count('class="dot-a"><title>') == 3
    assert "fraction of roofline" in document and "01:00:00" in document
    assert re.search(r"measured ms: 11 at", document)
    # run by run, the default: the runs at 1, 2, 3, their ticks naming the stored runs
    by_run = history_svg(comparison)
    assert "run (evenly spaced, oldest first)" in by_run and ">#3</text>" in by_run
    assert re.search(r"measured ms: 11 at 1<", by_run)


def _regressed_history() -> WorkloadComparison:
    """Six runs of 9.47 ms of roofline work at 30, 30, 1, 30, 30, 40 ms: the third faster
    than the roofline (fraction 9.47, the top of its panel), the last +33% against the median
    30 ms of the five before it, a regression."""
    expected = 0.00947
    window = BaselineWindow(
        source="previous",
        requested=10,
        runs=5,
        run_ids=[5, 4, 3, 2, 1],
        samples=5,
        median_time_s=0.030,
        spread_time_s=0.0,
        median_efficiency=expected / 0.030,
    )
    latest = Comparison(
        previous_id=5,
        change_vs_previous=1 / 3,
        baseline_id=None,
        change_vs_baseline=None,
        threshold=0.1,
        regression=True,
        regressed_on=["time", "efficiency"],
        window=window,
        change_vs_median=1 / 3,
    )
    times = [0.030, 0.030, 0.001, 0.030, 0.030, 0.040]
    return _history(times, expected, latest, timedelta(minutes=1))


@pytest.mark.parametrize("width", [svg.NARROW, svg.WIDTH])
def test_the_regressed_runs_label_sits_beside_its_line_clear_of_the_rings(width):
    document = history_svg(_regressed_history(), width)
    root = parse(document)
    marker_xs = {
        float(line.get("x1", 0))
        for line in root.iter(f"{{{NS['s']}}}line")
        if line.get("class") == "regressed" and line.get("x1") == line.get("x2")
    }
    assert len(marker_xs) == 1  # the regressed run's line, in both panels
    (marker_x,) = marker_xs
    rings = [
        svg.Box(
            float(c.get("cx", 0)) - 7,
            float(c.get("cy", 0)) - 7,
            float(c.get("cx", 0)) + 7,
            float(c.get("cy", 0)) + 7,
        )
        for c in root.iter(f"{{{NS['s']}}}circle")
        if c.get("class", "").startswith("ring-")
    ]
    assert len(rings) == 4  # the regression and the timing error, in each panel
    labels = [
        t
        for t in root.iter(f"{{{NS['s']}}}text")
        if t.get("class") in {"regressed-label", "limit-label"}
    ]
    assert [t.text for t in labels].count("regression #6 +33%") == 2 and len(labels) == 3
    for text in labels:
        box = Label(
            float(text.get("x", 0)),
            float(text.get("y", 0)),
            text.text or "",
            anchor=text.get("text-anchor", "start"),
        ).box()
        # the last run's line is at the right of the chart: its label ends left of it, and the
        # roofline's label stops short of it, struck by no line of a marker
        assert box.right < marker_x, (text.text, box, marker_x)
        for ring in rings:
            assert not overlap(box, ring), (text.text, box, ring)


@pytest.mark.parametrize(
    ("span_s", "labels"),
    [
        # an hour of one day: to the second, as before (3,600 s / 3 = 20 min apart)
        (3600, ["02:57:19", "03:17:19", "03:37:19", "03:57:19"]),
        # three runs stored within 0.9 s: every tick read "02:57:19"; now 0.3 s apart, to
        # the millisecond (19.100, 19.400, 19.700, 20.000)
        (0.9, ["02:57:19.100", "02:57:19.400", "02:57:19.700", "02:57:20.000"]),
        # 2 ms: ticks 0.667 ms apart read 19.100, 19.100 (at 100.667), 19.101 (101.333) and
        # 19.102: the second, a repeat, is left out
        (0.002, ["02:57:19.100", "02:57:19.101", "02:57:19.102"]),
    ],
)
def test_time_ticks_are_as_fine_as_tells_them_apart(span_s, labels):
    lo = datetime(2026, 11, 27, 2, 57, 19, 100000, tzinfo=UTC).timestamp()
    ticks = time_ticks(lo, lo + span_s)
    assert [label for _, label in ticks] == labels
    assert [t for t, _ in ticks] == sorted(t for t, _ in ticks)
    assert ticks[0][0] == lo


def test_time_ticks_over_midnight_name_the_days_and_tell_the_runs_apart():
    lo = datetime(2026, 11, 27, 23, 59, 59, 500000, tzinfo=UTC).timestamp()
    # two days: to the minute, as before
    assert [label for _, label in time_ticks(lo, lo + 2 * 86400)] == [
        "11-27 23:59", "11-28 15:59", "11-29 07:59", "11-29 23:59"
    ]  # fmt: skip
    # 90 s over midnight: minutes alone would read 23:59, 00:00, 00:00, 00:01
    assert [label for _, label in time_ticks(lo, lo + 90)] == [
        "11-27 23:59:59", "11-28 00:00:29", "11-28 00:00:59", "11-28 00:01:29"
    ]  # fmt: skip


@given(
    st.floats(min_value=1.6e9, max_value=2.5e9),
    st.floats(min_value=1e-3, max_value=1e7),
)
def test_time_ticks_never_repeat_a_label(lo, span):
    """Labels are distinct, and there are two at least where the ends are in different
    milliseconds: a span of 2 ms always is; one of 1 ms may not be, once the times are
    rounded to microseconds (1600000000.9999995 reads 41.000, and so does 1 ms later)."""
    ticks = time_ticks(lo, lo + span)
    labels = [label for _, label in ticks]
    assert len(set(labels)) == len(labels) >= (2 if span >= 2e-3 else 1)


def test_time_ticks_of_runs_within_a_millisecond_keep_the_first():
    lo = 1600000000.9999995
    assert time_ticks(lo, lo + 1e-3) == [(lo, "12:26:41.000")]


def test_the_realistic_point_sits_inside_the_published_range():
    # realistic 0.08 s, published runs 0.06-0.12 s: points at 1e12 / t FLOP/s on the same
    # intensity; the range is a line from 1e12 / 0.12 = 8.33 TFLOP/s to 1e12 / 0.06 = 16.7
    data = replace(A100ISH, realistic_time_s=0.08, realistic_range_s=(0.06, 0.12))
    x, y = charts._scales(data, BOX)
    document = roofline_svg(data)
    assert circles(document)["realistic"] == pytest.approx((x(10), y(1e12 / 0.08)), abs=0.01)
    (band,) = [
        line
        for line in parse(document).iter(f"{{{NS['s']}}}line")
        if line.get("class") == "published"
    ]
    assert float(band.get("y1", 0)) == pytest.approx(y(1e12 / 0.12), abs=0.01)
    assert float(band.get("y2", 0)) == pytest.approx(y(1e12 / 0.06), abs=0.01)
    assert "realistic" not in circles(roofline_svg(A100ISH))  # none without a range


def test_an_answer_stored_before_the_realistic_range_still_charts(client):
    # stored measurements keep the answer they were judged by; one from before the realistic
    # range and the stack existed reads back, and charts without the range
    answer = client.get("/expected-time?chip=a100&model=llama-8b").json()
    for new in ("realistic_range_s", "sustained_time_s", "overhead_time_s", "kernels", "stack"):
        del answer[new]
    del answer["published_stack"], answer["published_runs"], answer["assumptions"]
    old = ExpectedTime.model_validate(answer)
    assert old.realistic_range_s is None
    document = roofline_svg(charts.data_of(old, A100, 0.01))
    assert "measured" in circles(document) and "realistic" not in circles(document)


# --- one roof, placed labels, a legend entry for every mark, the scaling chart's axes ---

LABEL_CLASSES = {
    "label",
    "label-used",
    "cache-label",
    "marker-label",
    "limit-label",
    "you-label",
    "bar-value",
}
NOT_MARKS = {"grid", "frame"}


def placed_boxes(document: str) -> list[svg.Box]:
    """The estimated boxes of a chart's placed labels (texts with a label class)."""
    boxes = []
    for text in parse(document).iter(f"{{{NS['s']}}}text"):
        if text.get("class") in LABEL_CLASSES and text.get("class") != "bar-value":
            label = Label(
                float(text.get("x", 0)),
                float(text.get("y", 0)),
                text.text or "",
                anchor=text.get("text-anchor", "start"),
            )
            boxes.append(label.box())
    return boxes


def assert_legend_covers_every_mark(document: str) -> None:
    """Each point, line, polyline and bar class drawn has a legend swatch (`key <class>`);
    a series' dots (dot-a) are its line's (series-a)."""
    keys, marks = set(), set()
    for element in parse(document).iter():
        tag = element.tag.split("}")[-1]
        cls = element.get("class", "")
        if tag not in ("circle", "line", "polyline", "rect") or cls in NOT_MARKS:
            continue
        if cls.startswith("key "):
            keys.add(cls.removeprefix("key "))
        else:
            marks.add(re.sub(r"^dot-(?!off)", "series-", cls))
    assert marks and marks <= keys, marks - keys


def test_the_answers_dtype_and_unit_make_the_one_roof_on_the_vector_unit_too(client):
    # an elementwise fp32 kernel runs on the vector unit: the fp32 vector peak is its roof
    body = {"chip": "a100", "workload": {"kind": "elementwise", "n": 10**8, "ops": ["cos"]}}
    answer = ExpectedTime.model_validate(client.post("/expected-time", json=body).json())
    data = charts.data_of(answer, A100, None)
    assert data.roof.label == "fp32 vector"
    document = roofline_svg(data)
    assert "fp32 vector peak 19.5 TFLOP/s" in document and "matrix" not in document


_labels = st.lists(
    st.builds(
        Label,
        x=st.floats(-50, 700),
        y=st.floats(-50, 450),
        text=st.text(alphabet="abc 0123456789.%/", min_size=1, max_size=40),
        anchor=st.sampled_from(["start", "middle", "end"]),
        size=st.sampled_from([11.0, 12.0]),
    ),
    max_size=24,
)


@given(labels=_labels, width=st.floats(280, 640), height=st.floats(120, 400))
@settings(max_examples=400)
def test_placed_labels_never_overlap_nor_leave_the_chart(labels, width, height):
    placed = place_labels(labels, width, height)
    boxes = [label.box() for label in placed]
    for i, a in enumerate(boxes):
        assert a.left >= -1e-6 and a.right <= width + 1e-6, (a, width)
        assert a.top >= -1e-6 and a.bottom <= height + 1e-6, (a, height)
        for b in boxes[i + 1 :]:
            assert not overlap(a, b), (a, b)
    # every label is kept when they fit one above another (each also narrower than the chart)
    if all(a.width <= width for a in labels):
        stacked = sum(a.box().bottom - a.box().top + LABEL_GAP for a in labels)
        if stacked <= height:
            assert len(placed) == len(labels)


def test_a_label_already_clear_of_the_others_stays_where_it_is():
    # two labels far apart: placement moves neither; a third on top of the first moves down
    # (or up) by one label's height and the gap, and keeps its x
    first, far = Label(10, 50, "expected"), Label(300, 200, "measured")
    on_top = Label(12, 52, "realistic")
    placed = place_labels([first, far, on_top], 640, 400)
    assert placed[:2] == [first, far]
    assert placed[2].x == 12 and abs(placed[2].y - 52) >= 11 * 1.05 - 1e-9
    assert not overlap(placed[0].box(), placed[2].box())


@given(
    bandwidth=st.floats(1e10, 1e13),
    peak=st.floats(1e11, 5e15),
    flops=st.floats(1e6, 1e15),
    intensity=st.floats(0.01, 1e4),
    slowdown=st.floats(1.0, 1e3),
    realistic=st.floats(1.0, 5.0),
)
@settings(max_examples=150, deadline=None)
def test_roofline_labels_never_overlap_and_stay_inside(  # noqa: PLR0917
    bandwidth, peak, flops, intensity, slowdown, realistic
):
    expected = max(flops / peak, flops / intensity / bandwidth)
    data = RooflineData(
        "chip",
        bandwidth,
        Roof("bf16 matrix", peak),
        flops,
        flops / intensity,
        expected,
        measured_time_s=expected * slowdown,
        realistic_time_s=expected * realistic,
        realistic_range_s=(expected * realistic * 0.8, expected * realistic * 1.3),
    )
    document = roofline_svg(data)
    boxes = placed_boxes(document)
    assert len(boxes) == 6  # roof, memory, ridge, expected, realistic, measured
    for i, a in enumerate(boxes):
        assert BOX.left - 1e-6 <= a.left and a.right <= BOX.right + 1e-6
        assert BOX.top - 1e-6 <= a.top and a.bottom <= BOX.bottom + 1e-6
        for b in boxes[i + 1 :]:
            assert not overlap(a, b), (a, b)
    assert_legend_covers_every_mark(document)


@pytest.mark.parametrize("width", [svg.NARROW, svg.WIDTH])
def test_roofline_labels_cover_no_point_and_cross_no_slope(width):
    # a 4096 x 4096 x 4096 bf16 matmul on an H100: 2 x 4096^3 = 1.374e11 FLOPs over
    # 3 x 4096^2 x 2 B = 1.007e8 B, 1,365 FLOP/B, right of the ridge (989e12 / 3.35e12 = 295
    # FLOP/B): 1.374e11 / 989e12 = 139 us expected; measured 900 us (15%), far under the roof.
    # On a phone's chart no side of the measured point has room for its label but below it,
    # and left of the realistic point runs the slope
    flops, expected = 2 * 4096**3, 2 * 4096**3 / 989e12
    data = RooflineData(
        "H100",
        3.35e12,
        Roof("bf16 matrix", 989e12),
        flops,
        3 * 4096**2 * 2,
        expected,
        measured_time_s=900e-6,
        realistic_time_s=expected * 1.2,
        realistic_range_s=(expected * 1.1, expected * 1.8),
    )
    root = parse(roofline_svg(data, width))
    dots = [
        svg.Box(
            float(c.get("cx", 0)) - float(c.get("r", 0)),
            float(c.get("cy", 0)) - float(c.get("r", 0)),
            float(c.get("cx", 0)) + float(c.get("r", 0)),
            float(c.get("cy", 0)) + float(c.get("r", 0)),
        )
        for c in root.iter(f"{{{NS['s']}}}circle")
    ]
    assert len(dots) == 4  # ridge, expected, realistic, measured
    (slope,) = [p for p in root.iter(f"{{{NS['s']}}}polyline") if p.get("class") == "slope"]
    (x0, y0), (x1, y1) = [
        tuple(map(float, xy.split(","))) for xy in slope.get("points", "").split()
    ]
    along = [(x0 + (x1 - x0) * i / 400, y0 + (y1 - y0) * i / 400) for i in range(401)]
    boxes = placed_boxes(roofline_svg(data, width))
    assert len(boxes) == 6
    for box in boxes:
        for dot in dots:
            assert not overlap(box, dot), (box, dot)
        crossed = [
            (px, py) for px, py in along if box.left < px < box.right and box.top < py < box.bottom
        ]
        assert crossed == [], box


def test_every_chart_has_a_legend_entry_for_every_mark(client):
    data = replace(A100ISH, realistic_time_s=0.08, realistic_range_s=(0.06, 0.12))
    assert_legend_covers_every_mark(roofline_svg(data))
    assert_legend_covers_every_mark(client.get("/batch-sweep.svg", params=DECODE8).text)
    assert_legend_covers_every_mark(client.get("/scaling.svg", params=TRAINING).text)
    comparison = client.get("/compare?chips=a100,h100,t4&model=llama-8b&batch=64").json()
    bars = comparison_svg(ChipComparison.model_validate(comparison))
    assert 'class="bar-unfit"' in bars  # the T4 does not hold the KV cache: a grey bar
    assert_legend_covers_every_mark(bars)


def test_the_marker_labels_of_nearby_markers_are_kept_apart(client):
    # batch 200 beside the memory limit of 227 (log x: 0.18 decade apart, ~28 px): both
    # labels want the top of each panel, where 'your batch 200' (~92 px wide) would cover
    # 'memory limit 227'; placed, one sits under the other
    document = client.get("/batch-sweep.svg", params={**DECODE8, "batch": "200"}).text
    assert "your batch 200" in document and "memory limit 227" in document
    texts = [
        t for t in parse(document).iter(f"{{{NS['s']}}}text") if t.get("class") in LABEL_CLASSES
    ]
    ys = {t.text: float(t.get("y", 0)) for t in texts[:2]}
    assert len(set(ys.values())) == 2, ys
    boxes = placed_boxes(document)
    assert len(boxes) == 4  # two markers in each of the two panels
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not overlap(a, b), (a, b)


def test_linear_scaling_is_a_straight_line_on_the_scaling_chart(client):
    # log-log axes: speedup = chips / 8 puts 8, 16, ..., 256 chips at equal steps in x and y,
    # so a run that scales linearly draws the ideal's straight line, point for point
    answer = client.get("/scaling", params=TRAINING).json()
    for point in answer["points"]:
        point["speedup"] = point["chips"] / answer["base_chips"]
    document = scaling_svg(ScalingAnswer.model_validate(answer))
    root = parse(document)
    speedup = [
        (float(c.get("cx", 0)), float(c.get("cy", 0)))
        for c in root.iter(f"{{{NS['s']}}}circle")
        if (c.findtext(f"{{{NS['s']}}}title") or "").startswith("speedup:")
    ]
    assert len(speedup) == 6
    steps = {(round(b[0] - a[0], 2), round(b[1] - a[1], 2)) for a, b in pairwise(speedup)}
    assert len(steps) == 1  # one step: a straight line
    (ideal,) = [p for p in root.iter(f"{{{NS['s']}}}polyline") if p.get("class") == "series-c"]
    ends = [tuple(map(float, xy.split(","))) for xy in ideal.get("points", "").split()]
    assert ends == [pytest.approx(speedup[0], abs=0.01), pytest.approx(speedup[-1], abs=0.01)]
    assert "linear scaling" in document and "speedup over 8 chips" in document


def test_the_chart_alone_marks_the_latency_limit_of_the_bound_it_is_given(client):
    # the same bound as /optimal-batch's: its latency_batch is the chart's latency limit
    bound = {**DECODE8, "max_tpot_ms": "20"}
    latency_batch = client.get("/optimal-batch", params=bound).json()["latency_batch"]
    assert latency_batch > 8
    document = client.get("/batch-sweep.svg", params=bound).text
    assert f"latency limit {latency_batch}" in document
    assert "latency limit" not in client.get("/batch-sweep.svg", params=DECODE8).text
    # as on the form, a bound of the other phase does not apply to decode: no limit drawn
    other = client.get("/batch-sweep.svg", params={**DECODE8, "max_ttft_ms": "20"})
    assert other.status_code == 200 and "latency limit" not in other.text


def polylines(document: str) -> dict[str, list[tuple[float, float]]]:
    """Each polyline's points by its class."""
    found = {}
    for line in parse(document).iter(f"{{{NS['s']}}}polyline"):
        pairs = [p.split(",") for p in (line.get("points") or "").split()]
        found[line.get("class", "")] = [(float(a), float(b)) for a, b in pairs]
    return found


# A100ISH under a 40 MiB cache read at 8e12 B/s, 4x its memory bandwidth: the cache's slope
# meets the 300e12 FLOP/s roof at 300e12 / 8e12 = 37.5 FLOP/B, left of the ridge at 150
CACHED = replace(A100ISH, cache=CacheCeiling("L2", 40 * 2**20, 8e12))


def test_the_cache_slope_meets_the_roof_at_the_peak_over_the_cache_bandwidth():
    x, y = charts._scales(CACHED, BOX)
    document = roofline_svg(CACHED)
    lines = polylines(document)
    assert lines["cache-slope"][-1] == pytest.approx((x(37.5), y(300e12)), abs=0.01)
    # at every intensity the cache's slope is 4x the memory's: log10(4) = 0.6 of a decade up
    (_, memory_y), (_, cache_y) = lines["slope"][0], lines["cache-slope"][0]
    assert memory_y - cache_y == pytest.approx(y(1e13) - y(4e13), abs=0.01)
    assert "L2 40 MiB 8 TB/s" in document
    assert_legend_covers_every_mark(document)
    assert "cache-slope" not in polylines(roofline_svg(A100ISH))


def test_the_cache_roof_is_drawn_where_the_bytes_fit_and_its_bandwidth_is_known(client):
    # a bf16 GEMV, 1 x 4,000 by 4,000 x 4,000: (4,000 + 4,000) x 2 B of vectors and
    # 16,000,000 x 2 B of weights, 32,016,000 B, within the A100's 40 MiB (41,943,040 B) L2
    gemv = {"chip": "a100", "kind": "matmul", "m": "1", "n": "4000", "k": "4000", "dtype": "bf16"}
    document = client.get("/roofline.svg", params=gemv).text
    assert 'class="cache-slope"' in document and "L2 40 MiB 7.22 TB/s" in document
    # 1 x 4,000 by 4,000 x 6,000: 48,000,000 B of weights alone, over the 40 MiB
    larger = client.get("/roofline.svg", params={**gemv, "n": "6000"}).text
    assert 'class="cache-slope"' not in larger
    # the L40S has a 96 MiB L2 but no bandwidth for it in the catalog: no slope to draw
    l40s = client.get("/roofline.svg", params={**gemv, "chip": "l40s"}).text
    assert 'class="cache-slope"' not in l40s


@given(
    bandwidth=st.floats(1e11, 1e13),
    cache_share=st.floats(1.5, 30.0),
    intensity=st.floats(0.01, 1e4),
    slowdown=st.floats(0.05, 1e3),
)
@settings(max_examples=100, deadline=None)
def test_roofline_labels_with_a_cache_roof_never_overlap_and_stay_inside(
    bandwidth, cache_share, intensity, slowdown
):
    peak, flops = 300e12, 1e12
    expected = max(flops / peak, flops / intensity / bandwidth)
    data = RooflineData(
        "chip",
        bandwidth,
        Roof("bf16 matrix", peak),
        flops,
        flops / intensity,
        expected,
        measured_time_s=expected * slowdown,
        cache=CacheCeiling("L2", 50 * 2**20, bandwidth * cache_share),
    )
    boxes = placed_boxes(roofline_svg(data))
    assert len(boxes) == 6  # roof, memory, cache, ridge, expected, measured
    for i, a in enumerate(boxes):
        assert BOX.left - 1e-6 <= a.left and a.right <= BOX.right + 1e-6
        assert BOX.top - 1e-6 <= a.top and a.bottom <= BOX.bottom + 1e-6
        for b in boxes[i + 1 :]:
            assert not overlap(a, b), (a, b)
