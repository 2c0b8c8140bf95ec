"""The database as a service may find it: reachable or not, at start-up or mid-request.

The app starts without its database (the calculation endpoints need none); the first request
that needs it migrates and records the catalogs, and until that succeeds such requests get
503. A connection lost mid-request rolls its transaction back and is a 503 too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

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

    def forget(self) -> None:
        """Migrate and prepare the database again on its next use: it was replaced by an empty
        one (dropped and created anew) while the service ran."""
        with self._lock:
            self._sessions = None

    @property
    def ready(self) -> bool:
        """Whether the database has been reached and prepared."""
        return self._sessions is not None

    @property
    def prepared(self) -> sessionmaker[Session] | None:
        """The session factory once the database is ready, else None (never waits)."""
        return self._sessions

    def sessions(self) -> sessionmaker[Session]:
        """The session factory; DatabaseUnavailable while the database cannot be reached."""
        if self._sessions is None:
            with self._lock:
                if self._sessions is None:
                    self._sessions = self._prepare()
        return self._sessions

    def _prepare(self) -> sessionmaker[Session]:
        try:
            migrate(self.engine)
            sessions = session_factory(self.engine)
            self._on_ready(sessions)
        except UNREACHABLE as exc:
            where = self.engine.url.render_as_string(hide_password=True)
            log.warning("database unreachable at %s: %s", where, exc.orig or exc)
            raise DatabaseUnavailable(f"cannot reach the database at {where}") from exc
        return sessions
