"""POST /check/trace's breakdown of a GPU step and its host copies, through the ASGI app, on
tests/traces/gpu_step.json (built from Kineto's documented events: tests/traces/record.py)
and on the H100 recordings."""

import json
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parent.parent / "traces"
US = 1e-6


def post(client, name, chip="h100"):
    return client.post(
        "/check/trace",
        params={"chip": chip},
        content=(TRACES / f"{name}.json").read_bytes(),
        headers={"content-type": "application/json"},
    )


def test_the_steps_parts_their_limits_and_what_to_attack_first(client):
    # worked by hand in tests/engine/test_trace_breakdown.py, on the catalog's H100 SXM5
    # (67 TFLOP/s fp32, 3.35 TB/s, a PCIe Gen5 x16 host link: 64 GB/s each way). Within the
    # 100 us step: kernels 45, copies 20, launch gaps 9 (3 x 2.31 = 6.93 allowed), host
    # waits 5, synchronisation 18, other 3. The mm's roofline: 2 x 1024^3 / 67e12 =
    # 32.05 us (lost 7.95); the cos's 1.28e6 / 3.35e12 = 0.382 us (lost 4.62): the kernels'
    # limit 45 - 7.95 - 4.62 = 32.43 us. The copy: 640,000 / 64e9 = 10 us.
    response = post(client, "gpu_step")
    assert response.status_code == 200
    body = response.json()
    found = body["breakdown"]
    assert found["window_s"] == pytest.approx(100 * US) and found["steps"] == 1
    parts = {p["part"]: p for p in found["parts"]}
    assert list(parts) == [
        "kernels",
        "copies",
        "launch_gaps",
        "host_waits",
        "synchronisation",
        "other",
    ]
    expected = {
        "kernels": (45, 32.43),
        "copies": (20, 10),
        "launch_gaps": (9, 6.93),
        "host_waits": (5, 0),
        "synchronisation": (18, 0),
        "other": (3, 0),
    }
    for name, (time, limit) in expected.items():
        part = parts[name]
        assert part["time_s"] == pytest.approx(time * US), name
        assert part["limit_s"] == pytest.approx(limit * US, abs=0.01 * US), name
        assert part["share"] == pytest.approx(time / 100), name
        assert part["over_s"] == pytest.approx(max(0.0, part["time_s"] - part["limit_s"]))
    assert sum(p["time_s"] for p in parts.values()) == pytest.approx(found["window_s"])
    assert parts["launch_gaps"]["limit"] == "3 launches, 2.31 µs each"
    assert found["attack_first"] == "synchronisation"
    assert found["attack_first_advice"].startswith("Attack the synchronisation first: 18 µs")
    assert found["mapped_kernel_time_s"] == pytest.approx(45 * US)
    assert found["unmapped_kernel_time_s"] == pytest.approx(0, abs=1e-12)


def test_the_host_copies_and_their_share_of_the_measured_time(client):
    # measured: mm 40 + cos 5 + the copy 20 = 65 us; the copy at the link's full rate 10 us:
    # at least 10 / 65 = 15.4% of it. aten::copy_ launched only the memcpy: it is no row of
    # the operators' table, its copy is priced in `copies`.
    body = post(client, "gpu_step").json()
    assert body["measured_time_s"] == pytest.approx(65 * US)
    assert body["modelled_time_s"] == pytest.approx(45 * US)
    assert body["not_modelled_time_s"] == 0 and body["not_modelled_share"] == 0
    assert [op["name"] for op in body["ops"]] == ["aten::mm", "aten::cos"]
    copies = body["copies"]
    assert copies["copies"] == [
        {
            "direction": "h2d",
            "memory": "pinned",
            "bytes": 640_000,
            "count": 1,
            "measured_time_s": pytest.approx(20 * US),
            "expected_time_s": pytest.approx(10 * US),
            "realistic_time_s": pytest.approx(10 * US / 0.75),
            "launched_by": ["aten::copy_"],
        }
    ]
    assert copies["share"] == pytest.approx(10 / 65)
    assert copies["unpriced"] is None
    [line] = [a for a in body["advice"] if "host <-> device copies" in a]
    assert "(1 h2d from pinned memory, launched by aten::copy_)" in line
    assert "take at least 15% of the measured time" in line


def test_a_real_h100_recording_has_a_breakdown_and_no_copies(client):
    body = post(client, "gpu_linear").json()
    found = body["breakdown"]
    assert found["steps"] == 0 and body["copies"] is None
    assert sum(p["time_s"] for p in found["parts"]) == pytest.approx(found["window_s"])
    assert all(p["time_s"] >= 0 and p["limit_s"] >= 0 for p in found["parts"])
    assert found["attack_first"] == "host_waits"


def test_a_cpu_trace_has_neither(client):
    response = client.post(
        "/check/trace",
        params={"chip": "a100", "allow_device_mismatch": "true"},
        content=(TRACES / "matmul.json").read_bytes(),
        headers={"content-type": "application/json"},
    )
    body = response.json()
    assert body["breakdown"] is None and body["copies"] is None


def test_the_new_fields_are_in_the_openapi_schema(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    check = schemas["TraceCheck"]["properties"]
    assert {"breakdown", "copies"} <= set(check)
    assert "attack_first" in schemas["TraceBreakdown"]["properties"]
    assert json.dumps(schemas["TracePart"]).count("launch_gaps") >= 1
