"""What a database error met while answering a request means for the service."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, ProgrammingError

from app.db.availability import Database, schema_missing


def recover(database: Database, error: Exception) -> None:
    """Prepare for the next request after `error`: a database found empty (dropped and created
    anew while the service ran) is migrated again on its next use; one unreachable needs
    nothing (it is retried on the next request); any other SQL error is a bug, raised again."""
    if isinstance(error, DBAPIError) and schema_missing(error):
        database.forget()
    elif isinstance(error, ProgrammingError):
        raise error
