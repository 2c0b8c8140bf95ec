"""Empirical profiles: store the ceilings `roofcheck probe` measured on a chip."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response
from fastapi.exceptions import RequestValidationError

from app.columns import MAX_ID
from app.http.deps import JSON_BODY_ERRORS, UNAVAILABLE, CatalogsDep, JsonBody, SessionsDep
from app.schemas.catalog_bodies import EmpiricalProfile, StoredProfile
from app.security import UNAUTHORIZED, WriterDep
from app.services import profiles

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
    if not (profile.force or profiles.device_matches(profile.device, profile.backend, record)):
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
    return profiles.store(sessions, record, profile, writer)


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
    if not profiles.delete(sessions, record, profile_id, writer):
        raise HTTPException(
            status_code=403, detail={"message": "only the writer who stored it may delete it"}
        )
    return Response(status_code=204)
