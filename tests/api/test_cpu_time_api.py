"""The host's CPU time beside the measured time (docs/api.md#verdicts): `cpu_time_s` or
`cpu_ms` on /check and POST /measurements; at >= 0.9 of the measured time, in a run slower
than its floor, `host_bound` is true and the host-bound advice comes first; the verdict keeps
its name."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

# a 1024^3 bf16 GEMM on an H100: 2 * 1024^3 = 2.15 GFLOP at 989 TFLOP/s, 2.2 us ideal.
GEMM = {"kind": "matmul", "m": 1024, "n": 1024, "k": 1024, "dtype": "bf16"}
# 2^-17 s = 7.63 us measured, about 3.5x the ideal: room_to_improve. A power of two, so that
# 0.9 * T / T is 0.9 exactly, at the threshold.
T = 2.0**-17


def _check(client: TestClient, **body: object) -> dict[str, Any]:
    answer = client.post("/check", json={"chip": "h100", "workload": GEMM, **body})
    assert answer.status_code == 200, answer.text
    judged: dict[str, Any] = answer.json()
    return judged


@pytest.mark.parametrize(("share", "busy"), [(0.89, False), (0.9, True), (0.91, True)])
def test_a_busy_host_at_and_on_both_sides_of_the_threshold(client, share, busy):
    answer = _check(client, measured_time_s=T, cpu_time_s=share * T)
    plain = _check(client, measured_time_s=T)
    assert answer["verdict"] == plain["verdict"] == "room_to_improve"
    assert answer["cpu_time_s"] == share * T
    assert answer["cpu_share"] == pytest.approx(share)
    assert answer["host_bound"] is busy
    assert answer["advice"][0].startswith("Host-bound") is busy
    assert answer["advice"][int(busy) :] == plain["advice"]
    assert plain["host_bound"] is None and plain["cpu_share"] is None


def test_cpu_ms_is_the_same_time_in_milliseconds(client):
    answer = _check(client, measured_ms=T * 1e3, cpu_ms=T * 1e3)
    assert answer["cpu_time_s"] == pytest.approx(T)
    assert answer["cpu_share"] == pytest.approx(1.0) and answer["host_bound"] is True


def test_a_run_at_its_roofline_is_not_host_bound(client):
    # 2.5 us: within 1.5x of the 2.2 us ideal, whatever the host did meanwhile
    answer = _check(client, measured_time_s=2.5e-6, cpu_time_s=2.5e-6)
    assert answer["verdict"] == "near_roofline" and answer["host_bound"] is False


@pytest.mark.parametrize(
    "times",
    [
        {"cpu_time_s": 0},
        {"cpu_time_s": -1e-3},
        {"cpu_time_s": 1e8},
        {"cpu_time_s": "fast"},
        {"cpu_ms": 0},
        {"cpu_time_s": 1e-5, "cpu_ms": 0.01},
    ],
)
def test_a_bad_cpu_time_is_a_422_naming_it(client, times):
    answer = client.post(
        "/check", json={"chip": "h100", "workload": GEMM, "measured_time_s": T, **times}
    )
    assert answer.status_code == 422
    assert "cpu_" in answer.text


def test_a_stored_measurement_keeps_its_cpu_time_and_host_bound(client):
    body = {"chip": "h100", "workload": GEMM, "measured_time_s": T, "cpu_time_s": T}
    response = client.post("/measurements", json={**body, "label": "host"})
    assert response.status_code == 201, response.text
    stored = client.get(f"/measurements/{response.json()['id']}").json()
    expectation = stored.get("expectation", stored)
    assert expectation["host_bound"] is True
    assert expectation["cpu_time_s"] == T
    # judged again, it is judged with the CPU time it was stored with
    again = client.post(f"/measurements/{response.json()['id']}/rejudge").json()
    assert again["rejudged"]["cpu_time_s"] == T
    assert again["rejudged"]["host_bound"] is True
