"""Workers that start (or find their database emptied) together all migrate it at once: each
waits for the one migrating, then finds the schema at head; none fails, none answers 500."""

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient

from app.db.availability import Database
from app.db.session import alembic_config, make_engine
from app.main import create_app
from app.settings import Settings

WORKERS = 6
ROOT = Path(__file__).resolve().parents[2]
# A worker process's start: its own engine, connected, waiting for the others before it
# migrates. Each statement takes 5 ms more, as on a busy server, so that the migrations
# overlap whatever the machine's speed (without the lock, one fails on a table or an
# alembic_version row the other made).
WORKER = """
import os, sys, time
from sqlalchemy import event
from app.db.availability import Database
from app.db.session import make_engine
url, go = sys.argv[1:]
engine = make_engine(url)
event.listen(engine, "before_cursor_execute", lambda *_: time.sleep(0.005))
database = Database(engine, lambda _sessions: None)
engine.connect().close()
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
database.sessions()
"""


def _together(work: Callable[[int], object]) -> list[BaseException]:
    """Run `work(i)` in WORKERS threads released at the same moment; the errors raised."""
    start = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        start.wait()
        try:
            work(i)
        except BaseException as error:  # collected, asserted on below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _at_head(url: str) -> bool:
    engine = make_engine(url)
    try:
        head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_heads() == (head,)
    finally:
        engine.dispose()


def test_worker_processes_migrating_a_fresh_database_at_once_all_succeed(empty_database, tmp_path):
    """Each process has its engine and its alembic: only the database makes them wait."""
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, empty_database, str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
    go.touch()  # all of them at once
    failures = [
        stderr for _, stderr in (worker.communicate(timeout=120) for worker in workers) if stderr
    ]
    assert failures == []
    assert [worker.returncode for worker in workers] == [0] * WORKERS
    assert _at_head(empty_database)


def test_databases_of_one_process_migrating_at_once_all_succeed(empty_database):
    """Several Database objects of one process (an app and app.prestart, the tests' apps):
    alembic keeps the migration it runs in module globals, so they take turns."""
    engines = [make_engine(empty_database) for _ in range(WORKERS)]
    databases = [Database(engine, lambda _sessions: None) for engine in engines]
    try:
        errors = _together(lambda i: databases[i].sessions())
    finally:
        for engine in engines:
            engine.dispose()
    assert errors == []
    assert _at_head(empty_database)


def _drop_everything(url: str) -> None:
    engine = make_engine(Settings(database_url=url).database_url)
    tables = sa.MetaData()
    tables.reflect(engine)
    tables.drop_all(engine)
    with engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()


def test_workers_finding_their_database_emptied_recover_together(empty_database):
    """The service's apps on one database emptied under them (dropped and created anew): each
    answers its first request 503 at most, then all migrate it again at once, none 500."""
    apps = [create_app(Settings(database_url=empty_database)) for _ in range(3)]
    clients = [TestClient(app) for app in apps]
    try:
        for client in clients:
            assert client.get("/measurements").status_code == 200
        _drop_everything(empty_database)
        for client in clients:  # each finds it empty: 503, and migrates on its next request
            assert client.get("/measurements").status_code == 503
        statuses: list[int] = []
        errors = _together(
            lambda i: statuses.append(clients[i % 3].get("/measurements").status_code)
        )
    finally:
        for app in apps:
            app.state.database.engine.dispose()
    assert errors == []
    assert statuses == [200] * WORKERS
    assert _at_head(empty_database)
