"""Writers of one process queue on a lock on SQLite (app/db/session.py), not in SQLite's
busy handler, which polls with sleeps of up to 100 ms."""

import threading
import time
from pathlib import Path

import sqlalchemy as sa

from app.db.session import make_engine, session_factory, transaction


def test_a_sqlite_writer_waits_for_the_one_writing(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    factory = session_factory(engine)
    events: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with transaction(factory, writes=True):
            inside.set()
            time.sleep(0.2)
            events.append("first done")

    def second() -> None:
        inside.wait()
        with transaction(factory, writes=True):
            events.append("second began")

    def reader() -> None:  # readers never queue
        inside.wait()
        with transaction(factory):
            events.append("read")

    threads = [threading.Thread(target=f) for f in (first, second, reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert events == ["read", "first done", "second began"]
    engine.dispose()


def test_postgresql_writers_do_not_queue_in_the_process(postgres_url: str) -> None:
    """PostgreSQL takes concurrent writers itself: no lock to wait on. Two write transactions
    of one thread are open at once, each on its own server connection (a process lock would
    deadlock the second). Each statement reaches the server, so an unreachable one fails."""
    engine = make_engine(postgres_url)
    factory = session_factory(engine)
    try:
        assert engine.dialect.name == "postgresql"
        with (
            transaction(factory, writes=True) as first,
            transaction(factory, writes=True) as second,
        ):
            # each takes a transaction id, as a write does: two distinct ids, two connections
            ids = [
                session.execute(sa.text("SELECT pg_backend_pid(), txid_current()")).one()
                for session in (first, second)
            ]
            pids = [pid for pid, _ in ids]
            # the first sees the second's write transaction open beside its own
            holding = first.execute(
                sa.text("SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = :pid"),
                {"pid": pids[1]},
            ).scalar_one()
            assert holding
        assert ids[0][1] != ids[1][1]
        assert pids[0] != pids[1]
    finally:
        engine.dispose()
