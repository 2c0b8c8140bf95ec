"""A NUL character anywhere in a request is a 422 naming where, on both backends alike
(PostgreSQL cannot store one: it once answered 500 where SQLite stored it), and nothing is
stored."""

import pytest

MATMUL = {"kind": "matmul", "m": 64, "n": 64, "k": 64}
MEASUREMENT = {"chip": "a100", "workload": MATMUL, "measured_ms": 1.0}
PROFILE = {
    "device": "cpu",
    "backend": "numpy",
    "date": "2026-11-23",
    "copy_bytes_per_s": 3.6e10,
    "matmul_flops_per_s": {"fp32": 7e10},
}
KEY = "0" * 63


STORED = "/measurements"
TRANSFORMER = {"kind": "transformer", "model": "l\x00"}


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        (STORED, MEASUREMENT | {"label": "a\x00b"}, ["body", "label"]),
        (STORED, MEASUREMENT | {"notes": "\x00"}, ["body", "notes"]),
        (STORED, MEASUREMENT | {"software": {"torch": "2\x00"}}, ["body", "software", "torch"]),
        (STORED, MEASUREMENT | {"software": {"to\x00rch": "2"}}, ["body", "software"]),
        (STORED, MEASUREMENT | {"workload": TRANSFORMER}, ["body", "workload", "model"]),
        (STORED, MEASUREMENT | {"measured_ms": [1.0], "branch": "x\x00"}, ["body", "branch"]),
        ("/check", MEASUREMENT | {"chip": "a100\x00"}, ["body", "chip"]),
        ("/chips/a100/empirical", PROFILE | {"device": "cpu\x00"}, ["body", "device"]),
    ],
)
def test_a_nul_in_a_json_body_is_a_422_naming_the_field(db_client, path, body, loc):
    response = db_client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == [
        {"loc": loc, "msg": "NUL characters are not allowed", "type": "string_nul"}
    ]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert db_client.get("/measurements").json()["total"] == 0
    assert db_client.get("/chips/a100").json()["empirical"] is None


@pytest.mark.parametrize(
    ("url", "loc"),
    [
        ("/measurements?label=a%00b", ["query", "label"]),
        ("/measurements?chip=a100&branch=%00", ["query", "branch"]),
        ("/measurements?model=%00&limit=5", ["query", "model"]),
        ("/measurements?%00=1", ["query"]),
        ("/history?label=%00", ["query", "label"]),
        ("/history/" + KEY + "%00", ["path"]),
        ("/workloads/" + KEY + "%00", ["path"]),
        ("/measurements/1%00", ["path"]),
        ("/chips/a100%00", ["path"]),
        ("/expected-time?chip=a100%00&model=llama-8b", ["query", "chip"]),
        ("/?chip=a100&model=llama-8b&label=%00", ["query", "label"]),
    ],
)
def test_a_nul_in_a_path_or_a_filter_is_a_422_naming_where(db_client, url, loc):
    for accept in ("application/json", "text/html"):
        response = db_client.get(url, headers={"accept": accept})
        assert response.status_code == 422, response.text
        assert response.json()["detail"][0]["loc"] == loc


def test_a_nul_in_the_store_form_is_a_422_and_nothing_is_stored(db_client):
    form = {"chip": "a100", "kind": "matmul", "m": "64", "n": "64", "k": "64"}
    form |= {"measured_ms": "1", "label": "x\x00"}
    origin = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
    response = db_client.post("/save", data=form, headers=origin)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "label"]
    assert db_client.get("/measurements").json()["total"] == 0


def test_text_without_nul_is_stored_as_given(db_client):
    body = MEASUREMENT | {"label": "u0000 \\u0000 %00", "notes": "tab\there ü"}
    stored = db_client.post("/measurements", json=body)
    assert stored.status_code == 201
    assert stored.json()["label"] == "u0000 \\u0000 %00"
