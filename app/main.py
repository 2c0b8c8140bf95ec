"""The roofcheck web service: `uvicorn app.main:app`."""

from __future__ import annotations

from functools import lru_cache

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.api import errors
from app.api.catalogs import load_catalog_files, record_catalogs
from app.api.routes import calculations, catalog, empirical, measurements
from app.catalog.loader import CatalogError
from app.db.session import make_engine, migrate, session_factory
from app.settings import Settings, get_settings
from app.web import routes as web
from app.web.templating import STATIC

DESCRIPTION = """Does my runtime make sense? roofcheck compares deep-learning workloads with the
roofline of the chip they run on: time = max(FLOPs / peak, bytes / bandwidth).
All quantities are SI: seconds, bytes (GB = 1e9), FLOPs, FLOP/s, bytes/s."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app: migrate the database, then load and record the catalogs.

    A bad catalog file, or one edited without bumping its version, stops start-up here.
    """
    settings = settings or get_settings()
    current, models = load_catalog_files(settings)
    engine = make_engine(settings.database_url)
    migrate(engine)
    sessions = session_factory(engine)
    app = FastAPI(
        title="roofcheck",
        version="1",
        description=DESCRIPTION,
        default_response_class=errors.StrictJSONResponse,
    )
    try:
        catalogs = record_catalogs(sessions, current, models)
    except CatalogError:
        engine.dispose()
        raise
    app.state.sessions = sessions
    app.state.catalogs = catalogs
    errors.install(app)
    app.include_router(catalog.router)
    app.include_router(calculations.router)
    app.include_router(measurements.router)
    app.include_router(empirical.router)
    app.include_router(web.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


@lru_cache(maxsize=1)
def _default_app() -> FastAPI:
    return create_app()


def __getattr__(name: str) -> FastAPI:
    """`app.main:app`, built on first access, so that importing this module has no effects."""
    if name == "app":
        return _default_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
