"""Request dependencies: async, since they only read app state (a plain `def` would cost
every request a hop through the thread pool)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from app.api.catalogs import Catalogs
from app.db.availability import Database


async def get_catalogs(request: Request) -> Catalogs:
    """The catalogs loaded at start-up."""
    catalogs: Catalogs = request.app.state.catalogs
    return catalogs


def get_sessions(request: Request) -> sessionmaker[Session]:
    """The session factory of the app's database (DatabaseUnavailable: 503)."""
    database: Database = request.app.state.database
    return database.sessions()


CatalogsDep = Annotated[Catalogs, Depends(get_catalogs)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
