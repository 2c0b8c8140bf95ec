"""Liveness: the trivial endpoint that load balancers poll and benchmarks compare against."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import CatalogsDep

router = APIRouter(tags=["catalog"])


@router.get("/health")
async def health(catalogs: CatalogsDep) -> dict[str, str]:
    """Liveness, and the chip catalog version answers come from."""
    return {"status": "ok", "catalog_version": catalogs.current}
