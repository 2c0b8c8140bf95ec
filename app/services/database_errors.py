"""What a database error met while answering a request means for the service."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.exc import DBAPIError, ProgrammingError

from app.db.availability import Database, schema_missing


def recover(database: Database, error: Exception) -> None:
    """Prepare for the next request after `error`: a database found empty (dropped and created
    anew while the service ran) is migrated again on its next use; one unreachable is noted
    (/health says so until a connection is had) and retried on the next request; any other
    SQL error is a bug, raised again."""
    if isinstance(error, DBAPIError) and schema_missing(error):
        database.forget()
    elif isinstance(error, ProgrammingError):
        raise error
    else:
        database.lost(str(error))


def health(database: Database) -> Literal["ok", "degraded"]:
    """What /health says: `degraded` while the database is unreachable, as far as the service
    knows without a query (its last use failed; on SQLite, its file is missing)."""
    return "ok" if database.available else "degraded"
