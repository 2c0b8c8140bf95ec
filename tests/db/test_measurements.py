"""Stored measurements on SQLite and PostgreSQL: round trips, filters, comparisons, restarts."""

import asyncio
import copy
import json
import math
from datetime import UTC, datetime, timedelta

import anyio.to_thread
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.catalog.loader import CatalogError
from app.db.models import MeasurementRow
from app.engine.compare import summarise_times
from app.main import create_app
from app.schemas.answers import RepeatsOut
from app.schemas.comparison_bodies import Comparison
from app.schemas.measurement_bodies import MeasurementIn
from app.services import baselines, recording
from app.services.baselines import seconds_of
from app.settings import Settings

MATMUL = {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
# 2 * 4096^3 FLOPs at 312 TFLOP/s on an A100: 440.5 us expected
DECODE = {"kind": "transformer", "model": "llama-8b", "batch": 1, "seq_len": 1024}


def submit(client, workload=MATMUL, status=201, **fields):
    default = {} if "measured_time_s" in fields else {"measured_ms": 1.0}
    body = {"chip": "a100", "workload": workload, **default, **fields}
    response = client.post("/measurements", json=body)
    assert response.status_code == status, response.text
    return response.json()


def test_every_field_round_trips(db_client):
    fields = {
        "measured_ms": [0.61, 0.6, 0.62],
        "label": "nightly matmul ü",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "branch": "feature/fused-attention",
        "hostname": "gpu-node-17.example",
        "software": {"torch": "2.5.1+cu124", "cuda": "12.4"},
        "notes": "warm-up 10 iterations; median of 100\nsecond line",
    }
    posted = submit(db_client, **fields)
    stored = db_client.get(f"/measurements/{posted['id']}").json()
    assert stored == posted | {"comparison": stored["comparison"]}
    for key, value in fields.items():
        if key == "measured_ms":
            assert stored["measured_values"] == value
            assert stored["measured_unit"] == "ms"
        else:
            assert stored[key] == value
    # the arithmetic mean of the repeats is what was judged: 0.61 ms
    assert stored["measured_time_s"] == pytest.approx(0.61e-3)
    assert stored["repeats"]["count"] == 3
    assert stored["expected_time_s"] == pytest.approx(440.5e-6, rel=1e-3)
    assert stored["ratio"] == pytest.approx(0.61e-3 / stored["expected_time_s"])
    assert stored["verdict"] == "near_roofline"
    # each key said once: the judged answer leaves out what the measurement already says
    assert "verdict" not in stored["expectation"] and stored["expectation"]["bound"] == "compute"
    assert not set(stored["expectation"]) & (set(stored) - {"expectation"})
    assert stored["workload"]["allow_tf32"] is False  # defaults stored with the workload
    assert datetime.fromisoformat(stored["created_at"]).tzinfo is not None


def test_a_restarted_service_finds_every_measurement_with_its_verdict(db_settings, db_client):
    first = submit(db_client, measured_time_s=0.005)
    again = create_app(db_settings)
    with TestClient(again) as client:
        stored = client.get(f"/measurements/{first['id']}").json()
    again.state.database.engine.dispose()
    assert stored["verdict"] == first["verdict"] == "order_of_magnitude_slower"
    assert stored["expectation"] == first["expectation"]


def test_filters_and_pagination(db_client):
    ids = [
        submit(db_client, label="a", branch="main")["id"],
        submit(db_client, label="b", branch="main")["id"],
        submit(db_client, DECODE, label="a", branch="dev", measured_ms=5)["id"],
    ]
    page = db_client.get("/measurements", params={"limit": 2}).json()
    assert page["total"] == 3
    assert [m["id"] for m in page["items"]] == [ids[2], ids[1]]  # newest first
    rest = db_client.get("/measurements", params={"limit": 2, "offset": 2}).json()
    assert [m["id"] for m in rest["items"]] == [ids[0]]

    def listed(**params):
        return [m["id"] for m in db_client.get("/measurements", params=params).json()["items"]]

    assert listed(label="a") == [ids[2], ids[0]]
    assert listed(branch="main") == [ids[1], ids[0]]
    assert listed(model="llama-3.1-8b") == [ids[2]]
    assert listed(phase="decode") == [ids[2]]
    assert listed(chip="a100-sxm4-80gb") == [ids[2], ids[1], ids[0]]
    assert listed(chip="h100-sxm5-80gb") == []
    now = datetime.now(UTC)
    assert len(listed(since=(now - timedelta(hours=1)).isoformat())) == 3
    assert listed(until=(now - timedelta(hours=1)).isoformat()) == []
    assert db_client.get("/measurements", params={"limit": 0}).status_code == 422


def test_comparison_history_best_latest_and_regression(db_client):
    # times 1.0, 0.8, 0.9 ms of the same matmul
    runs = [submit(db_client, measured_ms=t) for t in (1.0, 0.8, 0.9)]
    latest = runs[-1]
    # 0.9 / 0.8 - 1 = +12.5% vs the previous run, but the window of both earlier runs has
    # the median (1.0 + 0.8) / 2 = 0.9 ms: +0%, no regression (one noisy-fast run is not a bar)
    assert latest["comparison"]["previous_id"] == runs[1]["id"]
    assert latest["comparison"]["change_vs_previous"] == pytest.approx(0.125)
    assert latest["comparison"]["window"]["median_time_s"] == pytest.approx(0.9e-3)
    assert latest["comparison"]["change_vs_median"] == pytest.approx(0.0, abs=1e-12)
    assert latest["comparison"]["regression"] is False
    key = latest["workload_key"]
    body = db_client.get(f"/workloads/{key}").json()
    assert [p["id"] for p in body["history"]] == [r["id"] for r in runs]
    assert body["best"]["id"] == runs[1]["id"]
    assert body["latest"]["id"] == runs[2]["id"]
    # arithmetic mean of times: (1.0 + 0.8 + 0.9) / 3 = 0.9 ms
    assert body["means"]["time_s"] == pytest.approx(0.9e-3)
    # geometric mean of efficiencies e / t_i: e / (1.0 * 0.8 * 0.9)^(1/3) ms
    expected = latest["expected_time_s"]
    assert body["means"]["efficiency"] == pytest.approx(expected / (0.72e-9) ** (1 / 3))
    # against the first run as baseline: 0.9 / 1.0 - 1 = -10%: no regression
    vs_first = db_client.get(f"/workloads/{key}", params={"baseline_id": runs[0]["id"]}).json()
    assert vs_first["comparison"]["change_vs_baseline"] == pytest.approx(-0.1)
    assert vs_first["comparison"]["regression"] is False
    lenient = db_client.get(f"/workloads/{key}", params={"threshold": 0.2}).json()
    assert lenient["comparison"]["regression"] is False


def test_baseline_branch_compares_with_the_latest_run_on_that_branch(db_client):
    main = submit(db_client, measured_ms=1.0, branch="main")
    submit(db_client, measured_ms=1.5, branch="dev")
    pr = submit(db_client, measured_ms=1.05, branch="dev", baseline_branch="main")
    assert pr["comparison"]["baseline_id"] == main["id"]
    assert pr["comparison"]["change_vs_baseline"] == pytest.approx(0.05)
    assert pr["comparison"]["regression"] is False  # 5% < 10%, though +30% vs previous (1.5)
    other = submit(db_client, DECODE, measured_ms=5)
    bad = db_client.post(
        "/measurements",
        json={"chip": "a100", "workload": MATMUL, "measured_ms": 1, "baseline_id": other["id"]},
    )
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"][-1] == "baseline_id"


def test_transformer_history_reports_measured_tokens_per_second(db_client):
    a = submit(db_client, {**DECODE, "batch": 8}, measured_ms=10)
    submit(db_client, {**DECODE, "batch": 8}, measured_ms=20)
    body = db_client.get(f"/workloads/{a['workload_key']}").json()
    # batch 8 decode: 8 tokens per step -> 800 and 400 tokens/s; harmonic mean 533.3
    assert [p["tokens_per_s"] for p in body["history"]] == pytest.approx([800, 400])
    assert body["means"]["tokens_per_s"] == pytest.approx(1600 / 3)


def test_overhead_is_fitted_across_sizes_of_one_workload(db_client):
    # matmuls of growing n, each measured as 5 ms + expected / 0.5
    runs = []
    for n in (1024, 2048, 4096):
        expected = db_client.post(
            "/expected-time", json={"chip": "a100", "workload": {**MATMUL, "n": n}}
        ).json()["expected_time_s"]
        runs.append(submit(db_client, {**MATMUL, "n": n}, measured_time_s=5e-3 + 2 * expected))
    body = db_client.get(f"/workloads/{runs[0]['workload_key']}").json()
    overhead = body["overhead"]
    assert overhead["points"] == 3
    assert overhead["overhead_s"] == pytest.approx(5e-3, rel=1e-6)
    assert overhead["efficiency"] == pytest.approx(0.5, rel=1e-6)
    # n = 1024: expected 110 us, the work 220 us < 5 ms: overhead-bound
    assert overhead["overhead_bound"] is True
    assert "overhead-bound" in overhead["explanation"]
    # on the line: R^2 = 1, no residual
    assert overhead["sizes"] == 3 and overhead["good_fit"] is True
    assert overhead["r_squared"] == pytest.approx(1.0)
    assert "Fitted over 3 runs at 3 sizes (R² 1.00, RMS residual 0%" in overhead["explanation"]


def _fitted(db_client, efficiency):
    """Matmuls of n = 1024, 2048, 4096 each measured as 5 ms + expected / `efficiency`: the
    overhead fitted over them."""
    for n in (1024, 2048, 4096):
        workload = {**MATMUL, "n": n}
        expected = db_client.post(
            "/expected-time", json={"chip": "a100", "workload": workload}
        ).json()["expected_time_s"]
        latest = submit(db_client, workload, measured_time_s=5e-3 + expected / efficiency)
    return db_client.get(f"/workloads/{latest['workload_key']}").json()["overhead"]


def test_a_fit_faster_than_the_roofline_is_said_to_contradict_it(db_client):
    # 5 ms + expected / 3.66: every run is slower than its roofline (5 ms of overhead), but
    # the line grows by 0.27 s per second of roofline time: 366% efficiency, which no chip
    # reaches. Neither the overhead nor the efficiency is reported as a finding.
    overhead = _fitted(db_client, 3.66)
    assert overhead["contradicts_roofline"] is True
    assert overhead["overhead_s"] is None and overhead["efficiency"] is None
    assert overhead["overhead_bound"] is False and overhead["good_fit"] is True
    assert "366% of the roofline" in overhead["explanation"]
    assert "contradicts the roofline" in overhead["explanation"]
    assert "overhead of" not in overhead["explanation"]


def test_a_fit_just_under_the_roofline_is_reported(db_client):
    # 5 ms + expected / 0.99: just under 100%, a possible run: overhead and efficiency said
    overhead = _fitted(db_client, 0.99)
    assert overhead["contradicts_roofline"] is False
    assert overhead["overhead_s"] == pytest.approx(5e-3, rel=1e-6)
    assert overhead["efficiency"] == pytest.approx(0.99, rel=1e-6)
    assert "plus the roofline time at 99% efficiency" in overhead["explanation"]


def _at_sizes(db_client, times_ms):
    """Store a matmul of each n in `times_ms` at its time; the latest's workload history."""
    for n, ms in times_ms:
        latest = submit(db_client, {**MATMUL, "n": n}, measured_ms=ms)
    return db_client.get(f"/workloads/{latest['workload_key']}").json()


def test_no_overhead_is_claimed_from_fewer_than_three_sizes(db_client):
    # 8 runs at 2 sizes, all 10 ms: any line fits two sizes, so nothing is concluded
    body = _at_sizes(db_client, [(1024, 10), (2048, 10)] * 4)
    assert body["overhead"] is None
    # a third size, still 10 ms: 9 runs at 3 sizes, all fixed overhead
    overhead = _at_sizes(db_client, [(4096, 10)])["overhead"]
    assert (overhead["points"], overhead["sizes"]) == (9, 3)
    assert overhead["efficiency"] is None and overhead["good_fit"] is True
    assert overhead["explanation"].startswith(
        "Time does not grow with the work across 9 runs at 3 sizes"
    )


def test_a_poor_overhead_fit_concludes_nothing(db_client):
    # n = 1024, 2048, 4096 (roofline 110, 220, 440 us) in 2, 20 and 4 ms: no line through
    # them; the residual is most of the mean time
    overhead = _at_sizes(db_client, [(1024, 2), (2048, 20), (4096, 4)])["overhead"]
    assert overhead["good_fit"] is False and overhead["overhead_bound"] is False
    assert overhead["relative_residual"] > 0.5
    assert "do not follow a fixed overhead plus the roofline time" in overhead["explanation"]
    assert "too noisy to say how much of them is overhead" in overhead["explanation"]


def test_unknown_ids_and_keys_are_404(db_client):
    assert db_client.get("/measurements/999999").status_code == 404
    assert db_client.get("/workloads/" + "0" * 64).status_code == 404
    assert db_client.post("/measurements/999999/rejudge").status_code == 404
    assert db_client.get("/measurements/0").status_code == 422


def test_bad_measurements_are_rejected_and_nothing_is_stored(db_client):
    for body in (
        {"chip": "a100", "workload": MATMUL},
        {"chip": "a100", "workload": MATMUL, "measured_ms": [1, -1]},
        {"chip": "a100", "workload": MATMUL, "measured_ms": []},
        {"chip": "a100", "workload": MATMUL, "measured_ms": 1, "label": "x" * 201},
        {"chip": "nope", "workload": MATMUL, "measured_ms": 1},
    ):
        assert db_client.post("/measurements", json=body).status_code in (404, 422)
    assert db_client.get("/measurements").json()["total"] == 0


def test_an_edited_catalog_must_bump_its_version(db_settings, db_client, tmp_path):
    stored = submit(db_client, measured_ms=0.6)
    data = json.loads(db_settings.chip_catalog.read_text())
    edited = copy.deepcopy(data)
    a100 = next(c for c in edited["chips"] if c["id"] == "a100-sxm4-80gb")
    # someone "fixes" a figure (its note no longer quoting 624 as the sparse figure)
    a100["peak_flops_per_s"]["matrix"]["bf16"].update(value=624e12, note="re-read")
    a100["peak_flops_per_s"]["sparse"]["bf16"].update(value=1248e12)  # kept at twice the dense
    path = tmp_path / "chip_catalog.json"
    path.write_text(json.dumps(edited))
    same_version = Settings(database_url=db_settings.database_url, chip_catalog=path)
    with pytest.raises(CatalogError, match="without bumping its version"):
        create_app(same_version)

    edited["version"] = data["version"] + "-fixed"
    path.write_text(json.dumps(edited))
    bumped = create_app(Settings(database_url=db_settings.database_url, chip_catalog=path))
    with TestClient(bumped) as client:
        versions = client.get("/catalog/versions").json()
        assert [v["version"] for v in versions["versions"]] == [data["version"], edited["version"]]
        # the stored measurement keeps the expectation it was judged against ...
        kept = client.get(f"/measurements/{stored['id']}").json()
        assert kept["catalog_version"] == data["version"]
        assert kept["expected_time_s"] == stored["expected_time_s"]
        # ... and can be re-judged on request against the new one: half the compute time
        again = client.post(f"/measurements/{stored['id']}/rejudge").json()
        assert again["rejudged"]["catalog_version"] == edited["version"]
        assert again["rejudged"]["expected_time_s"] == pytest.approx(stored["expected_time_s"] / 2)
        assert again["stored_expected_time_s"] == stored["expected_time_s"]
        old = client.post(
            f"/measurements/{stored['id']}/rejudge", params={"catalog_version": data["version"]}
        ).json()
        assert old["rejudged"]["expected_time_s"] == stored["expected_time_s"]
        assert client.get(f"/measurements/{stored['id']}").json() == kept
        # the old version still answers calculations
        answer = client.get("/chips/a100", params={"catalog_version": data["version"]}).json()
        assert answer["peak_flops_per_s"]["matrix"]["bf16"]["value"] == 312e12
    bumped.state.database.engine.dispose()


def test_a_ci_gate_fails_with_412_and_still_stores(db_client):
    fine = db_client.post(
        "/measurements",
        params={"fail_on": "order_of_magnitude_slower"},
        json={"chip": "a100", "workload": MATMUL, "measured_ms": 0.5},
    )
    assert fine.status_code == 201
    assert fine.json()["gate"] == {
        "fail_on": ["order_of_magnitude_slower"],
        "failed": False,
        "reasons": [],
    }
    slow = db_client.post(
        "/measurements",
        params={"fail_on": "order_of_magnitude_slower,regression"},
        json={"chip": "a100", "workload": MATMUL, "measured_ms": 9},
    )
    assert slow.status_code == 412
    gate = slow.json()["gate"]
    assert gate["failed"] is True
    # 9 / 0.5 - 1 = +1700% in time, 0.5 / 9 - 1 = -94.4% of the roofline; one repeat each
    assert gate["reasons"] == [
        "verdict order_of_magnitude_slower",
        "regression: time +1700.0%; fraction of the roofline -94.4% vs the median of 1 run "
        "(threshold 10.0%; too few repeats to test)",
    ]
    assert db_client.get(f"/measurements/{slow.json()['id']}").status_code == 200
    bad = db_client.post(
        "/measurements",
        params={"fail_on": "slow"},
        json={"chip": "a100", "workload": MATMUL, "measured_ms": 1},
    )
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"][-1] == "fail_on"
    assert db_client.get("/measurements").json()["total"] == 2  # the bad request stored nothing


def test_a_workload_key_ignores_defaults_and_training_fields_outside_training(db_client):
    # the same decode written three ways: omitted defaults, explicit defaults, and a training
    # field that has no effect in decode; all three are one workload with one history
    plain = submit(db_client, DECODE)
    explicit = submit(db_client, DECODE | {"gen_len": 256, "tp": 1, "optimizer": "adamw"})
    inert = submit(db_client, DECODE | {"dp": 4})
    assert plain["workload_key"] == explicit["workload_key"] == inert["workload_key"]
    history = db_client.get(f"/workloads/{plain['workload_key']}").json()["history"]
    assert [run["id"] for run in history][-3:] == [plain["id"], explicit["id"], inert["id"]]
    # in training the parallel layout is part of the workload
    one = submit(db_client, DECODE | {"phase": "training", "batch": 8})
    four = submit(db_client, DECODE | {"phase": "training", "batch": 8, "dp": 4})
    assert one["workload_key"] != four["workload_key"]


@pytest.mark.parametrize(
    "fields",
    [
        {"measured_time_s": 1e-310},  # a denormal
        {"measured_time_s": 1e-300},
        {"measured_time_s": 1e9},
        {"measured_ms": 1e-297},
        {"measured_ms": [1.0, 1e11]},
    ],
)
def test_a_measured_time_outside_1_ns_to_1e7_s_is_a_422_and_nothing_is_stored(db_client, fields):
    submit(db_client, measured_time_s=1.0)  # an earlier run, for a comparison to overflow
    response = db_client.post("/measurements", json={"chip": "a100", "workload": MATMUL, **fields})
    assert response.status_code == 422
    [field] = fields
    assert any(e["loc"][:2] == ["body", field] for e in response.json()["detail"])
    assert db_client.get("/measurements").json()["total"] == 1


def test_the_extreme_times_allowed_store_and_read_back(db_client):
    first = submit(db_client, measured_time_s=1e-9)
    last = submit(db_client, measured_time_s=1e7)
    assert last["comparison"]["change_vs_previous"] == pytest.approx(1e16)
    for stored in (first, last):
        assert db_client.get(f"/measurements/{stored['id']}").status_code == 200
        html = db_client.get(f"/measurements/{stored['id']}", headers={"accept": "text/html"})
        assert html.status_code == 200
    assert db_client.get(f"/workloads/{last['workload_key']}").status_code == 200


def test_a_measurement_whose_answer_fails_is_not_stored(db_client, monkeypatch):
    """Storing and answering are one transaction: an answer that cannot be built (here an
    overflowing comparison) rolls the write back, so a retry does not store it twice."""
    real = baselines.comparison

    def overflowing(*args, **kwargs):
        return real(*args, **kwargs).model_dump() | {"change_vs_previous": math.inf}

    submit(db_client)
    monkeypatch.setattr(recording, "comparison", lambda *a, **k: Comparison(**overflowing(*a, **k)))
    body = {"chip": "a100", "workload": MATMUL, "measured_ms": 2}
    assert db_client.post("/measurements", json=body).status_code == 500
    assert db_client.get("/measurements").json()["total"] == 1


@pytest.mark.parametrize("path", ["/history/{key}", "/workloads/{key}"])
@pytest.mark.parametrize("accept", ["text/html", "application/json"])
def test_a_baseline_id_beyond_the_id_column_is_a_422(db_client, path, accept):
    """2^31 does not fit PostgreSQL's INTEGER id: once a 500 there."""
    url = path.format(key=submit(db_client)["workload_key"])
    response = db_client.get(url, params={"baseline_id": 2**31}, headers={"accept": accept})
    assert response.status_code == 422
    assert db_client.get(url, params={"baseline_id": 2**31 - 1}).status_code == 404  # no such run


def test_the_longest_owner_and_idempotency_key_are_stored(empty_database):
    owner, token = "o" * 63, "t" * 16
    settings = Settings(database_url=empty_database, write_tokens=f"{owner}:{token}")
    app = create_app(settings)
    with TestClient(app) as client:
        headers = {"authorization": f"Bearer {token}", "idempotency-key": "k" * 200}
        body = {"chip": "a100", "workload": MATMUL, "measured_ms": 1.0}
        first = client.post("/measurements", json=body, headers=headers)
        assert first.status_code == 201
        again = client.post("/measurements", json=body, headers=headers)
        assert again.json()["id"] == first.json()["id"]
    app.state.database.engine.dispose()


def test_an_idempotency_key_reused_for_another_body_is_a_422(db_client):
    headers = {"idempotency-key": "run-42"}
    body = {"chip": "a100", "workload": MATMUL, "measured_ms": 1.0, "label": "a"}
    first = db_client.post("/measurements", json=body, headers=headers)
    assert first.status_code == 201
    for change in ({"measured_ms": 2.0}, {"label": "b"}, {"workload": DECODE}, {"stack": "eager"}):
        reused = db_client.post("/measurements", json=body | change, headers=headers)
        assert reused.status_code == 422, change
        [error] = reused.json()["detail"]
        assert error["loc"] == ["header", "Idempotency-Key"]
        assert "different measurement" in error["msg"]
    retried = db_client.post("/measurements", json=body, headers=headers)
    assert retried.json()["id"] == first.json()["id"]
    assert db_client.get("/measurements").json()["total"] == 1


@pytest.mark.parametrize(
    "query",
    [
        "since=0001-01-01T00:00:00%2B00:01",  # year 0 in UTC: once a 500 on PostgreSQL
        "until=9999-12-31T23:59:59-01:00",  # year 10000 in UTC
        "since=1969-12-31",
    ],
)
def test_a_filter_date_outside_1970_to_9999_is_a_422(db_client, query):
    for accept in ("application/json", "text/html"):
        response = db_client.get(f"/measurements?{query}", headers={"accept": accept})
        assert response.status_code == 422
    assert db_client.get("/measurements?since=1970-01-01&until=9999-12-30").status_code == 200


def test_times_stored_before_they_were_bounded_still_read(db_app, db_client):
    # rows stored before the 1 ns .. 1e7 s bound (1e-300 s, then 1e9 s for the same work) are
    # kept as they are; reading them must not fail: 1e9 / 1e-300 overflows a float, so the
    # change is unknown (null) yet still a regression, and the chart leaves out a rate of
    # 2 * 4096^3 / 1e-300 FLOP/s that no float holds
    tiny, huge = submit(db_client), submit(db_client)
    with db_app.state.database.sessions()() as session, session.begin():
        for stored, seconds in ((tiny, 1e-300), (huge, 1e9)):
            row = session.get(MeasurementRow, stored["id"])
            assert row is not None
            row.measured_time_s, row.measured_values = seconds, [seconds]
            row.ratio = seconds / row.expected_time_s
    comparison = db_client.get(f"/measurements/{huge['id']}").json()["comparison"]
    assert comparison["change_vs_previous"] is None and comparison["regression"] is True
    key = huge["workload_key"]
    for path in (f"/measurements/{tiny['id']}", f"/measurements/{huge['id']}", f"/workloads/{key}"):
        for accept in ("application/json", "text/html"):
            assert db_client.get(path, headers={"accept": accept}).status_code == 200, path
    assert db_client.get(f"/history/{key}").status_code == 200


def test_list_filters_take_aliases_in_any_case(db_client):
    # stored under the catalog ids a100-sxm4-80gb and llama-3.1-8b; a filter by alias, in any
    # case, finds it as every other endpoint would; a name no catalog knows matches nothing
    submit(db_client, workload=DECODE)
    for query in ("chip=a100", "chip=A100", "model=Llama-8B", "chip=A100&model=llama-8b"):
        assert db_client.get(f"/measurements?{query}").json()["total"] == 1, query
        page = db_client.get(f"/history?{query}")
        assert page.status_code == 200 and "/measurements/" in page.text, query
    assert db_client.get("/measurements?chip=h100").json()["total"] == 0
    assert db_client.get("/measurements?chip=no-such-chip").json()["total"] == 0


def test_the_previous_run_is_the_newest_earlier_one_of_the_same_workload(db_client):
    # two workloads on two chips, interleaved: each run compares with the last run before it
    # of its own workload key, never a later one, nor one of another size or chip
    posts = [
        ("a", {"chip": "a100", "workload": MATMUL}),
        ("b", {"chip": "h100", "workload": MATMUL}),
        ("c", {"chip": "a100", "workload": {**MATMUL, "n": 2048}}),
        ("a", {"chip": "a100", "workload": MATMUL}),
        ("b", {"chip": "h100", "workload": MATMUL}),
        ("a", {"chip": "a100", "workload": MATMUL}),
    ]
    ids: dict[str, list[int]] = {}
    times: dict[str, int] = {}
    for milliseconds, (name, body) in enumerate(posts, start=1):
        stored = submit(db_client, body["workload"], chip=body["chip"], measured_ms=milliseconds)
        earlier = ids.setdefault(name, [])
        comparison = stored["comparison"]
        if earlier:
            assert comparison["previous_id"] == earlier[-1]
            assert comparison["change_vs_previous"] == pytest.approx(milliseconds / times[name] - 1)
        else:
            assert comparison["previous_id"] is None and comparison["change_vs_previous"] is None
        earlier.append(stored["id"])
        times[name] = milliseconds
    # read back later, an older run still compares with the run before it, not a newer one
    first_a, second_a, _ = ids["a"]
    read = db_client.get(f"/measurements/{second_a}").json()["comparison"]
    assert read["previous_id"] == first_a
    assert read["change_vs_previous"] == pytest.approx(4 / 1 - 1)
    assert db_client.get(f"/measurements/{first_a}").json()["comparison"]["previous_id"] is None


def test_the_json_columns_read_back_as_judged(db_app, db_client):
    """A post's JSON columns (its workload, values, expectation and software) read back, on
    both backends, equal to those of the row judged from the same body, float for float."""
    body = {
        "chip": "a100",
        "workload": DECODE,
        "measured_ms": [5.0, 5.5, 1e-05],
        "software": {"torch": "2.5.1", "ü": "ß"},
    }
    posted = db_client.post("/measurements", json=body)
    assert posted.status_code == 201
    judged = recording.judged_row(db_app.state.catalogs, MeasurementIn.model_validate(body))
    columns = ("workload", "measured_values", "expectation", "software")
    with db_app.state.database.engine.connect() as connection:
        stored = connection.execute(sa.text(f"SELECT {', '.join(columns)} FROM measurements"))
        [row] = stored.all()
    for column, value in zip(columns, row, strict=True):
        read = json.loads(value) if isinstance(value, str) else value  # SQLite: the text stored
        assert read == getattr(judged, column), column
    read_back = db_client.get(f"/measurements/{posted.json()['id']}").json()
    assert read_back["repeats"] == posted.json()["repeats"]


def test_a_post_takes_one_hop_off_the_event_loop(db_client, monkeypatch):
    """The dependencies (body, writer, catalogs, sessions) are async; judging, the idempotency
    lookup, storing and comparing share the request's one hop to a thread, by either road
    (Starlette's thread pool or asyncio's executor)."""
    submit(db_client)  # the database is ready: the sessions' dependency no longer waits
    hops = []
    run_sync, run_in_executor = anyio.to_thread.run_sync, asyncio.BaseEventLoop.run_in_executor

    async def counted(function, *args, **kwargs):
        hops.append(function)
        return await run_sync(function, *args, **kwargs)

    def counted_executor(loop, executor, function, *args):
        hops.append(function)
        return run_in_executor(loop, executor, function, *args)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", counted_executor)
    response = db_client.post(
        "/measurements",
        params={"fail_on": "regression"},
        json={"chip": "a100", "workload": MATMUL, "measured_ms": 1.0},
        headers={"idempotency-key": "one-hop"},
    )
    assert response.status_code == 201
    assert len(hops) == 1


def test_a_retry_answers_as_the_first_post_did_baseline_included(db_client):
    main = submit(db_client, measured_ms=1.0, branch="main")
    body = {"chip": "a100", "workload": MATMUL, "measured_ms": 1.2}
    for baseline in ({"baseline_branch": "main"}, {"baseline_id": main["id"]}):
        headers = {"idempotency-key": f"retry-{next(iter(baseline))}"}
        first = db_client.post("/measurements", json=body | baseline, headers=headers)
        again = db_client.post("/measurements", json=body | baseline, headers=headers)
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()
        assert first.json()["comparison"]["baseline_id"] == main["id"]
        assert first.json()["comparison"]["change_vs_baseline"] == pytest.approx(0.2)
    assert db_client.get("/measurements").json()["total"] == 3


def test_a_measurement_reads_back_with_the_repeats_it_was_judged_by(db_app, db_client):
    """Its repeats are the expectation's (what it was judged by); a row stored before the
    expectation kept them has them summarised again from its values, to the same numbers.
    9.8, 10.1 and 10.0 ms: mean 29.9 / 3 = 9.9667 ms, sample stdev sqrt((0.1667^2 + 0.1333^2
    + 0.0333^2) / 2) = 0.1528 ms."""
    posted = submit(db_client, measured_ms=[9.8, 10.1, 10.0])
    assert posted["repeats"] == {
        "count": 3,
        "mean_s": pytest.approx(9.9667e-3, rel=1e-4),
        "min_s": pytest.approx(9.8e-3),
        "max_s": pytest.approx(10.1e-3),
        "stdev_s": pytest.approx(0.15275e-3, rel=1e-4),
    }
    assert db_client.get(f"/measurements/{posted['id']}").json()["repeats"] == posted["repeats"]
    with db_app.state.database.sessions()() as session, session.begin():
        row = session.get(MeasurementRow, posted["id"])
        assert row is not None
        row.expectation = {k: v for k, v in row.expectation.items() if k != "repeats"}
    assert db_client.get(f"/measurements/{posted['id']}").json()["repeats"] == posted["repeats"]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(1e-6, 1e6, allow_nan=False), min_size=1, max_size=20),
    unit=st.sampled_from(["measured_ms", "measured_time_s"]),
)
def test_the_repeats_judged_are_those_summarised_from_the_stored_values(app, values, unit):
    """What a fresh write answers (the expectation's repeats) is what reading the row back
    summarised from its values before it kept them: the same floats."""
    body = MeasurementIn.model_validate({"chip": "a100", "workload": MATMUL, unit: values})
    row = recording.judged_row(app.state.catalogs, body)
    summarised = summarise_times(seconds_of(row.measured_values, row.measured_unit))
    assert row.expectation["repeats"] == RepeatsOut.of(summarised).model_dump(mode="json")
