"""A write commits whole or not at all; a retried post with an idempotency key stores once."""

from concurrent.futures import ThreadPoolExecutor

from app.schemas.measurement_bodies import MeasurementIn
from app.services import recording

POST = {
    "chip": "a100",
    "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
    "measured_ms": 10.0,
    "label": "retry",
}


def total(client) -> int:
    count: int = client.get("/measurements").json()["total"]
    return count


def test_a_write_that_fails_part_way_stores_nothing(db_client):
    # the row is added, then its baseline is looked up in the same transaction and missing
    response = db_client.post("/measurements", json=POST | {"baseline_id": 999_999})
    assert response.status_code == 404
    assert total(db_client) == 0


def test_a_retried_post_with_the_same_key_stores_once(db_client):
    key = {"idempotency-key": "ci-job-42-attempt"}
    first = db_client.post("/measurements", json=POST, headers=key)
    again = db_client.post("/measurements", json=POST, headers=key)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    other = db_client.post("/measurements", json=POST, headers={"idempotency-key": "other"})
    assert other.json()["id"] != first.json()["id"]
    assert db_client.post("/measurements", json=POST).json()["id"] > other.json()["id"]
    assert total(db_client) == 3


def test_concurrent_retries_store_once_and_keys_belong_to_their_writer(db_app, db_client):
    catalogs, sessions = db_app.state.catalogs, db_app.state.database.sessions()
    body = MeasurementIn.model_validate(POST)

    def post(writer: str) -> int:
        stored = recording.record(catalogs, sessions, body, writer=writer, idempotency_key="same")
        return stored.id

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(post, ["ci"] * 16 + ["alice"] * 16))
    assert len(set(ids[:16])) == 1  # every retry of ci's post answers its first store
    assert len(set(ids[16:])) == 1
    assert ids[0] != ids[16]  # alice's key "same" is not ci's
    assert total(db_client) == 2
