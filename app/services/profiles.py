"""Empirical profiles (ceilings measured by `roofcheck probe`) beside the datasheet figures:
stored, deleted, and read as fractions of the datasheet's."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy.orm import Session, sessionmaker

from app.catalog.loader import ChipRecord
from app.db import empirical
from app.db.models import EmpiricalProfileRow
from app.engine import Dtype, EngineError, InvalidInput, Unit
from app.engine.hardware import names_chip
from app.schemas.catalog_bodies import EmpiricalOut, EmpiricalProfile, StoredProfile


def store(
    sessions: sessionmaker[Session],
    record: ChipRecord,
    profile: EmpiricalProfile,
    writer: str | None,
) -> StoredProfile:
    """Store `profile` as measured on the chip `record`, written by `writer`."""
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


def delete(
    sessions: sessionmaker[Session], record: ChipRecord, profile_id: int, writer: str | None
) -> bool:
    """Delete the profile `profile_id` of the chip `record` (UnknownName if it has none such);
    False, deleting nothing, where writes are restricted and another writer stored it."""
    try:
        empirical.delete(sessions, record.entry.id, profile_id, writer)
    except empirical.NotTheWriter:
        return False
    return True


def profile_view(row: EmpiricalProfileRow, record: ChipRecord) -> EmpiricalOut:
    """A stored profile with each figure as a fraction of the datasheet figure."""
    chip = record.chip
    fractions: dict[str, float] = {}
    for dtype, rate in row.matmul_flops_per_s.items():
        try:
            fractions[dtype] = rate / chip.peak(Dtype(dtype), Unit.MATRIX).flops_per_s
        except EngineError:  # no matrix peak for this dtype on this chip
            continue
    return EmpiricalOut(
        id=row.id,
        created_at=row.created_at.isoformat(),
        device=row.device,
        backend=row.backend,
        date=row.measured_on,
        software=row.software,
        hostname=row.hostname,
        copy_bytes_per_s=row.copy_bytes_per_s,
        copy_fraction_of_datasheet=row.copy_bytes_per_s / chip.memory_bandwidth,
        matmul_flops_per_s=row.matmul_flops_per_s,
        matmul_fraction_of_datasheet=fractions,
        forced=row.forced,
        written_by=row.written_by,
    )


def device_matches(device: str, backend: str, record: ChipRecord) -> bool:
    """Whether a probe ran on the chip `record`: with PyTorch (NumPy measures the CPU) on a
    device whose name names the chip (`names_chip`)."""
    return backend == "torch" and names_chip(device, record.entry.id)


# the matrix fraction a profile lends a chip: of the dtypes the probe measured, the first of
# these (training and serving run in bf16; the probe's CPU backend measures fp32 and fp64)
_MATRIX_PREFERENCE = ("bf16", "fp16", "fp32", "fp64")


@dataclass(frozen=True, slots=True)
class MeasuredCeilings:
    """A chip whose sustained fractions are the ones `roofcheck probe` measured on it."""

    record: ChipRecord
    profile: EmpiricalOut
    dtype: str  # whose matmul fraction stands for the chip's sustained matrix fraction


def measured_ceilings(record: ChipRecord, row: EmpiricalProfileRow) -> MeasuredCeilings:
    """`record` with the sustained fractions of the profile `row` instead of the catalog's."""
    profile = profile_view(row, record)
    fractions = profile.matmul_fraction_of_datasheet
    dtype = next((d for d in _MATRIX_PREFERENCE if d in fractions), None)
    if dtype is None:
        raise InvalidInput(
            "ceilings", f"the profile of {record.entry.id} measured no matmul rate this chip lists"
        )
    chip = replace(
        record.chip,
        sustained_matrix=min(1.0, fractions[dtype]),
        sustained_memory=min(1.0, profile.copy_fraction_of_datasheet),
    )
    return MeasuredCeilings(ChipRecord(record.entry, chip), profile, dtype)
