"""One verdict that integrates what the answer knows (docs/api.md#verdicts): fit first, then
the physical floor, then the run against its own floor (the ideal, or for overhead-bound work
the least time its fixed costs allow), never contradicting where it sits against published
runs. Every case at and on both sides of its boundaries, on rooflines with round times."""

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import (
    AgainstPublished,
    Bound,
    Dtype,
    Floor,
    Unit,
    Verdict,
    custom,
    judge,
    place,
)
from tests.engine.chips import ROUND

# ROUND with a last-level cache of 1e6 bytes at 1e10 B/s (its work below moves 1e6 bytes)
CACHED = replace(ROUND, id="round-cache", cache_bytes=1e6, cache_bandwidth=1e10)
# ROUND with an fp8 matrix peak twice its bf16 one
WITH_FP8 = replace(ROUND, id="round-fp8", matrix_peaks={Dtype.BF16: 1e12, Dtype.FP8: 2e12})
# 1e12 FLOPs at 1e12 FLOP/s: 1.0 s of compute (1 ms of memory): compute-bound, ideal 1 s
COMPUTE_BOUND = place(custom(1e12, 1e6, Dtype.BF16, Unit.MATRIX), ROUND)
# the same 1 s of work under fixed costs of 9 s (at the median; 4 s to 19 s over their
# spread): realistic 10 s, range 5 s to 20 s; the costs outlast the work (9 > 10 - 9), so it
# is overhead-bound and judged against the low end, 5 s
OVERHEAD = COMPUTE_BOUND.realized(10.0, 5.0, 20.0, overhead=9.0)
# 1 s of ideal work that published runs take 12 s to 20 s to do (a GEMM too small to fill
# the chip): roof-bound (no fixed costs), with a realistic range past 10x the ideal
SLOW_PUBLISHED = COMPUTE_BOUND.realized(15.0, 12.0, 20.0, overhead=0.0)

FASTER = Verdict.FASTER_THAN_ROOFLINE
NEAR = Verdict.NEAR_ROOFLINE
ROOM = Verdict.ROOM_TO_IMPROVE
ORDER = Verdict.ORDER_OF_MAGNITUDE_SLOWER
UNFIT = Verdict.DOES_NOT_FIT
OVER = Verdict.OVERHEAD_BOUND


def test_the_rooflines_hold_the_times_the_cases_assume():
    assert COMPUTE_BOUND.expected_time == 1.0
    assert OVERHEAD.bound is Bound.OVERHEAD
    assert SLOW_PUBLISHED.bound is Bound.COMPUTE


@pytest.mark.parametrize("measured", [0.5, 1.2, 5.0, 100.0])
def test_a_workload_that_does_not_fit_is_judged_so_whatever_its_time(measured):
    judged = judge(COMPUTE_BOUND, measured, ("Raise the batch to 64.",), fits=False)
    assert judged.verdict is UNFIT
    assert judged.advice[0].startswith("Does not fit")
    # the time figures stay, secondary; no advice proposes a change to the work as given
    assert judged.ratio == measured
    assert all("batch to 64" not in line for line in judged.advice)


@pytest.mark.parametrize("fits", [True, None])
def test_a_workload_that_fits_or_has_no_memory_figure_is_judged_on_its_time(fits):
    assert judge(COMPUTE_BOUND, 1.2, fits=fits).verdict is NEAR


@pytest.mark.parametrize(
    ("measured", "verdict", "place"),
    [
        (0.99, FASTER, AgainstPublished.FASTER),  # below the ideal: the measurement is wrong
        (1.0, OVER, AgainstPublished.FASTER),  # at the ideal: fixed costs avoided
        (4.99, OVER, AgainstPublished.FASTER),
        (5.0, OVER, AgainstPublished.WITHIN),  # the floor: the low end of the range
        (20.0, OVER, AgainstPublished.WITHIN),  # the high end, inclusive
        (20.01, ROOM, AgainstPublished.SLOWER),  # more than the fixed costs explain
        (49.99, ROOM, AgainstPublished.SLOWER),  # 9.998x the floor
        (50.0, ORDER, AgainstPublished.SLOWER),  # 10x the floor of 5 s
    ],
)
def test_overhead_bound_work_is_judged_against_its_fixed_cost_floor(measured, verdict, place):
    judged = judge(OVERHEAD, measured)
    assert (judged.verdict, judged.against_published) == (verdict, place)
    assert judged.judged_against is Floor.FIXED_COSTS
    assert judged.floor_time == 5.0
    assert judged.floor_ratio == pytest.approx(measured / 5.0)
    assert judged.ratio == measured  # against the ideal of 1 s, kept beside it


