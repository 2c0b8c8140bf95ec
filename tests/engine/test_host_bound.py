"""A host busy throughout an accelerator run (docs/api.md#verdicts,
docs/formulas.md#host-bound-runs): process CPU time >= 0.9 of the measured time, in a run
slower than its floor, puts the host-bound advice first and sets `host_bound`; the verdict's
name is unchanged (it says how far the time is from the work's floor, the CPU time says why).
Each case at and on both sides of the 0.9 threshold, on rooflines with round times."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import Dtype, InvalidInput, Unit, Verdict, custom, judge, place
from app.engine.verdict import HOST_BOUND, host_bound
from tests.engine.chips import ROUND

# 1e12 FLOPs at 1e12 FLOP/s: 1.0 s of compute (1 ms of memory): compute-bound, ideal 1 s
COMPUTE_BOUND = place(custom(1e12, 1e6, Dtype.BF16, Unit.MATRIX), ROUND)
# the same work under 9 s of fixed costs: realistic 10 s, range 5 s to 20 s, overhead-bound
OVERHEAD = COMPUTE_BOUND.realized(10.0, 5.0, 20.0, overhead=9.0)


def _host_first(advice: tuple[str, ...]) -> bool:
    return advice[0].startswith("Host-bound")


@pytest.mark.parametrize(
    ("cpu", "busy"),
    [
        # 2 s measured, 2x the 1 s ideal: room_to_improve. 1.8 / 2 = 0.9 exactly: inclusive
        (1.79, False),  # 0.895 of the wall time: the host waited 10.5% of the run
        (1.8, True),
        (1.81, True),  # 0.905
        (1.0, False),  # half the time idle: the device was ahead
        (4.0, True),  # 2x the wall: several host threads busy
    ],
)
def test_room_to_improve_at_and_on_both_sides_of_the_threshold(cpu, busy):
    judged = judge(COMPUTE_BOUND, 2.0, cpu_time=cpu)
    assert judged.verdict is Verdict.ROOM_TO_IMPROVE  # the name does not change
    assert judged.cpu_share == pytest.approx(cpu / 2.0)
    assert judged.host_bound is busy
    assert _host_first(judged.advice) is busy
    # the verdict's own advice follows, whole
    assert judged.advice[int(busy) :] == judge(COMPUTE_BOUND, 2.0).advice


@pytest.mark.parametrize(("cpu", "busy"), [(17.99, False), (18.0, True), (20.0, True)])
def test_an_order_of_magnitude_slower_run_keeps_its_verdict(cpu, busy):
    # 20 s against the 1 s ideal (published runs: none given, so 20 s is beyond them):
    # 18 / 20 = 0.9
    judged = judge(COMPUTE_BOUND, 20.0, cpu_time=cpu)
    assert judged.verdict is Verdict.ORDER_OF_MAGNITUDE_SLOWER
    assert judged.host_bound is busy and _host_first(judged.advice) is busy
    if busy:
        assert "90%" in judged.advice[0] or "100%" in judged.advice[0]


@pytest.mark.parametrize(("cpu", "busy"), [(8.99, False), (9.0, True), (9.01, True)])
def test_overhead_bound_work_with_a_busy_host(cpu, busy):
    # 10 s, within the fixed costs' range of 5 s to 20 s: overhead_bound; 9 / 10 = 0.9
    judged = judge(OVERHEAD, 10.0, cpu_time=cpu)
    assert judged.verdict is Verdict.OVERHEAD_BOUND
    assert judged.host_bound is busy and _host_first(judged.advice) is busy


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [(1.2, Verdict.NEAR_ROOFLINE), (0.5, Verdict.FASTER_THAN_ROOFLINE)],
)
def test_a_busy_host_does_not_limit_a_run_at_or_beyond_its_roofline(measured, verdict):
    # at its roofline the device set the time: the host kept busy (spin-waiting, or working
    # beside it) without being the limit; beyond it the measurement is wrong
    judged = judge(COMPUTE_BOUND, measured, cpu_time=measured)
    assert judged.verdict is verdict
    assert judged.cpu_share == 1.0 and judged.host_bound is False
    assert judged.advice == judge(COMPUTE_BOUND, measured).advice


def test_a_workload_that_does_not_fit_is_not_called_host_bound():
    judged = judge(COMPUTE_BOUND, 5.0, fits=False, cpu_time=5.0)
    assert judged.verdict is Verdict.DOES_NOT_FIT and judged.host_bound is False


def test_without_a_cpu_time_nothing_is_said_of_the_host():
    judged = judge(COMPUTE_BOUND, 2.0)
    assert judged.cpu_share is None and judged.host_bound is None
    assert not _host_first(judged.advice)


@pytest.mark.parametrize("cpu", [0.0, -1.0, math.nan, math.inf])
def test_a_cpu_time_must_be_a_positive_number(cpu):
    with pytest.raises(InvalidInput) as error:
        judge(COMPUTE_BOUND, 2.0, cpu_time=cpu)
    assert error.value.field == "cpu_time_s"


@given(
    share=st.floats(min_value=0.01, max_value=64.0),
    verdict=st.sampled_from(list(Verdict)),
)
def test_host_bound_is_the_threshold_within_the_verdicts_a_host_can_explain(share, verdict):
    explained = verdict in {
        Verdict.OVERHEAD_BOUND,
        Verdict.ROOM_TO_IMPROVE,
        Verdict.ORDER_OF_MAGNITUDE_SLOWER,
    }
    assert host_bound(share, verdict) is (share >= HOST_BOUND and explained)
