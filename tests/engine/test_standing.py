"""`stand`: the verdict of `judge` without its advice (what a benchmark table reports for each
row), and `mean_time`: the mean `summarise_times` gives, without the spread."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import Dtype, InvalidInput, Software, Unit, custom, judge, place_kernel
from app.engine.compare import mean_time, summarise_times
from app.engine.verdict import stand
from tests.engine.chips import H100


@settings(max_examples=200, deadline=None)
@given(
    flops=st.floats(0, 1e18),
    nbytes=st.floats(1, 1e15),
    unit=st.sampled_from(list(Unit)),
    stack=st.sampled_from(list(Software)),
    over=st.floats(0.01, 1e4),
)
def test_stand_is_judge_without_its_advice(flops, nbytes, unit, stack, over):
    roof = place_kernel(custom(flops, nbytes, Dtype.BF16, unit), H100, stack)
    measured = roof.expected_time * over
    standing, judgement = stand(roof, measured), judge(roof, measured, chip=H100)
    assert standing.verdict is judgement.verdict
    assert standing.against_published is judgement.against_published
    assert standing.judged_against is judgement.judged_against
    assert (standing.ratio, standing.floor_time) == (judgement.ratio, judgement.floor_time)
    assert standing.efficiency == judgement.efficiency
    assert standing.achieved_flops_per_s == judgement.achieved_flops_per_s
    assert standing.achieved_bytes_per_s == judgement.achieved_bytes_per_s


def test_stand_refuses_a_time_that_is_not_one():
    roof = place_kernel(custom(1e9, 1e8, Dtype.FP32, Unit.VECTOR), H100)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InvalidInput, match="positive number of seconds"):
            stand(roof, bad)


def test_mean_time_is_the_summary_mean():
    # 90, 110 and 100 us: 300 us over 3, 100 us
    times = [90e-6, 110e-6, 100e-6]
    assert mean_time(times) == pytest.approx(100e-6)
    assert mean_time(times) == summarise_times(times).mean
    with pytest.raises(InvalidInput, match="at least one value"):
        mean_time([])
    with pytest.raises(InvalidInput, match="positive and finite"):
        mean_time([1e-3, -1e-3])
