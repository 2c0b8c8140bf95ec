"""The catalogs: chips with every figure's source, models with derived counts, versions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.http.deps import UNAVAILABLE, CatalogsDep, OptionalSessionsDep, SessionsDep
from app.schemas.catalog_bodies import (
    CatalogVersions,
    ChipDetail,
    ChipList,
    ModelDetail,
    ModelList,
)
from app.services import catalog_views

router = APIRouter(tags=["catalog"])

_Name = Annotated[str, Path(max_length=100)]
_Version = Annotated[str | None, Query(max_length=64)]
_NOT_FOUND: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown name or catalog version; with suggestions."}
}


@router.get("/chips", summary="List the chips", response_model=ChipList, responses=_NOT_FOUND)
async def chips(catalogs: CatalogsDep, catalog_version: _Version = None) -> ChipList:
    """Every chip of a catalog version, every figure with its source and verification tag."""
    return catalog_views.chips(catalogs, catalog_version)


@router.get("/chips/{chip}", summary="One chip", response_model=ChipDetail, responses=_NOT_FOUND)
def chip(
    chip: _Name,
    catalogs: CatalogsDep,
    sessions: OptionalSessionsDep,
    catalog_version: _Version = None,
) -> ChipDetail:
    """One chip by id or alias, with the newest empirical profile measured on it (null when
    there is none, or while the database is unreachable)."""
    return catalog_views.chip(catalogs, sessions, chip, catalog_version)


@router.get("/models", summary="List the models", response_model=ModelList)
async def models(catalogs: CatalogsDep) -> ModelList:
    """Every architecture with its derived parameter counts and KV bytes per token."""
    return ModelList(models=catalog_views.models(catalogs))


@router.get(
    "/models/{model}", summary="One model", response_model=ModelDetail, responses=_NOT_FOUND
)
async def model(model: _Name, catalogs: CatalogsDep) -> ModelDetail:
    """One model by id or alias, with its Hugging Face config."""
    return catalog_views.model(catalogs, model)


@router.get(
    "/catalog/versions",
    summary="Chip-catalog versions",
    response_model=CatalogVersions,
    responses=UNAVAILABLE,
)
def versions(catalogs: CatalogsDep, sessions: SessionsDep) -> CatalogVersions:
    """Every chip-catalog version the service has loaded, with its content hash and dates.

    `usable` is false for a stored version that no longer validates against today's schema
    (it is kept, but cannot be calculated with).
    """
    return catalog_views.versions(catalogs, sessions)
