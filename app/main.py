"""The roofcheck web service: `uvicorn app.main:app`."""

from __future__ import annotations

import gc
import logging
from functools import lru_cache

from fastapi import FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from app.api import (
    calculation_routes,
    catalog_routes,
    compare_routes,
    docs_routes,
    empirical_routes,
    error_handlers,
    health_routes,
    measurement_routes,
    trace_routes,
)
from app.api.stored_answers import ServeStoredAnswers
from app.catalog.loader import CatalogError
from app.db import empirical
from app.db.availability import UNREACHABLE, Database, DatabaseUnavailable
from app.db.models import EmpiricalProfileRow
from app.db.session import make_engine
from app.http import traces
from app.http.request_text import RefuseBadText
from app.http.responses import StrictJSONResponse
from app.security import Hardening, WriteTokens
from app.services.catalogs import Catalogs, load_catalog_files, record_catalogs
from app.settings import Settings, get_settings
from app.web import negotiated_routes, page_routes, pages, svg
from app.web.templating import STATIC

log = logging.getLogger(__name__)

DESCRIPTION = """Does my runtime make sense? roofcheck compares deep-learning workloads with the
roofline of the chip they run on: time = max(FLOPs / peak, bytes / bandwidth).
All quantities are SI: seconds, bytes (GB = 1e9), FLOPs, FLOP/s, bytes/s."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: load the catalogs, then reach the database if it is up.

    A bad catalog file, or one edited without bumping its version, stops start-up here. An
    unreachable database does not (see app/db/availability.py): the calculation endpoints
    answer from the catalog files, and the others get 503 until the database is back.
    """
    settings = settings or get_settings()
    current, models = load_catalog_files(settings)
    write_tokens = WriteTokens.parse(settings.write_tokens)
    app = FastAPI(
        docs_url=None,  # served from the app's own files (app/api/docs_routes.py)
        redoc_url=None,
        title="roofcheck",
        version="1",
        description=DESCRIPTION,
        default_response_class=StrictJSONResponse,
        responses={
            400: {"description": "A Host header not in ROOFCHECK_ALLOWED_HOSTS (text/plain)."},
            411: {"description": "A request body without Content-Length."},
            413: {"description": "A request body over ROOFCHECK_MAX_BODY_BYTES."},
        },
    )

    def profiles(chip_id: str) -> EmpiricalProfileRow | None:
        """The newest ceilings measured on `chip_id` (DatabaseUnavailable: 503)."""
        return empirical.latest(database.sessions(), chip_id)

    app.state.catalogs = Catalogs({current.version: current}, current.version, models, profiles)

    def on_ready(sessions: sessionmaker[Session]) -> None:
        app.state.catalogs = record_catalogs(sessions, current, models, profiles)

    app.state.database = database = Database(make_engine(settings.database_url), on_ready)
    try:
        database.sessions()
    except DatabaseUnavailable:
        log.warning("starting without the database; it is retried on the next request")
    except CatalogError:
        database.engine.dispose()
        raise
    app.state.write_tokens = write_tokens
    app.state.calculation_budget_s = settings.calculation_budget_s
    app.state.table_row_budget_s = settings.table_row_budget_s
    app.state.max_table_bytes = settings.max_table_bytes  # the /table page's pasted text
    app.state.max_body_bytes = settings.max_body_bytes  # over it, a body is read off the loop
    app.state.traces = traces.analyses(
        settings.trace_budget_s, settings.trace_memory_bytes, settings.trace_slots
    )
    # the one answer cache: a question asked again (a CI job's at every commit) gets the bytes
    # rendered the first time; inside Hardening, so its headers and body cap apply
    app.add_middleware(ServeStoredAnswers)
    # before the answer cache and every route; a trace is never stored: no NUL check
    trace_caps = dict.fromkeys(("/check/trace", "/trace"), settings.max_trace_bytes)
    app.add_middleware(
        RefuseBadText,
        grace_s=settings.body_timeout_s,
        min_rate=settings.body_min_rate,
        unstored=trace_caps,
    )
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.hosts)
    # pages, answers and /docs' script travel gzipped to a client that accepts it (bodies of
    # 500 bytes or more): what a phone on a slow link waits for
    app.add_middleware(GZipMiddleware)
    app.add_middleware(
        Hardening,
        max_body_bytes=settings.max_body_bytes,
        large_bodies={
            **trace_caps,
            "/check/table": settings.max_table_bytes,
            # an operator list (a model's step, from roofcheck measure): read in a worker thread
            "/check": settings.max_ops_bytes,
            "/expected-time": settings.max_ops_bytes,
            # the page's form: the table, and its other fields within an ordinary body's cap
            "/table": settings.max_table_bytes + settings.max_body_bytes,
        },
        inline_styles=[svg.STYLE],
    )
    error_handlers.install(app)
    # ProgrammingError: a database emptied while the service ran (else a bug, re-raised)
    for unreachable in (DatabaseUnavailable, *UNREACHABLE, ProgrammingError):
        app.add_exception_handler(unreachable, pages.database_unavailable)
    app.add_exception_handler(404, pages.unknown_address)  # a page to a browser, else JSON
    # a browser's GET of an API address gets its page: tried before the JSON routes
    app.include_router(negotiated_routes.router)
    app.include_router(health_routes.router)
    calculation_routes.register(app.router)
    app.include_router(catalog_routes.router)
    app.include_router(compare_routes.router)
    app.include_router(trace_routes.router)
    app.include_router(measurement_routes.router)
    app.include_router(empirical_routes.router)
    app.include_router(page_routes.router)
    app.include_router(docs_routes.router)
    app.mount(docs_routes.ASSETS, docs_routes.assets(), name="swagger")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


@lru_cache(maxsize=1)
def _default_app() -> FastAPI:
    app = create_app()
    # The OpenAPI schema is built now: FastAPI's /openapi.json builds it on the first request,
    # in the event loop, and every other request would wait for it.
    app.openapi()
    # Start-up's long-lived objects (catalogs, routes, ORM mappings, the schema) leave the
    # collector's full scans, which otherwise add tens of ms to one request in several
    # (bench.data_scale).
    gc.freeze()
    return app


def __getattr__(name: str) -> FastAPI:
    """`app.main:app`, built on first access, so that importing this module has no effects."""
    if name == "app":
        return _default_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
