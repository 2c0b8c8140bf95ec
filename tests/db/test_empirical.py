"""Empirical profiles from `roofcheck probe` (SQLite and PostgreSQL), on GET /chips/{chip}."""

import math

import pytest
from fastapi.testclient import TestClient

from app.cli import ERROR, run
from app.db import empirical
from app.main import create_app
from app.settings import Settings

PROFILE = {
    "device": "NVIDIA A100-SXM4-80GB",
    "backend": "torch",
    "date": "2026-11-23",
    "copy_bytes_per_s": 1.7e12,
    "matmul_flops_per_s": {"bf16": 2.7e14, "fp8": 1e14},
    "software": {"torch": "2.5.1"},
}
DEVICES = {"a100": "NVIDIA A100-SXM4-80GB", "h100": "NVIDIA H100 80GB HBM3"}
HTML = {"accept": "text/html"}  # a browser: the chip's page


def test_a_stored_profile_shows_beside_the_datasheet(db_client):
    assert db_client.get("/chips/a100").json()["empirical"] is None
    stored = db_client.post("/chips/a100/empirical", json=PROFILE)
    assert stored.status_code == 201, stored.text
    body = db_client.get("/chips/a100").json()["empirical"]
    assert body["id"] == stored.json()["id"]
    assert body["device"] == PROFILE["device"] and body["software"] == {"torch": "2.5.1"}
    # 1.7 TB/s of the A100 80GB's 2.039 TB/s = 0.8337; 270 of 312 TFLOP/s bf16 = 0.8654
    assert math.isclose(body["copy_fraction_of_datasheet"], 1.7e12 / 2.039e12)
    assert math.isclose(body["matmul_fraction_of_datasheet"]["bf16"], 270 / 312)
    # the A100 has no fp8 matrix peak: the rate is kept, without a fraction
    assert body["matmul_flops_per_s"]["fp8"] == 1e14
    assert "fp8" not in body["matmul_fraction_of_datasheet"]
    newer = db_client.post(
        "/chips/a100-sxm4-80gb/empirical", json={**PROFILE, "date": "2026-11-24"}
    )
    assert db_client.get("/chips/a100").json()["empirical"]["id"] == newer.json()["id"]
    assert db_client.get("/chips/h100").json()["empirical"] is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("copy_bytes_per_s", 0),
        ("copy_bytes_per_s", 1e19),
        ("matmul_flops_per_s", {"bf17": 1e12}),
        ("matmul_flops_per_s", {}),
        ("backend", "jax"),
        ("date", "yesterday"),
        ("bogus", 1),  # an unknown field is refused, not silently dropped
        ("matmul_n", -1),
    ],
)
def test_bad_profiles_are_422_naming_the_field(db_client, field, value):
    answer = db_client.post("/chips/a100/empirical", json={**PROFILE, field: value})
    assert answer.status_code == 422
    assert field in answer.text


def test_unknown_chip_is_404(db_client):
    assert db_client.post("/chips/a101/empirical", json=PROFILE).status_code == 404


def test_probe_submits_through_the_cli(db_client, monkeypatch, capsys):
    """On a CPU, `probe --submit a100` once stored the CPU's profile as the A100's (then shown
    at 0.4% of its datasheet): it is refused, and stored only with --force, marked forced."""
    posted = {}

    def fake_post(url, body, headers=None):
        posted["url"], posted["headers"] = url, headers
        answer = db_client.post(url.removeprefix("http://roofcheck"), json=body)
        return answer.status_code, answer.json()

    monkeypatch.setattr("app.cli._post", fake_post)
    monkeypatch.setenv("ROOFCHECK_TOKEN", "probe-token")
    command = ["probe", "--copy-mib", "8", "--n", "256", "--submit", "a100"]
    command += ["--url", "http://roofcheck"]
    assert run(command) == ERROR
    assert "not a NVIDIA A100 SXM4 80GB" in capsys.readouterr().err
    assert db_client.get("/chips/a100").json()["empirical"] is None
    assert run([*command, "--force"]) == 0
    assert posted["url"] == "http://roofcheck/chips/a100/empirical"
    assert posted["headers"] == {"authorization": "Bearer probe-token"}
    stored = db_client.get("/chips/a100").json()["empirical"]
    assert stored["backend"] == "torch" and stored["copy_bytes_per_s"] > 0
    assert stored["forced"] is True
    assert "stored" in capsys.readouterr().out
    assert "forced: not measured on this chip" in db_client.get("/chips/a100", headers=HTML).text


@pytest.mark.parametrize(
    ("device", "backend", "chip"),
    [
        ("x86_64", "numpy", "a100"),
        ("NVIDIA A10", "torch", "a100"),
        ("NVIDIA L40S", "torch", "l4"),
        ("NVIDIA GH200 480GB", "torch", "h200"),
        ("AMD Instinct MI250X", "torch", "mi300x"),
    ],
)
def test_a_profile_from_another_device_is_refused(db_client, device, backend, chip):
    body = {**PROFILE, "device": device, "backend": backend}
    refused = db_client.post(f"/chips/{chip}/empirical", json=body)
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "device"] and "force" in error["msg"]
    assert db_client.get(f"/chips/{chip}").json()["empirical"] is None


