"""Liveness: the trivial endpoint that load balancers poll and benchmarks compare against."""

from __future__ import annotations

from fastapi import APIRouter

from app.http.deps import CatalogsDep
from app.schemas.catalog_bodies import Health

router = APIRouter(tags=["catalog"])


@router.get("/health", summary="Liveness and the current catalog version", response_model=Health)
async def health(catalogs: CatalogsDep) -> Health:
    """Liveness, and the chip catalog version answers come from."""
    return Health(status="ok", catalog_version=catalogs.current)
