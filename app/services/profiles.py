"""Empirical profiles (ceilings measured by `roofcheck probe`) beside the datasheet figures."""

from __future__ import annotations

from app.catalog.loader import ChipRecord
from app.db.models import EmpiricalProfileRow
from app.engine import Dtype, EngineError, Unit
from app.schemas.catalog_bodies import EmpiricalOut


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
    )
