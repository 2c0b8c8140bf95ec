"""The cache roof (docs/formulas.md#the-cache-roof): a run faster than the memory roofline whose
working set fits in the last-level cache, and not faster than the cache roof, is
cache-resident, not a timing error. Worked examples on round numbers, derived by hand."""

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import AgainstPublished, Dtype, Unit, Verdict, custom, judge, place
from app.engine.cache import cache_resident, cache_roof
from tests.engine.chips import ROUND

# ROUND (1e12 FLOP/s bf16, 1e9 B/s memory) with a 1e6-byte cache read at 1e10 B/s, 10x memory
CACHED = replace(ROUND, id="round-cache", cache_bytes=1e6, cache_bandwidth=1e10)
# the same cache with no bandwidth catalogued
CACHED_NO_BW = replace(CACHED, id="round-cache-no-bw", cache_bandwidth=None)
# 1e6 FLOPs on 1e6 bytes: compute 1e6 / 1e12 = 1 us, memory 1e6 / 1e9 = 1 ms: the roofline time
# is 1 ms; at the cache's 1e10 B/s the bytes take 1e6 / 1e10 = 0.1 ms, so the cache roof is
# max(1 us, 0.1 ms) = 0.1 ms. The working set (1e6 B) is exactly the cache's size: it fits.
FITS = place(custom(1e6, 1e6, Dtype.BF16, Unit.MATRIX), CACHED)
# one byte more than the cache holds
TOO_BIG = place(custom(1e6, 1e6 + 1, Dtype.BF16, Unit.MATRIX), CACHED)


def test_the_roofs_hold_the_times_the_cases_assume():
    assert FITS.expected_time == pytest.approx(1e-3)
    cache = cache_roof(FITS, CACHED)
    assert cache is not None
    assert cache.fits  # a working set of exactly the cache's size fits
    assert cache.time == pytest.approx(1e-4)
    too_big = cache_roof(TOO_BIG, CACHED)
    assert too_big is not None
    assert not too_big.fits


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (0.99e-4, Verdict.FASTER_THAN_ROOFLINE),  # beats even the cache roof (0.1 ms)
        (1e-4, Verdict.CACHE_RESIDENT),  # at the cache roof: inclusive
        (5e-4, Verdict.CACHE_RESIDENT),  # between the cache and memory roofs
        (0.999e-3, Verdict.CACHE_RESIDENT),
        (1e-3, Verdict.NEAR_ROOFLINE),  # at the memory roofline: the ordinary verdicts
    ],
)
def test_a_run_between_the_memory_and_cache_roofs_is_cache_resident(measured, verdict):
    judged = judge(FITS, measured, chip=CACHED)
    assert judged.verdict is verdict
    assert (judged.cache is not None) == (verdict is Verdict.CACHE_RESIDENT)


def test_the_cache_resident_advice_says_why_with_its_numbers():
    # 1e6 B in 0.5 ms: 2e9 B/s = 0.002 TB/s, 2.0x the memory bandwidth of 1e9 B/s; the cache
    # roof of 0.1 ms, measured 5.0x it; 1e6 B = 0.954 MiB
    judged = judge(FITS, 5e-4, chip=CACHED)
    first, bound, _flush = judged.advice
    assert first.startswith("Cache-resident: the working set (0.954 MiB) fits in the 0.954 MiB L2")
    assert "0.002 TB/s, 2.0x the memory bandwidth" in first
    assert bound == "The L2 roof (0.01 TB/s) allows 100 µs; measured 5.0x that."


def test_a_working_set_larger_than_the_cache_stays_faster_than_the_roofline():
    # TOO_BIG's roofline is (1e6 + 1) / 1e9 s, a hair over 1 ms; half of it beats the memory
    # roof and the bytes cannot all be in the cache
    judged = judge(TOO_BIG, 5e-4, chip=CACHED)
    assert judged.verdict is Verdict.FASTER_THAN_ROOFLINE
    assert judged.cache is None


def test_without_a_chip_or_a_cache_size_nothing_is_explained_by_a_cache():
    assert judge(FITS, 5e-4).verdict is Verdict.FASTER_THAN_ROOFLINE
    assert judge(FITS, 5e-4, chip=ROUND).verdict is Verdict.FASTER_THAN_ROOFLINE
    assert cache_roof(FITS, ROUND) is None


def test_without_a_cache_bandwidth_the_compute_roof_is_the_floor_left():
    # no bandwidth: the cache roof is the compute term alone, 1e6 / 1e12 = 1 us
    cache = cache_roof(FITS, CACHED_NO_BW)
    assert cache is not None
    assert cache.time == pytest.approx(1e-6)
    judged = judge(FITS, 5e-4, chip=CACHED_NO_BW)
    assert judged.verdict is Verdict.CACHE_RESIDENT
    assert judged.advice[1] == (
        "No L2 bandwidth is catalogued for this chip, so the only floor left is the compute "
        "roof, 1 µs."
    )
    # faster than the compute roof: no cache explains that
    assert judge(FITS, 0.5e-6, chip=CACHED_NO_BW).verdict is Verdict.FASTER_THAN_ROOFLINE


def test_compute_bound_work_gains_nothing_from_the_cache():
    # 1e12 FLOPs on 1e6 B: compute 1 s, memory 1 ms; the cache roof is max(1 s, 0.1 ms) = 1 s,
    # the roofline time itself, so a run under it is faster than both
    compute = place(custom(1e12, 1e6, Dtype.BF16, Unit.MATRIX), CACHED)
    assert judge(compute, 0.9, chip=CACHED).verdict is Verdict.FASTER_THAN_ROOFLINE


def test_work_that_does_not_fit_in_memory_is_not_called_cache_resident():
    assert judge(FITS, 5e-4, fits=False, chip=CACHED).verdict is Verdict.DOES_NOT_FIT


@given(
    working_set=st.floats(min_value=1.0, max_value=1e8),
    flops=st.floats(min_value=0.0, max_value=1e12),
    measured_share=st.floats(min_value=1e-6, max_value=10.0),
    bandwidth=st.sampled_from([1e10, 1e11, None]),
)
def test_cache_resident_means_faster_than_memory_within_the_cache(
    working_set, flops, measured_share, bandwidth
):
    chip = replace(CACHED, cache_bandwidth=bandwidth)
    roof = place(custom(flops, working_set, Dtype.BF16, Unit.MATRIX), chip)
    measured = roof.expected_time * measured_share
    judged = judge(roof, measured, chip=chip)
    cache = cache_resident(roof, chip, measured)
    assert (judged.verdict is Verdict.CACHE_RESIDENT) == (cache is not None)
    if cache is not None:
        # below the roofline, within the cache's roof, with a working set that fits
        assert judged.ratio < 1
        assert working_set <= chip.cache_bytes
        assert measured >= cache.time
        assert judged.against_published is AgainstPublished.FASTER
        assert math.isfinite(judged.floor_ratio)
    # the cache roof is never above the memory roofline: a cache is no slower than memory
    roofed = cache_roof(roof, chip)
    assert roofed is not None
    assert roofed.time <= roof.expected_time * (1 + 1e-12)
