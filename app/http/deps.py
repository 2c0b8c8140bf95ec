"""Request dependencies. They are async, since a plain `def` costs every request a hop through
the thread pool: the catalogs' only reads app state, and the sessions' only reads it too once
the database is ready (until then it waits in the thread pool, since the first request after
the database comes back migrates it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session, sessionmaker

from app.db.availability import Database, DatabaseUnavailable
from app.http.request_text import is_json
from app.services.catalogs import Catalogs


async def get_catalogs(request: Request) -> Catalogs:
    """The catalogs loaded at start-up."""
    catalogs: Catalogs = request.app.state.catalogs
    return catalogs


async def get_sessions(request: Request) -> sessionmaker[Session]:
    """The session factory of the app's database (DatabaseUnavailable: 503)."""
    database: Database = request.app.state.database
    ready = database.prepared
    return ready if ready is not None else await run_in_threadpool(database.sessions)


async def get_optional_sessions(request: Request) -> sessionmaker[Session] | None:
    """The session factory, or None while the database is unreachable (for pages and answers
    that only add stored data to what the catalog says)."""
    try:
        return await get_sessions(request)
    except DatabaseUnavailable:
        return None


CatalogsDep = Annotated[Catalogs, Depends(get_catalogs)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
UNAVAILABLE: dict[int | str, dict[str, str]] = {  # the routes that take SessionsDep document it
    503: {"description": "The database is unreachable now; retry later (Retry-After)."}
}
OptionalSessionsDep = Annotated[sessionmaker[Session] | None, Depends(get_optional_sessions)]


async def json_body(request: Request) -> None:
    """415 unless the request's body is sent as JSON (application/json, or a +json type): a
    body of another type would be read as no object at all, a vague 422."""
    if not is_json(request.headers.get("content-type", "").encode("latin-1")):
        raise HTTPException(
            status_code=415,
            detail={"message": "send the body as JSON, with Content-Type: application/json"},
        )


JsonBody = Depends(json_body)  # in the `dependencies` of a route that takes a JSON body
JSON_BODY_ERRORS: dict[int | str, dict[str, str]] = {
    415: {"description": "The body is not sent as application/json."},
    422: {"description": "Malformed JSON (type json_invalid), or a field out of range."},
}
