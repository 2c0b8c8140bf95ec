"""Request dependencies. The catalogs' is async, since it only reads app state (a plain `def`
costs every request a hop through the thread pool); the sessions' are plain functions, since
the first request after the database comes back migrates it."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from app.db.availability import Database, DatabaseUnavailable
from app.services.catalogs import Catalogs


async def get_catalogs(request: Request) -> Catalogs:
    """The catalogs loaded at start-up."""
    catalogs: Catalogs = request.app.state.catalogs
    return catalogs


def get_sessions(request: Request) -> sessionmaker[Session]:
    """The session factory of the app's database (DatabaseUnavailable: 503)."""
    database: Database = request.app.state.database
    return database.sessions()


def get_optional_sessions(request: Request) -> sessionmaker[Session] | None:
    """The session factory, or None while the database is unreachable (for pages and answers
    that only add stored data to what the catalog says)."""
    try:
        return get_sessions(request)
    except DatabaseUnavailable:
        return None


CatalogsDep = Annotated[Catalogs, Depends(get_catalogs)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
OptionalSessionsDep = Annotated[sessionmaker[Session] | None, Depends(get_optional_sessions)]
