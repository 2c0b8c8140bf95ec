"""The database away at start-up or mid-request: 503 where it is needed, answers elsewhere."""

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.faults.conftest import Switchable

POST = {
    "chip": "a100",
    "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
    "measured_ms": 10.0,
    "label": "fault",
}
CALCULATION = ("/expected-time", {"chip": "a100", "model": "llama-8b"})


@pytest.fixture
def app(switchable: Switchable) -> Iterator[FastAPI]:
    built = create_app(Settings(database_url=switchable.url))
    yield built
    built.state.database.engine.dispose()


def assert_unavailable(client: TestClient) -> None:
    for response in (client.get("/measurements"), client.post("/measurements", json=POST)):
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert "database is unreachable" in response.json()["detail"]["message"]
    page = client.get("/history", headers={"accept": "text/html"})
    assert page.status_code == 503
    assert page.headers["retry-after"] == "5"
    assert "<h1>Database unavailable</h1>" in page.text
    assert client.get(CALCULATION[0], params=CALCULATION[1]).status_code == 200
    health = client.get("/health")  # alive, and says what it lacks
    assert health.status_code == 200 and health.json()["status"] == "degraded"


def assert_back(client: TestClient) -> None:
    assert client.post("/measurements", json=POST).status_code == 201
    assert client.get("/health").json()["status"] == "ok"


def test_starts_without_its_database_and_recovers(app, switchable):
    client = TestClient(app)
    assert not app.state.database.ready
    assert_unavailable(client)
    # the catalog answers from its file; only the measured profiles wait for the database
    chip = client.get("/chips/a100")
    assert chip.status_code == 200 and chip.json()["empirical"] is None
    assert client.get("/catalog", headers={"accept": "text/html"}).status_code == 200
    assert client.get("/chips/a100", headers={"accept": "text/html"}).status_code == 200
    switchable.up()
    assert_back(client)
    assert client.get("/measurements").json()["total"] == 1
    assert app.state.database.ready


# an open SQLite file cannot be taken away mid-flight; PostgreSQL's connection can
@pytest.mark.parametrize("switchable", ["postgresql"], indirect=True)
def test_lost_mid_flight_then_back(app, switchable):
    switchable.up()
    client = TestClient(app)
    assert client.post("/measurements", json=POST).status_code == 201
    switchable.down()
    assert_unavailable(client)
    # the catalog still answers, without the profiles measured on the chips
    chip = client.get("/chips/a100")
    assert chip.status_code == 200 and chip.json()["empirical"] is None
    assert client.get("/catalog", headers={"accept": "text/html"}).status_code == 200
    assert client.get("/chips/a100", headers={"accept": "text/html"}).status_code == 200
    switchable.up()
    assert_back(client)
    # the write refused while the database was away was not half-stored
    assert client.get("/measurements").json()["total"] == 2


def _drop_every_table(url: str) -> None:
    engine = sa.create_engine(Settings(database_url=url).database_url)
    tables = sa.MetaData()
    tables.reflect(engine)
    tables.drop_all(engine)
    engine.dispose()


def test_a_database_emptied_while_running_is_migrated_again(empty_database):
    """Dropped and created anew (empty) while the service runs: once a 500 on every database
    endpoint until a restart, the migrations having run once."""
    app = create_app(Settings(database_url=empty_database))
    client = TestClient(app)
    assert client.post("/measurements", json=POST).status_code == 201
    _drop_every_table(empty_database)
    lost = client.get("/measurements")
    assert lost.status_code == 503 and lost.headers["retry-after"] == "5"
    assert client.post("/measurements", json=POST).status_code == 201
    assert client.get("/measurements").json()["total"] == 1
    assert client.get("/chips/a100").json()["empirical"] is None
    app.state.database.engine.dispose()
