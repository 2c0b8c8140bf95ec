"""Empirical profiles: ceilings measured by `roofcheck probe`, beside the datasheet figures."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.api.deps import CatalogsDep, SessionsDep
from app.catalog.loader import ChipRecord
from app.db import empirical
from app.db.availability import UNAVAILABLE
from app.db.models import HOST_LENGTH, EmpiricalProfileRow
from app.engine import Dtype, EngineError, Unit
from app.security import UNAUTHORIZED, WriterDep

router = APIRouter(tags=["catalog"])
MAX_RATE = 1e18  # 1 EFLOP/s or 1 EB/s: far beyond any single chip


def _rate(value: float) -> float:
    if not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise ValueError(f"must be > 0 and <= {MAX_RATE:g}")
    return value


Rate = Annotated[float, AfterValidator(_rate)]


class EmpiricalProfile(BaseModel):
    """What `roofcheck probe` measured on one chip. Unknown fields are refused (422)."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field(min_length=1, max_length=HOST_LENGTH)
    backend: Literal["torch", "numpy"]
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="ISO date of the run")
    copy_bytes_per_s: Rate
    matmul_flops_per_s: dict[Dtype, Rate] = Field(min_length=1)
    software: dict[str, Annotated[str, Field(max_length=100)]] = Field(default_factory=dict)
    hostname: str | None = Field(default=None, max_length=HOST_LENGTH)
    copy_bytes: int | None = Field(None, ge=0, description="Bytes the probe copied (not stored).")
    matmul_n: int | None = Field(None, ge=0, description="The probe's matmul size (not stored).")


def profile_view(row: EmpiricalProfileRow, record: ChipRecord) -> dict[str, Any]:
    """A stored profile with each figure as a fraction of the datasheet figure."""
    chip = record.chip
    fractions: dict[str, float] = {}
    for dtype, rate in row.matmul_flops_per_s.items():
        try:
            fractions[dtype] = rate / chip.peak(Dtype(dtype), Unit.MATRIX).flops_per_s
        except EngineError:  # no matrix peak for this dtype on this chip
            continue
    return {
        "id": row.id,
        "created_at": row.created_at.isoformat(),
        "device": row.device,
        "backend": row.backend,
        "date": row.measured_on,
        "software": row.software,
        "hostname": row.hostname,
        "copy_bytes_per_s": row.copy_bytes_per_s,
        "copy_fraction_of_datasheet": row.copy_bytes_per_s / chip.memory_bandwidth,
        "matmul_flops_per_s": row.matmul_flops_per_s,
        "matmul_fraction_of_datasheet": fractions,
    }


_RESPONSES: dict[int | str, dict[str, str]] = {
    **UNAUTHORIZED,
    404: {"description": "No such chip; with suggestions."},
    **UNAVAILABLE,
}


@router.post("/chips/{chip}/empirical", status_code=201, responses=_RESPONSES)
def add_profile(
    chip: Annotated[str, Path(max_length=100)],
    profile: EmpiricalProfile,
    _writer: WriterDep,
    catalogs: CatalogsDep,
    sessions: SessionsDep,
) -> dict[str, Any]:
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
    return {"chip": record.entry.id, **profile_view(row, record)}
