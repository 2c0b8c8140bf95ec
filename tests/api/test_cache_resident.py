"""A run faster than the memory roofline whose working set stays in the chip's last-level cache
is explained as cache-resident through /check (docs/formulas.md#the-cache-roof), with the
catalog's cache figures."""

import pytest

from app.engine.verdict import gate_choices

# The case: an int8 GEMV on an L40S whose 50 MB of weights stay in its 96 MiB L2,
# measured at 3.3 TB/s against the 864 GB/s memory. 1 x 10,000 by 10,000 x 5,000 in int8:
# 10,000 + 5,000 bytes of input and output vectors and 50,000,000 of weights, 50,015,000 B,
# for 2 x 10,000 x 5,000 = 1e8 ops. Memory roof: 50,015,000 / 864e9 = 57.888 us; compute:
# 1e8 / 733e12 = 0.136 us. At 3.3 TB/s: 50,015,000 / 3.3e12 = 15.156 us, ratio 0.262.
GEMV = {"kind": "matmul", "m": 1, "n": 5_000, "k": 10_000, "dtype": "int8"}
BYTES = 10_000 + 5_000 + 10_000 * 5_000
AT_3_3_TBPS = BYTES / 3.3e12


def check(client, chip, workload, measured_time_s):
    """The /check answer for a kernel `workload` on `chip`."""
    body = {"chip": chip, "workload": workload, "measured_time_s": measured_time_s}
    answer = client.post("/check", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_l40s_int8_gemv_at_3_3_tbps_is_cache_resident(client):
    body = check(client, "l40s", GEMV, AT_3_3_TBPS)
    assert body["bytes"] == BYTES
    assert body["expected_time_s"] == pytest.approx(BYTES / 864e9)  # 57.888 us
    assert body["ratio"] == pytest.approx(864e9 / 3.3e12)  # 0.262: below the roofline
    assert body["verdict"] == "cache_resident"
    assert body["against_published"] == "faster_than_published"
    assert body["achieved_bytes_per_s"] == pytest.approx(3.3e12)
    # 50,015,000 B = 47.7 MiB in the 96 MiB L2; 3.3 / 0.864 = 3.8x the memory bandwidth; no
    # L2 bandwidth is catalogued for the L40S, so the compute roof (0.136 us) is the floor left
    first, bound, _flush = body["advice"]
    assert first.startswith("Cache-resident: the working set (47.7 MiB) fits in the 96 MiB L2")
    assert "at 3.3 TB/s, 3.8x the memory bandwidth (0.864 TB/s)" in first
    assert bound == (
        "No L2 bandwidth is catalogued for this chip, so the only floor left is the compute "
        "roof, 136 ns."
    )


def test_a_gemv_too_large_for_the_l2_at_that_rate_is_still_a_timing_error(client):
    # k = 20,000 would make 100,000,000 B of weights and 25,000 of vectors, 100,025,000 B,
    # under the 100,663,296 B (96 MiB) L2; k = 21,000 makes 105,026,000 B, over it
    total = 21_000 + 5_000 + 21_000 * 5_000
    body = check(client, "l40s", {**GEMV, "k": 21_000}, total / 3.3e12)
    assert body["bytes"] == total
    assert body["verdict"] == "faster_than_roofline"


def test_a_cache_roof_with_a_bandwidth_bounds_the_run_from_below(client):
    # a bf16 GEMV on an A100 SXM4 80GB: (4,000 + 4,000) x 2 + 16,000,000 x 2 = 32,016,000 B in
    # its 40 MiB L2; memory roof 32,016,000 / 2.039e12 = 15.70 us, L2 roof 32,016,000 /
    # 7.219e12 = 4.435 us (3.2e7 FLOPs / 312e12 = 0.10 us of compute)
    gemv = {"kind": "matmul", "m": 1, "n": 4_000, "k": 4_000, "dtype": "bf16"}
    l2_roof = 32_016_000 / 7.219e12
    at_roof = check(client, "a100", gemv, l2_roof)
    assert at_roof["verdict"] == "cache_resident"
    assert at_roof["advice"][1] == "The L2 roof (7.22 TB/s) allows 4.43 µs; measured 1.0x that."
    under = check(client, "a100", gemv, l2_roof * 0.99)
    assert under["verdict"] == "faster_than_roofline"


def test_a_ci_gate_can_fail_on_cache_resident(client):
    # fail_on (and --fail-on) take every verdict: a benchmark meant to time memory can fail
    # when its bytes stayed in the cache; the run is stored all the same
    assert "cache_resident" in gate_choices()
    body = {"chip": "l40s", "workload": GEMV, "measured_ms": AT_3_3_TBPS * 1e3}
    gated = client.post("/measurements", params={"fail_on": "cache_resident"}, json=body)
    assert gated.status_code == 412
    assert gated.json()["verdict"] == "cache_resident"
    assert gated.json()["gate"]["reasons"] == ["verdict cache_resident"]


def test_the_catalog_answer_holds_the_cache_and_the_peak_derivation(client):
    l40s = client.get("/chips/l40s").json()["last_level_cache"]
    assert l40s["name"] == "L2"
    assert l40s["size_bytes"]["value"] == 96 * 2**20  # 100,663,296 B
    assert l40s["size_bytes"]["source"]["url"] == "https://arxiv.org/abs/2606.22588"
    assert l40s["bandwidth_bytes_per_s"] is None
    assert "no source found" in l40s["unknown"]
    mi300x = client.get("/chips/mi300x").json()
    derivation = mi300x["peak_derivation"]
    # 304 CUs x 2.1e9 Hz x 2,048 FLOP = 1,307.4e12, the listed bf16 peak
    per_cu = derivation["matrix_flops_per_cycle_per_unit"]["bf16"]["value"]
    product = mi300x["compute_units"]["value"] * derivation["clock_hz"]["value"] * per_cu
    assert product == pytest.approx(mi300x["peak_flops_per_s"]["matrix"]["bf16"]["value"], 1e-3)
    assert client.get("/chips/l4").json()["peak_derivation"] is None


A100_GEMV = {"kind": "matmul", "m": 1, "n": 4_000, "k": 4_000, "dtype": "bf16"}


def test_the_cache_roof_time_is_in_the_answer_where_the_work_fits_and_a_bandwidth_is_known(
    client,
):
    # the A100 GEMV above: 32,016,000 B in the 40 MiB (41,943,040 B) L2; its cache roof is
    # max(3.2e7 FLOPs / 312e12 = 0.103 us, 32,016,000 / 7.219e12 = 4.435 us) = 4.435 us
    body = {"chip": "a100", "workload": A100_GEMV}
    expected = client.post("/expected-time", json=body).json()
    assert expected["cache_roof_time_s"] == pytest.approx(32_016_000 / 7.219e12)
    assert expected["expected_time_s"] == pytest.approx(32_016_000 / 2.039e12)  # 15.70 us
    checked = check(client, "a100", A100_GEMV, 10e-6)
    assert checked["cache_roof_time_s"] == expected["cache_roof_time_s"]
    assert checked["verdict"] == "cache_resident"


def test_no_cache_roof_time_where_the_work_does_not_fit_or_no_bandwidth_is_known(client):
    # k = 6,000: (6,000 + 24,000,000 + 4,000) x 2 = 48,020,000 B, over the A100's 41,943,040 B
    too_large = {**A100_GEMV, "k": 6_000}
    answer = client.post("/expected-time", json={"chip": "a100", "workload": too_large}).json()
    assert answer["bytes"] == 48_020_000
    assert answer["cache_roof_time_s"] is None
    # the L40S GEMV fits in its 96 MiB L2, but no source gives the L2's bandwidth
    l40s = check(client, "l40s", GEMV, AT_3_3_TBPS)
    assert l40s["verdict"] == "cache_resident" and l40s["cache_roof_time_s"] is None
