"""The `copy` workload through the ASGI app: worked answers, and bad input a 422 naming its
field (docs/formulas.md#copies)."""

import pytest

GB = 1e9


def post(client, path, workload, chip="a100", **top):
    return client.post(path, json={"chip": chip, "workload": {"kind": "copy", **workload}, **top})


def test_a_gigabyte_to_an_a100_from_pageable_memory(client):
    # the catalog's A100 SXM4 80GB: PCIe Gen4 x16, 64 GB/s bidirectional, 32 GB/s each way.
    # link 1e9 / 32e9 = 31.25 ms (expected); pageable at 0.75 x 5.5/11.5 = 35.870% of it:
    # 87.121 ms realistic; pinned would take 31.25 / 0.75 = 41.667 ms
    body = post(client, "/expected-time", {"bytes": GB}).json()
    assert body["workload"] == {
        "kind": "copy",
        "bytes": GB,
        "direction": "h2d",
        "pinned": False,
        "overlap_s": None,
    }
    assert body["flops"] == 0
    assert body["communication_time_s"] == pytest.approx(31.25e-3)
    assert body["expected_time_s"] == pytest.approx(31.25e-3)
    assert body["realistic_time_s"] == pytest.approx(87.121e-3, rel=1e-4)
    assert body["bound"] == "communication"
    assert any("41.7 ms" in line for line in body["explanation"])
    assert any("pageable" in line for line in body["assumptions"])


def test_a_pinned_copy_beside_compute_says_what_the_step_still_waits_for(client):
    # 41.667 ms pinned, beside 30 ms of compute: 11.7 ms exposed
    body = post(client, "/expected-time", {"bytes": GB, "pinned": True, "overlap_s": 0.03}).json()
    assert body["realistic_time_s"] == pytest.approx(41.667e-3, rel=1e-4)
    assert any("still waits 11.7 ms" in line for line in body["explanation"])


def test_a_device_copy_and_a_check_of_it(client):
    # d2d: 2e9 B at 2.039 TB/s = 0.98087 ms ideal, memory-bound; 1.2 ms measured is 1.22x
    body = post(client, "/check", {"bytes": GB, "direction": "d2d"}, measured_ms=1.2).json()
    assert body["bytes"] == 2 * GB
    assert body["expected_time_s"] == pytest.approx(0.98087e-3, rel=1e-4)
    assert body["bound"] == "memory"
    assert body["ratio"] == pytest.approx(1.2e-3 / 0.98087e-3, rel=1e-4)


def test_gh200_copies_over_nvlink_c2c(client):
    # GH200: NVLink-C2C, 900 GB/s bidirectional, 450 GB/s each way: 1e9 / 450e9 = 2.2222 ms
    body = post(client, "/expected-time", {"bytes": GB, "direction": "d2h"}, chip="gh200").json()
    assert body["expected_time_s"] == pytest.approx(2.2222e-3, rel=1e-4)


@pytest.mark.parametrize(
    ("workload", "chip", "field"),
    [
        ({"bytes": GB, "overlap_s": 0.01}, "a100", "overlap_s"),  # pageable cannot overlap
        ({"bytes": GB, "direction": "d2d", "pinned": True}, "a100", "pinned"),
        ({"bytes": GB}, "apple-m2-max", "direction"),  # no host link: unified memory
        ({"bytes": 0}, "a100", "bytes"),
        ({"bytes": GB, "direction": "sideways"}, "a100", "direction"),
    ],
)
def test_bad_copies_are_422_naming_the_field(client, workload, chip, field):
    response = post(client, "/expected-time", workload, chip=chip)
    assert response.status_code == 422, response.text
    assert field in response.text


def test_a_measured_copy_is_stored_and_read_back(client):
    # pinned h2d, 1 GB on an A100: 31.25 ms ideal; 45 ms measured is 1.44x the ideal
    body = {"chip": "a100", "workload": {"kind": "copy", "bytes": GB, "pinned": True}}
    response = client.post("/measurements", json={**body, "measured_ms": 45.0, "label": "h2d"})
    assert response.status_code == 201, response.text
    stored = response.json()
    assert stored["workload"]["kind"] == "copy"
    assert client.get(f"/measurements/{stored['id']}").status_code == 200
