"""Empirical profiles: store the ceilings `roofcheck probe` measured on a chip."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from app.db import empirical
from app.db.availability import UNAVAILABLE
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody, SessionsDep
from app.schemas.catalog_bodies import EmpiricalProfile, StoredProfile
from app.security import UNAUTHORIZED, WriterDep
from app.services.profiles import profile_view

router = APIRouter(tags=["catalog"])


_RESPONSES: dict[int | str, dict[str, str]] = {
    **UNAUTHORIZED,
    404: {"description": "No such chip; with suggestions."},
    **UNAVAILABLE,
}


@router.post(
    "/chips/{chip}/empirical",
    status_code=201,
    response_model=StoredProfile,
    responses=_RESPONSES | JSON_BODY_ERRORS,
    dependencies=[JsonBody],
)
def add_profile(
    chip: Annotated[str, Path(max_length=100)],
    profile: EmpiricalProfile,
    _writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
) -> StoredProfile:
    """Store ceilings measured on `chip` (by id or alias); they show on GET /chips/{chip}."""
    record = catalogs.chips().resolve(chip)
    row = empirical.add(
        sessions,
        chip_id=record.entry.id,
        device=profile.device,
        backend=profile.backend,
        measured_on=profile.date,
        copy_bytes_per_s=profile.copy_bytes_per_s,
        matmul_flops_per_s={str(k): v for k, v in profile.matmul_flops_per_s.items()},
        software=profile.software,
        hostname=profile.hostname,
    )
    return StoredProfile(chip=record.entry.id, **profile_view(row, record).model_dump())
