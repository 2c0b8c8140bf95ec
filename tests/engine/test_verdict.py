"""The verdict on a measurement (docs/formulas.md, "Verdict"): every boundary at, just below and
just above it, on a roofline whose expected time is exactly one second.

ratio = measured / expected: < 1 faster_than_roofline; 1 to 1.5 near_roofline; 1.5 to 10
room_to_improve; >= 10 order_of_magnitude_slower.
"""

import math

import pytest

from app.engine import (
    Bound,
    Dtype,
    InvalidInput,
    Precision,
    Unit,
    Verdict,
    custom,
    judge,
    place,
)
from app.engine.advice_lines import narrower_dtypes
from tests.engine.chips import ROUND

# 1e9 bytes / 1e9 B/s = 1.0 s of memory time; 1e9 FLOPs / 1e12 = 1 ms of compute: memory-bound,
# expected time exactly 1.0 s.
MEMORY_BOUND = place(custom(1e9, 1e9, Dtype.BF16, Unit.MATRIX), ROUND)
# 1e12 FLOPs / 1e12 FLOP/s = 1.0 s of compute; 1e6 bytes / 1e9 = 1 ms of memory: compute-bound.
COMPUTE_BOUND = place(custom(1e12, 1e6, Dtype.BF16, Unit.MATRIX), ROUND)

FASTER = Verdict.FASTER_THAN_ROOFLINE
NEAR = Verdict.NEAR_ROOFLINE
ROOM = Verdict.ROOM_TO_IMPROVE
ORDER = Verdict.ORDER_OF_MAGNITUDE_SLOWER


def test_the_rooflines_take_exactly_one_second():
    assert MEMORY_BOUND.expected_time == 1.0 and MEMORY_BOUND.bound is Bound.MEMORY
    assert COMPUTE_BOUND.expected_time == 1.0 and COMPUTE_BOUND.bound is Bound.COMPUTE


@pytest.mark.parametrize("roof", [MEMORY_BOUND, COMPUTE_BOUND], ids=["memory", "compute"])
@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        # far below and just below 1x: the measurement beats physics (a 0.9 threshold would
        # call 0.95 and 0.99 near_roofline)
        (0.5, FASTER),
        (0.89, FASTER),
        (0.9, FASTER),
        (0.95, FASTER),
        (0.99, FASTER),
        # 1x exactly is on the roofline, not faster than it
        (1.0, NEAR),
        (1.01, NEAR),
        (1.49, NEAR),
        # 1.5x is where near_roofline ends
        (1.5, ROOM),
        (1.51, ROOM),
        (8.99, ROOM),
        (9.0, ROOM),
        (9.5, ROOM),
        (9.99, ROOM),
        # 10x is an order of magnitude (a threshold of 11 or 12 would call 10 to 11.99 room)
        (10.0, ORDER),
        (10.01, ORDER),
        (11.0, ORDER),
        (11.5, ORDER),
        (12.0, ORDER),
        (1000.0, ORDER),
    ],
)
def test_each_verdict_at_and_on_both_sides_of_its_boundaries(roof, measured, verdict):
    judgement = judge(roof, measured)
    # expected = 1.0 s, so the ratio is the measured time itself
    assert judgement.ratio == measured
    assert judgement.measured_time == measured
    assert judgement.verdict is verdict


def test_faster_than_roofline_says_the_measurement_is_wrong():
    # 0.8 s against 1 s: 1 / 0.8 = 1.25x faster than the hardware allows
    advice = judge(MEMORY_BOUND, 0.8).advice
    assert advice[0] == (
        "Measured 1.25x faster than the hardware allows: the measurement or the inputs are wrong."
    )
    assert "synchronise" in advice[1]
    assert "units" in advice[2]
    assert "chip, dtype and sizes" in advice[3]
    assert len(advice) == 4
    # the same whatever the bound
    assert judge(COMPUTE_BOUND, 0.8).advice == advice


@pytest.mark.parametrize(
    ("weights", "kv", "line"),
    [
        # a bf16 model: its weights to 8 or 4 bits, its KV cache to fp8 (ROUND has no fp8
        # peak, so a chip is not given: the advice does not know it cannot)
        (Dtype.BF16, Dtype.BF16, "bf16 weights to int8 or int4 (quantisation), an fp8 KV cache"),
        # 8-bit weights (llama.cpp's q8_0 is 8.5 bits with its scales): to 4 bits alone
        (Dtype.INT8, Dtype.FP8, "int8 weights to int4 (quantisation)"),
        (Dtype.Q8_0, Dtype.BF16, "q8_0 weights to int4 (quantisation), an fp8 KV cache"),
        # 4-bit weights (GPTQ's 4.16 bits with its scales) and an fp8 cache: nothing narrower
        (Dtype.INT4_G128, Dtype.FP8, None),
        (Dtype.INT4, Dtype.BF16, "an fp8 KV cache"),
    ],
)
def test_memory_bound_advice_narrows_only_what_is_wide(weights, kv, line):
    advice = judge(MEMORY_BOUND, 1.2, precision=Precision(Dtype.BF16, weights, kv)).advice
    assert [a for a in advice if "narrower dtypes" in a] == (
        [] if line is None else [f"Use narrower dtypes: {line}."]
    )
    assert "Fuse" in advice[-2]
    # a kernel's precision is unknown: the usual narrowings
    assert narrower_dtypes(MEMORY_BOUND, None, None) == (
        "fp32 to bf16, bf16 weights to int8 or int4 (quantisation), an fp8 KV cache"
    )


