"""A SQLite database file removed or replaced under the running service: no write is
acknowledged into a file no path reaches, the service says it is degraded (503 with
Retry-After, /health `degraded`) until a file is back, and every write it acknowledged is in
the file found at the path afterwards."""

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from app.db.session import transaction, write_together
from app.main import create_app
from app.settings import Settings

POST = {
    "chip": "a100",
    "workload": {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    "measured_ms": 0.6,
}


def _stored_ids(path: Path) -> set[int]:
    """The ids in the file at `path`, read by a connection of its own (as after a restart)."""
    with sqlite3.connect(path) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM measurements")}


def _post(client: TestClient, acknowledged: list[int]) -> int:
    response = client.post("/measurements", json=POST)
    if response.status_code == 201:
        acknowledged.append(response.json()["id"])
    return response.status_code


def _assert_degraded(client: TestClient) -> None:
    for response in (client.post("/measurements", json=POST), client.get("/measurements")):
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "5"
        assert response.json()["detail"]["type"] == "database_unavailable"
    health = client.get("/health")
    assert health.status_code == 200  # alive: the calculations still answer
    assert health.json()["status"] == "degraded"
    assert client.get("/expected-time", params={"chip": "a100", "model": "llama-8b"}).is_success


@pytest.mark.parametrize("comes_back", ["restored", "recreated"])
def test_a_removed_file_refuses_writes_until_it_is_back(tmp_path: Path, comes_back: str):
    path = tmp_path / "roofcheck.db"
    backup = tmp_path / "backup.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}"))
    client = TestClient(app)
    acknowledged: list[int] = []
    for _ in range(3):
        assert _post(client, acknowledged) == 201
    with sqlite3.connect(path) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)  # a copy taken as SQLite's documentation says, to restore from

    path.unlink()  # the file alone, as `rm roofcheck.db` does: its write-ahead log stays
    for _ in range(20):  # once 201s, into the removed file, lost at the next restart
        assert _post(client, acknowledged) == 503
    _assert_degraded(client)

    if comes_back == "restored":
        backup.rename(path)
        assert client.get("/measurements").json()["total"] == 3  # the backup's rows
    else:
        path.touch()  # an empty file: migrated before it is used, as an empty database is
        assert client.get("/measurements").json()["total"] == 0
    assert client.get("/health").json()["status"] == "ok"
    for _ in range(5):
        assert _post(client, acknowledged) == 201

    app.state.database.engine.dispose()
    expected = set(acknowledged) if comes_back == "restored" else set(acknowledged[3:])
    assert _stored_ids(path) == expected


def test_a_file_replaced_under_the_service_is_the_one_written(tmp_path: Path):
    """Replaced by another file (a backup moved into place over it): the old file's
    connections are closed, the new one is migrated and written, none of it lost."""
    path = tmp_path / "roofcheck.db"
    backup = tmp_path / "backup.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}"))
    client = TestClient(app)
    acknowledged: list[int] = []
    assert _post(client, acknowledged) == 201
    with sqlite3.connect(path) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)
    assert _post(client, acknowledged) == 201  # in the old file only
    backup.replace(path)
    assert client.get("/measurements").json()["total"] == 1
    assert _post(client, acknowledged) == 201
    app.state.database.engine.dispose()
    assert _stored_ids(path) == {acknowledged[0], acknowledged[2]}


def test_a_write_committed_as_the_file_goes_is_not_acknowledged(tmp_path: Path):
    """The file removed between a write's start and its commit: the write reached a file no
    path reaches, so it fails (a 503 for a request), never acknowledged; alone or in a group
    of measurement writes."""
    path = tmp_path / "roofcheck.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}"))
    client = TestClient(app)
    assert client.post("/measurements", json=POST).status_code == 201
    sessions = app.state.database.sessions()
    late = sa.text("UPDATE measurements SET label = 'late' WHERE id = 1")
    with (
        pytest.raises(OperationalError, match="removed"),
        transaction(sessions, writes=True) as session,
    ):
        session.execute(late)
        path.unlink()

    with sqlite3.connect(path) as connection:  # a file again, migrated on the next use
        connection.execute("VACUUM")
    sessions = app.state.database.sessions()

    def work(session: sa.orm.Session) -> None:
        session.execute(sa.text("SELECT 1"))
        path.unlink()

    with pytest.raises(OperationalError, match="removed"):
        write_together(sessions, work)
    app.state.database.engine.dispose()