@pytest.mark.parametrize(
    ("device", "chip"),
    [
        ("NVIDIA A100-SXM4-80GB", "a100-pcie"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
    ],
)
def test_a_profile_from_the_chip_is_stored_unforced(db_client, device, chip):
    stored = db_client.post(f"/chips/{chip}/empirical", json={**PROFILE, "device": device})
    assert stored.status_code == 201, stored.text
    assert stored.json()["forced"] is False


def test_a_profile_is_deleted_by_its_writer_only(empty_database):
    tokens = "alice:alice-token-0123456789,bob:bob-token-0123456789"
    app = create_app(Settings(database_url=empty_database, write_tokens=tokens))
    alice = {"authorization": "Bearer alice-token-0123456789"}
    bob = {"authorization": "Bearer bob-token-0123456789"}
    with TestClient(app) as client:
        first = client.post("/chips/a100/empirical", json=PROFILE, headers=bob).json()
        forced = {**PROFILE, "backend": "numpy", "force": True}
        wrong = client.post("/chips/a100/empirical", json=forced, headers=alice).json()
        assert wrong["written_by"] == "alice"
        path = f"/chips/a100/empirical/{wrong['id']}"
        assert client.delete(path).status_code == 401
        assert client.delete(path, headers=bob).status_code == 403
        assert (
            client.delete(f"/chips/h100/empirical/{wrong['id']}", headers=alice).status_code == 404
        )
        assert client.delete(path, headers=alice).status_code == 204
        assert client.delete(path, headers=alice).status_code == 404
        assert client.get("/chips/a100").json()["empirical"]["id"] == first["id"]
    app.state.database.engine.dispose()


def test_the_chip_page_shows_the_newest_profile_beside_the_datasheet(db_client):
    assert "Measured copy" not in db_client.get("/chips/a100", headers=HTML).text
    db_client.post("/chips/a100/empirical", json=PROFILE)
    page = db_client.get("/chips/a100", headers=HTML).text
    section = page[page.index('id="chip-a100-sxm4-80gb"') :]
    section = section[: section.index("</section>")]
    assert "Measured copy (torch, NVIDIA A100-SXM4-80GB, 2026-11-23)" in section
    assert "Measured bf16 matmul" in section and "Measured fp8 matmul" in section
    assert "83" in section  # 1.7 / 2.039 = 83.4% of the datasheet bandwidth


def test_the_newest_profile_of_each_chip_is_the_one_read(db_client, db_app):
    """Several profiles of two chips: one row per chip comes back, the newest (on SQLite and
    PostgreSQL: a window over each chip's profiles)."""
    for chip, copy in (("a100", 1.5e12), ("h100", 3.0e12), ("a100", 1.7e12), ("h100", 3.1e12)):
        body = {**PROFILE, "device": DEVICES[chip], "copy_bytes_per_s": copy}
        assert db_client.post(f"/chips/{chip}/empirical", json=body).status_code == 201
    newest = empirical.latest_by_chip(db_app.state.database.sessions())
    assert {chip: row.copy_bytes_per_s for chip, row in newest.items()} == {
        "a100-sxm4-80gb": 1.7e12,
        "h100-sxm5-80gb": 3.1e12,
    }


def test_measured_ceilings_stand_in_for_the_datasheet_ones(db_client):
    query = "/expected-time?chip=a100&model=llama-8b&batch=8&ceilings=empirical"
    missing = db_client.get(query)
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["query", "ceilings"]
    assert "roofcheck probe --submit a100-sxm4-80gb" in missing.json()["detail"][0]["msg"]
    stored = db_client.post("/chips/a100/empirical", json=PROFILE).json()
    datasheet = db_client.get(query.replace("empirical", "datasheet")).json()
    measured = db_client.get(query).json()
    assert measured["ceilings"] == "empirical" and datasheet["ceilings"] == "datasheet"
    # decode is memory-bound: the sustained time is the memory term over the bandwidth share,
    # 1.7 TB/s of 2.039 TB/s measured (0.8337) instead of the catalog's 0.871
    memory = measured["memory_time_s"]
    assert measured["sustained_time_s"] == pytest.approx(memory / (1.7e12 / 2.039e12))
    assert datasheet["sustained_time_s"] == pytest.approx(memory / 0.871)
    assert measured["expected_time_s"] == datasheet["expected_time_s"]  # the ideal is physics
    assert any(f"probe #{stored['id']}" in line for line in measured["assumptions"])
    # not kept in the answer cache: a newer profile changes the next answer at once
    faster = {**PROFILE, "date": "2026-11-25", "copy_bytes_per_s": 1.9e12}
    db_client.post("/chips/a100/empirical", json=faster)
    again = db_client.get(query).json()
    assert again["sustained_time_s"] == pytest.approx(memory / (1.9e12 / 2.039e12))


def test_a_check_on_measured_ceilings_reads_the_newest_profile(db_client):
    """Not kept in the expectation memo either: the next check, with only a new measured
    time, is judged on the newer profile."""
    query = "/check?chip=a100&model=llama-8b&batch=8&ceilings=empirical&measured_ms="
    db_client.post("/chips/a100/empirical", json=PROFILE)
    first = db_client.get(f"{query}12").json()
    memory = first["memory_time_s"]
    assert first["sustained_time_s"] == pytest.approx(memory / (1.7e12 / 2.039e12))
    faster = {**PROFILE, "date": "2026-11-25", "copy_bytes_per_s": 1.9e12}
    db_client.post("/chips/a100/empirical", json=faster)
    again = db_client.get(f"{query}13").json()
    assert again["sustained_time_s"] == pytest.approx(memory / (1.9e12 / 2.039e12))