def test_near_roofline_advice_depends_on_the_bound():
    memory = judge(MEMORY_BOUND, 1.2).advice
    assert memory[0] == "Close to the memory roofline: only moving fewer bytes helps."
    assert "narrower dtypes" in memory[1]
    assert "Fuse" in memory[2]
    # no batch advice here: the verdict knows the roofline, not the phase (a decode step's
    # batch is the workload's advice: app/services/work_advice.py)
    assert not any("batch" in line for line in memory)
    # unrealized rooflines: the realistic range is the sustained time, 1.0 s here, so 1.2 s is
    # 1.2x the realistic estimate, above the published range; that line comes last
    assert memory[3].startswith("1.2x the realistic estimate, above the range")
    assert len(memory) == 4
    compute = judge(COMPUTE_BOUND, 1.2).advice
    assert compute[0] == "Close to the compute roofline: the chip is saturated."
    assert "less work" in compute[1]
    assert compute[2] == memory[3]
    assert len(compute) == 3


def test_room_to_improve_names_the_gap_and_the_roof():
    # 3.0 s against 1 s: "3.0x the roofline time"
    memory = judge(MEMORY_BOUND, 3.0).advice
    assert memory[0] == (
        "At 3.0x the roofline time, memory bandwidth-bound: there is room to improve."
    )
    assert "Profile the slowest kernels" in memory[1]
    assert "unfused elementwise ops" in memory[2]
    assert memory[3].startswith("3.0x the realistic estimate")
    assert len(memory) == 4
    compute = judge(COMPUTE_BOUND, 3.0).advice
    assert compute[0] == "At 3.0x the roofline time, compute-bound: there is room to improve."


def test_order_of_magnitude_points_at_structural_causes():
    # 25 s against 1 s: "25.0x the roofline time"
    advice = judge(COMPUTE_BOUND, 25.0).advice
    assert advice[0] == (
        "At 25.0x the roofline time: an order of magnitude off, so something structural is wrong."
    )
    assert "torch.compile" in advice[1]
    assert "host and device" in advice[2]
    assert "Python-loop" in advice[3]
    assert "overhead-bound" in advice[4]
    assert advice[5].startswith("25.0x the realistic estimate")
    assert len(advice) == 6
    assert judge(MEMORY_BOUND, 25.0).advice == advice


def test_communication_counts_in_the_expected_time():
    # 1.0 s of memory time + 1.0 s of communication = 2.0 s: a 2.9 s measurement is 1.45x
    # (near_roofline), though 2.9x the bare memory time would be room_to_improve
    roof = place(custom(1e9, 1e9, Dtype.BF16, Unit.MATRIX), ROUND, communication_time=1.0)
    judgement = judge(roof, 2.9)
    assert judgement.ratio == pytest.approx(1.45)
    assert judgement.verdict is NEAR


@pytest.mark.parametrize("measured", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_a_measured_time_must_be_a_positive_number(measured):
    with pytest.raises(InvalidInput) as info:
        judge(MEMORY_BOUND, measured)
    assert info.value.field == "measured_time_s"


def test_advice_specific_to_the_work_replaces_the_common_gaps():
    # room to improve: the verdict's line, the profiling line, then the work's own lines in
    # place of the generic common gaps, then the published range's line
    specific = ["Wave quantisation: ...", "In tf32 ..."]
    memory = judge(MEMORY_BOUND, 3.0, specific).advice
    assert memory[:2] == judge(MEMORY_BOUND, 3.0).advice[:2]
    assert list(memory[2:4]) == specific
    assert not any("Common gaps" in line for line in memory)
    assert len(memory) == 5
    # other verdicts keep all their lines and add the work's after them
    near = judge(MEMORY_BOUND, 1.2, specific).advice
    assert near[:3] == judge(MEMORY_BOUND, 1.2).advice[:3] and list(near[3:5]) == specific
    # faster than the roofline: the measurement is wrong, nothing to tune
    assert judge(MEMORY_BOUND, 0.8, specific).advice == judge(MEMORY_BOUND, 0.8).advice
