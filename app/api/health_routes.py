"""Liveness: the trivial endpoint that load balancers poll and benchmarks compare against."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.http.deps import CatalogsDep
from app.schemas.catalog_bodies import Health
from app.services import database_errors

router = APIRouter(tags=["catalog"])


@router.get("/health", summary="Liveness and the current catalog version", response_model=Health)
async def health(request: Request, catalogs: CatalogsDep) -> Health:
    """Liveness (200 while the service answers: the calculations need no database), whether
    the database is reachable (`degraded` when not), and the chip catalog version answers
    come from."""
    status = database_errors.health(request.app.state.database)
    return Health(status=status, catalog_version=catalogs.current)
