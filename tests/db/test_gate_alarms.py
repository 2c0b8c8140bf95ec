"""The regression gate's alarms on SQLite and PostgreSQL: a suspected run recorded, a run
posted to confirm it (confirmed, cleared or still open), a false-alarm mark that leaves the
measurement as stored, and the workload's record of them."""

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.db.test_regression_gate import MATMUL, post

# ten single-repeat runs: median 1.005 ms, MAD 0.025 ms, slowest 1.30 ms (tests/engine); the
# slow one first, so that none of them raised an alarm
WINDOW = (1.30, 0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04)


def _suspected(client):
    """The window, then a run of one repeat at 1.15 ms: +14.4%, suspected (1/11 > 0.05 at
    best), 3 repeats needed (worked by hand in tests/engine/test_rank_power.py)."""
    for ms in WINDOW:
        post(client, measured_ms=[ms])
    run = post(client, measured_ms=[1.15])
    assert run["comparison"]["suspected"] and run["comparison"]["repeats_needed"] == 3
    return run


def _record(client, key):
    response = client.get(f"/workloads/{key}")
    assert response.status_code == 200, response.text
    return response.json()["gate_record"]


def test_a_confirming_run_confirms_a_suspected_regression(db_client):
    suspected = _suspected(db_client)
    record = _record(db_client, suspected["workload_key"])
    assert (record["raised"], record["suspected"], record["open"]) == (1, 1, 1)
    # three fresh repeats at 1.14, 1.15, 1.16 ms against the same ten runs (not against the
    # suspected one): each beats nine and loses to 1.30, U = 27 of 30, p = 7/286 = 0.0245
    # (tests/db/test_regression_gate.py): a regression, which fails the gate
    confirming = post(
        db_client,
        status=412,
        params={"fail_on": "regression"},
        measured_ms=[1.14, 1.15, 1.16],
        confirms=suspected["id"],
    )
    compared = confirming["comparison"]
    assert compared["confirms"] == suspected["id"] and compared["confirmation"] == "confirmed"
    assert suspected["id"] not in compared["window"]["run_ids"]
    assert len(compared["window"]["run_ids"]) == 10
    assert compared["p_value"] == pytest.approx(7 / 286) and compared["regression"] is True
    record = _record(db_client, suspected["workload_key"])
    assert (record["raised"], record["confirmed"], record["open"]) == (1, 1, 0)
    assert record["latest"][0]["decided_by"] == confirming["id"]
    # decided: it cannot be confirmed again
    again = db_client.post(
        "/measurements",
        json={
            "chip": "a100",
            "workload": MATMUL,
            "measured_ms": [1.2],
            "confirms": suspected["id"],
        },
    )
    assert again.status_code == 422 and again.json()["detail"][0]["loc"] == ["body", "confirms"]


@pytest.mark.parametrize(
    ("repeats", "outcome"),
    [
        # 0.99, 1.00, 1.01 ms: -0.5% on the median, within the threshold: cleared
        ((0.99, 1.00, 1.01), "cleared"),
        # 0.97, 1.24, 1.24 ms: mean 1.15, +14.4%, but 0.97 ranks among the window (U = 1.5 + 9
        # + 9 = 19.5 of 30, p far above 0.05), within 1.30 x 1.1: still suspected, open
        ((0.97, 1.24, 1.24), "open"),
    ],
)
def test_a_confirming_run_clears_or_leaves_it_open(db_client, repeats, outcome):
    suspected = _suspected(db_client)
    answer = post(db_client, measured_ms=list(repeats), confirms=suspected["id"])
    assert answer["comparison"]["confirmation"] == outcome
    record = _record(db_client, suspected["workload_key"])
    assert (record["cleared"], record["open"]) == ((1, 0) if outcome == "cleared" else (0, 1))
    assert record["raised"] == 1  # the confirming run raises no alarm of its own


def test_only_an_open_suspected_run_of_the_same_workload_can_be_confirmed(db_client):
    first = post(db_client, measured_ms=[1.0])
    other = {"kind": "matmul", "m": 1024, "n": 1024, "k": 1024, "dtype": "bf16"}
    for confirms, workload, why in (
        (first["id"], MATMUL, "has no open suspected regression"),
        (first["id"], other, "another workload"),
        (999, MATMUL, "no earlier stored measurement 999"),
    ):
        response = db_client.post(
            "/measurements",
            json={"chip": "a100", "workload": workload, "measured_ms": [1], "confirms": confirms},
        )
        assert response.status_code == 422, response.text
        assert why in response.json()["detail"][0]["msg"]
    # refused before anything was stored: the workload has its one run
    assert db_client.get(f"/workloads/{first['workload_key']}").json()["count"] == 1


def test_a_false_alarm_mark_leaves_the_measurement_as_stored(db_client):
    suspected = _suspected(db_client)
    before = db_client.get(f"/measurements/{suspected['id']}").json()
    url = f"/measurements/{suspected['id']}/false-alarm"
    marked = db_client.post(url, json={"note": "the runner was shared that night"})
    assert marked.status_code == 200, marked.text
    alarm = marked.json()
    assert alarm["marked_false"] and alarm["note"] == "the runner was shared that night"
    assert alarm["raised"] == "suspected" and alarm["marked_false_by"] is None  # writes open
    # marked again: the first mark stands
    second = db_client.post(url, json={"note": "another reason"}).json()
    assert second["note"] == alarm["note"] and second["marked_false_at"] == alarm["marked_false_at"]
    assert db_client.get(f"/measurements/{suspected['id']}").json() == before
    record = _record(db_client, suspected["workload_key"])
    assert (record["raised"], record["marked_false"]) == (1, 1)
    # the run still counts in the next run's window
    nxt = post(db_client, measured_ms=[1.0])
    assert suspected["id"] in nxt["comparison"]["window"]["run_ids"]


def test_marking_a_run_without_an_alarm_or_no_run(db_client):
    calm = post(db_client, measured_ms=[1.0])
    response = db_client.post(f"/measurements/{calm['id']}/false-alarm")
    assert response.status_code == 409
    assert response.json()["detail"]["message"] == (
        f"measurement {calm['id']} raised no alarm when stored"
    )
    assert db_client.post("/measurements/999/false-alarm").status_code == 404


def test_a_false_alarm_mark_needs_a_write_token_where_writes_are_restricted(empty_database):
    token = "t" * 32
    app = create_app(Settings(database_url=empty_database, write_tokens=f"ci:{token}"))
    auth = {"authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        for ms in (*WINDOW, 1.15):
            stored = client.post(
                "/measurements",
                json={"chip": "a100", "workload": MATMUL, "measured_ms": [ms]},
                headers=auth,
            )
        url = f"/measurements/{stored.json()['id']}/false-alarm"
        assert client.post(url).status_code == 401
        marked = client.post(url, headers=auth)
        assert marked.status_code == 200 and marked.json()["marked_false_by"] == "ci"
    app.state.database.engine.dispose()