def test_the_overhead_bound_headline_names_the_floor_and_the_work():
    head = judge(OVERHEAD, 8.0).advice[0]
    # 8 s over the floor of 5 s = 1.6x; the work itself ideally 1 s
    assert "a floor of 5 s" in head and "ideally takes 1 s" in head and "1.6x" in head
    assert "makes sense" in head


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (9.99, ROOM),
        (10.0, ROOM),  # 10x the ideal, but faster than published runs of this work
        (15.0, ROOM),  # within them
        (20.0, ROOM),  # at their high end
        (20.01, ORDER),  # beyond what published runs take, and 10x the ideal
    ],
)
def test_an_order_of_magnitude_is_structural_only_beyond_published_runs(measured, verdict):
    judged = judge(SLOW_PUBLISHED, measured)
    assert judged.verdict is verdict
    assert judged.judged_against is Floor.ROOFLINE and judged.floor_time == 1.0


def test_room_within_published_runs_points_at_the_work_not_the_implementation():
    within = judge(SLOW_PUBLISHED, 15.0).advice[0]
    assert "published runs of this work get no closer" in within
    slower = judge(COMPUTE_BOUND, 3.0).advice[0]
    assert "there is room to improve" in slower


def test_a_saturated_chip_is_offered_only_the_dtypes_it_has_a_faster_peak_for():
    # near the compute roofline in bf16: a chip without fp8 is offered none; with an fp8
    # peak of 2e12 (2x the bf16 1e12) it is named with its multiple
    lines = " ".join(judge(COMPUTE_BOUND, 1.2, chip=ROUND).advice)
    assert "fp8" not in lines
    with_fp8 = place(custom(1e12, 1e6, Dtype.BF16, Unit.MATRIX), WITH_FP8)
    assert "fp8 (2.0x the bf16 peak)" in " ".join(judge(with_fp8, 1.2, chip=WITH_FP8).advice)
    # memory-bound near the roofline: an fp8 KV cache only on a chip with fp8
    memory = place(custom(1e9, 1e9, Dtype.BF16, Unit.MATRIX), ROUND)
    assert "fp8" not in " ".join(judge(memory, 1.2, chip=ROUND).advice)


_times = st.floats(min_value=1e-9, max_value=1e3, allow_nan=False, allow_infinity=False)


@given(
    ideal_share=st.floats(min_value=0.01, max_value=1.0),
    spread=st.tuples(
        st.floats(min_value=1.0, max_value=50.0), st.floats(min_value=1.0, max_value=50.0)
    ),
    fixed_share=st.floats(min_value=0.0, max_value=0.99),
    measured_factor=st.floats(min_value=0.01, max_value=1e4),
    fits=st.sampled_from([True, None]),
    chip=st.sampled_from([None, CACHED]),
)
def test_the_headline_never_contradicts_the_published_range(  # noqa: PLR0917 (the drawn cases)
    ideal_share, spread, fixed_share, measured_factor, fits, chip
):
    # a realistic time of 1 s with a range around it, an ideal at or under the low end, and
    # any share of fixed costs
    low, high = 1.0 / spread[0], 1.0 * spread[1]
    ideal = low * ideal_share
    work = place(custom(ideal * 1e12, 1e6, Dtype.BF16, Unit.MATRIX), ROUND)
    # as the engine realizes every roofline: the range never starts below the ideal (the
    # ideal computed from the FLOPs can sit an ulp above `ideal`)
    roof = work.realized(1.0, max(low, work.expected_time), high, overhead=fixed_share)
    judged = judge(roof, measured_factor * ideal, fits=fits, chip=chip)
    place_ = judged.against_published
    assert math.isfinite(judged.floor_ratio)
    if judged.verdict is ORDER:
        assert place_ is AgainstPublished.SLOWER
    if judged.verdict is FASTER:
        assert place_ is AgainstPublished.FASTER
    if judged.verdict is Verdict.CACHE_RESIDENT:
        # below the roofline like a timing error, but within the cache's roof
        assert judged.ratio < 1 and place_ is AgainstPublished.FASTER
        assert judged.cache is not None and chip is not None
    if judged.verdict is OVER:
        assert place_ is not AgainstPublished.SLOWER and roof.bound is Bound.OVERHEAD
    if judged.verdict is NEAR:
        assert judged.ratio < 1.5 and roof.bound is not Bound.OVERHEAD
