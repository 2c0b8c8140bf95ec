"""Engines, sessions and migrations."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TypeVar
from weakref import WeakKeyDictionary

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from app.db import sqlite_file
from app.db.group_commit import GroupCommit
from app.settings import ROOT

# SQLite lets one transaction write at a time; the others wait in its busy handler, which
# polls with sleeps of up to 100 ms, so that a waiting writer may sleep on long after the
# database is free. A writer of this process queues on its engine's lock instead, and starts
# as soon as the one before it is done (a group of measurement writes holds the lock while it
# writes); the busy handler only arbitrates between processes.
_SQLITE_WRITERS: WeakKeyDictionary[Engine, threading.Lock] = WeakKeyDictionary()
# each engine's writes committed in groups, made on its first write
_GROUPS: WeakKeyDictionary[Engine, GroupCommit] = WeakKeyDictionary()
_GROUPS_MADE = threading.Lock()
# Alembic keeps the migration it runs in module globals (alembic.context, alembic.op): one
# migration at a time in a process. Between processes, the database serialises them (_serialise).
_MIGRATING = threading.Lock()
# the key of the PostgreSQL advisory lock a migration holds: any 64-bit number that nothing
# else takes on the database; this is "roofchek" in ASCII
_MIGRATION_LOCK = int.from_bytes(b"roofchek", "big")
T = TypeVar("T")


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets foreign keys, WAL, a busy timeout for concurrent writers,
    a lock that queues this process's writers, and its file watched (app/db/sqlite_file.py)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        _SQLITE_WRITERS[engine] = threading.Lock()

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: object, _record: object) -> None:
            cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        sqlite_file.watch(engine)
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(engine: Engine) -> Config:
    """Alembic's configuration for `engine` (migrations/ beside the app package)."""
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.attributes["url"] = engine.url.render_as_string(hide_password=False)
    return config


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (the app does this at start-up), one migration at a time:
    workers that start, or find their database emptied, together each wait for the one
    migrating, then find the schema at `revision` and have nothing to do."""
    with _MIGRATING, engine.begin() as connection:
        _serialise(connection)
        config = alembic_config(engine)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def _serialise(connection: Connection) -> None:
    """Make other processes' migrations of the database wait until this transaction ends;
    alembic reads the schema's revision after it. PostgreSQL: an advisory lock held until the
    transaction ends. SQLite: the transaction takes the database's write lock from its start
    (BEGIN IMMEDIATE; the others wait in the busy handler), since the driver would begin one
    only at the first row written, after the migration has read the revision and created its
    first table."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
    elif connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session], *, writes: bool = False) -> Iterator[Session]:
    """A session whose work is committed on success and rolled back on error. One that
    `writes` waits for this process's other SQLite writers first (see _SQLITE_WRITERS), and
    fails after its commit if its SQLite file was removed meanwhile (app/db/sqlite_file.py):
    what it wrote is in no file the service will open again."""
    with _writer(factory) if writes else nullcontext(), factory() as session:
        with session.begin():
            yield session
            written = sqlite_file.connection_file(session.connection().info) if writes else None
        file = sqlite_file.watched(_engine(factory)) if writes else None
        if file is not None:
            file.check_written(written)


def write_together(factory: sessionmaker[Session], work: Callable[[Session], T]) -> T:
    """`work`'s value once it has run on a session and been committed, in one transaction
    with the other writes waiting then (app/db/group_commit.py); its error, and nothing of it
    stored, if it raised or the transaction failed. `work` writes on its session alone: a
    write of its own through `transaction(writes=True)` or `write_together` would wait for
    the group it runs in, which waits for it."""
    engine = _engine(factory)
    group = _GROUPS.get(engine)
    if group is None:
        with _GROUPS_MADE:
            group = _GROUPS.get(engine) or GroupCommit(engine, _writer(factory))
            _GROUPS[engine] = group
    return group.run(work)


def _engine(factory: sessionmaker[Session]) -> Engine:
    engine: Engine = factory.kw["bind"]
    return engine


def _writer(factory: sessionmaker[Session]) -> AbstractContextManager[object]:
    lock = _SQLITE_WRITERS.get(_engine(factory))
    return nullcontext() if lock is None else lock
