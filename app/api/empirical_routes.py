"""Empirical profiles: store the ceilings `roofcheck probe` measured on a chip."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response
from fastapi.exceptions import RequestValidationError

from app.db import empirical
from app.db.availability import UNAVAILABLE
from app.db.models import MAX_ID
from app.http.deps import JSON_BODY_ERRORS, CatalogsDep, JsonBody, SessionsDep
from app.schemas.catalog_bodies import EmpiricalProfile, StoredProfile
from app.security import UNAUTHORIZED, WriterDep
from app.services.profiles import device_matches, profile_view

router = APIRouter(tags=["catalog"])


_RESPONSES: dict[int | str, dict[str, str]] = {
    **UNAUTHORIZED,
    404: {"description": "No such chip; with suggestions."},
    **UNAVAILABLE,
}


@router.post(
    "/chips/{chip}/empirical",
    summary="Store an empirical profile of a chip",
    status_code=201,
    response_model=StoredProfile,
    responses=_RESPONSES | JSON_BODY_ERRORS,
    dependencies=[JsonBody],
)
def add_profile(
    chip: Annotated[str, Path(max_length=100)],
    profile: EmpiricalProfile,
    writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
) -> StoredProfile:
    """Store ceilings measured on `chip` (by id or alias); they show on GET /chips/{chip}.

    The profile's device must be the chip (422 otherwise), unless `force` stores it anyway,
    marked as forced."""
    record = catalogs.chips().resolve(chip)
    if not (profile.force or device_matches(profile.device, profile.backend, record)):
        kind = "the CPU (numpy)" if profile.backend != "torch" else "another device"
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "device"),
                    "msg": f"the profile measured {kind}, not a {record.entry.name}: run the "
                    "probe on the chip, or send force: true to store it anyway (as forced)",
                    "type": "value_error",
                }
            ]
        )
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
        forced=profile.force,
        written_by=writer,
    )
    return StoredProfile(chip=record.entry.id, **profile_view(row, record).model_dump())


@router.delete(
    "/chips/{chip}/empirical/{profile_id}",
    summary="Delete an empirical profile",
    status_code=204,
    response_class=Response,
    responses={
        **_RESPONSES,
        403: {"description": "Writes are restricted and another writer stored the profile."},
        404: {"description": "No such chip, or no such profile of it."},
    },
)
def delete_profile(
    chip: Annotated[str, Path(max_length=100)],
    profile_id: Annotated[int, Path(ge=1, le=MAX_ID)],
    writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
) -> Response:
    """Delete a profile stored for `chip` (a wrong one: measured on another device). With
    write tokens set, only its writer may."""
    record = catalogs.chips().resolve(chip)
    try:
        empirical.delete(sessions, record.entry.id, profile_id, writer)
    except empirical.NotTheWriter:
        raise HTTPException(
            status_code=403, detail={"message": "only the writer who stored it may delete it"}
        ) from None
    return Response(status_code=204)
