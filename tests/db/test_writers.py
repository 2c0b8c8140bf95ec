"""Writers of one process queue on a lock on SQLite (app/db/session.py), not in SQLite's
busy handler, whose sleeps of up to 100 ms gave concurrent writers a p99 of ~1 s."""

import threading
import time
from pathlib import Path

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
    """PostgreSQL takes concurrent writers itself: no lock to wait on."""
    engine = make_engine(postgres_url)
    factory = session_factory(engine)
    with transaction(factory, writes=True), transaction(factory, writes=True):
        pass  # a second writer of the same thread would deadlock on a process lock
    engine.dispose()
