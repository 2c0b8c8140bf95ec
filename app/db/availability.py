"""The database as a service may find it: reachable or not, at start-up or mid-request.

The app starts without its database (the calculation endpoints need none); the first request
that needs it migrates and records the catalogs, and until that succeeds such requests get
503. A connection lost mid-request rolls its transaction back and is a 503 too. A SQLite file
removed under the service is unreachable until a file is back at its path; a file found there
in its place (a backup restored, an empty file) is migrated and prepared before it is used
(app/db/sqlite_file.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from app.db import sqlite_file
from app.db.session import migrate, session_factory

log = logging.getLogger(__name__)

T = TypeVar("T")

# the driver errors that mean "cannot reach or lost the database" (not bad SQL or data)
UNREACHABLE = (OperationalError, InterfaceError)
# PostgreSQL's "undefined_table": the database was replaced by an empty one (SQLite says "no
# such table" in an OperationalError)
_UNDEFINED_TABLE = "42P01"


def schema_missing(exc: DBAPIError) -> bool:
    """Whether `exc` says a table is missing: the database was dropped and created anew (empty)
    since it was migrated."""
    return getattr(exc.orig, "sqlstate", None) == _UNDEFINED_TABLE or "no such table" in str(
        exc.orig
    )


class DatabaseUnavailable(Exception):
    """The database cannot be reached now; the request may be retried later."""


def unless_unreachable(read: Callable[[], T]) -> T | None:
    """`read()`, or None while the database cannot be reached: for reads that only add stored
    data to what the catalogs say (an empirical profile beside a chip's datasheet)."""
    try:
        return read()
    except (DatabaseUnavailable, *UNREACHABLE, ProgrammingError) as exc:
        if isinstance(exc, ProgrammingError) and not schema_missing(exc):
            raise
        log.warning("an optional read skipped: the database is unreachable (%s)", exc)
        return None


class Database:
    """An engine whose schema is migrated, and `on_ready` run, on the first successful use."""

    def __init__(self, engine: Engine, on_ready: Callable[[sessionmaker[Session]], None]):
        self.engine = engine
        self._on_ready = on_ready
        self._sessions: sessionmaker[Session] | None = None
        self._lock = threading.Lock()
        self._file = sqlite_file.watched(engine)
        self._prepared_file: sqlite_file.Identity | None = None  # the file it prepared
        # why the database was unreachable at its last use; None once a connection is had
        self._lost: str | None = None
        event.listen(engine, "checkout", self._reached)

    def forget(self) -> None:
        """Migrate and prepare the database again on its next use: it was replaced by an empty
        one (dropped and created anew) while the service ran."""
        with self._lock:
            self._sessions = None

    def lost(self, why: str) -> None:
        """Note that the database was found unreachable (`why`), until a connection is had."""
        self._lost = why

    def _reached(self, *_connection: object) -> None:
        self._lost = None

    @property
    def available(self) -> bool:
        """Whether the database was reachable at its last use and, on SQLite, its file is
        there (one stat, no query: /health asks)."""
        return self._lost is None and (self._file is None or self._file.identity() is not None)

    @property
    def ready(self) -> bool:
        """Whether the database has been reached and prepared."""
        return self.prepared is not None

    @property
    def prepared(self) -> sessionmaker[Session] | None:
        """The session factory once the database is ready, else None (never waits): None too
        when the SQLite file at the path is no longer the one prepared (removed, replaced)."""
        sessions = self._sessions
        if self._file is not None and self._file.identity() != self._prepared_file:
            return None
        return sessions

    def sessions(self) -> sessionmaker[Session]:
        """The session factory; DatabaseUnavailable while the database cannot be reached."""
        sessions = self.prepared
        if sessions is None:
            with self._lock:
                sessions = self.prepared
                if sessions is None:
                    sessions = self._sessions = self._prepare()
        return sessions

    def _prepare(self) -> sessionmaker[Session]:
        try:
            file = None if self._file is None else self._open_file(self._file)
            migrate(self.engine)
            sessions = session_factory(self.engine)
            self._on_ready(sessions)
        except (DatabaseUnavailable, *UNREACHABLE) as exc:
            where = self.engine.url.render_as_string(hide_password=True)
            why = str(exc) if isinstance(exc, DatabaseUnavailable) else str(exc.orig or exc)
            log.warning("database unreachable at %s: %s", where, why)
            self.lost(why)
            if isinstance(exc, DatabaseUnavailable):
                raise
            raise DatabaseUnavailable(f"cannot reach the database at {where}") from exc
        self._prepared_file = file
        return sessions

    def _open_file(self, file: sqlite_file.DatabaseFile) -> sqlite_file.Identity | None:
        """The SQLite file to prepare, the one at the path now; the connections to one
        prepared before it (removed or replaced since) are closed first."""
        if self._sessions is not None:
            self.engine.pool.dispose()  # the idle ones; the others when next taken
        found = file.identity()
        if found is None and file.opened:
            raise DatabaseUnavailable(file.removed())
        return found
