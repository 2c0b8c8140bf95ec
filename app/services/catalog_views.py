"""The catalogs as the API shows them: chips with every figure's source expanded, models with
their derived counts, and the chip-catalog versions the service has loaded; and the chips
side by side, as the catalog page's comparison table shows them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.catalog.loader import ChipCatalogVersion, ChipRecord, ModelRecord
from app.db import catalog_versions, empirical
from app.db.availability import unless_unreachable
from app.engine import Dtype, Unit, kv_bytes_per_token, param_counts
from app.schemas.catalog_bodies import (
    ArchitectureOut,
    CatalogVersionOut,
    CatalogVersions,
    ChipDetail,
    ChipList,
    ChipOut,
    EmpiricalOut,
    ModelDetail,
    ModelOut,
)
from app.services.catalogs import Catalogs
from app.services.profiles import profile_view

# the dtype of the KV bytes per token a model lists (the serving default, as in the answers)
KV_DTYPE = Dtype.BF16


@dataclass(frozen=True, slots=True)
class ChipSummary:
    """One row of the chips side by side; SI units (bytes, bytes/s, FLOP/s, watts). A figure
    the chip does not publish is None."""

    id: str
    name: str
    vendor: str
    aliases: tuple[str, ...]
    memory_bytes: float
    bandwidth: float
    dtype16: Dtype  # bf16, or fp16 on a chip without a bf16 matrix peak (T4, V100)
    peak16: float | None
    ridge16: float | None  # FLOP/B where the 16-bit matrix roof meets the memory roof
    peak_fp8: float | None
    board_power_w: float | None
    released: str | None  # YYYY-MM, the vendor's announcement or launch


def chip_summaries(catalog: ChipCatalogVersion) -> list[ChipSummary]:
    """Every chip of the catalog version in one row each, newest first by release month (the
    catalog's order among chips of one month; chips without a sourced month last)."""
    rows = []
    for record in catalog.chips.values():
        entry, chip = record.entry, record.chip
        dtype16 = chip.default_compute_dtype(Dtype.BF16)
        peak16 = chip.matrix_peaks.get(dtype16)
        rows.append(
            ChipSummary(
                id=entry.id,
                name=entry.name,
                vendor=entry.vendor,
                aliases=tuple(entry.aliases),
                memory_bytes=chip.memory_bytes,
                bandwidth=chip.memory_bandwidth,
                dtype16=dtype16,
                peak16=peak16,
                ridge16=None if peak16 is None else chip.ridge_intensity(dtype16, Unit.MATRIX),
                peak_fp8=chip.matrix_peaks.get(Dtype.FP8),
                board_power_w=entry.board_power_w.value if entry.board_power_w else None,
                released=entry.released.value if entry.released else None,
            )
        )
    # two stable sorts: by month, newest first, then the undated to the end
    rows.sort(key=lambda row: row.released or "", reverse=True)
    rows.sort(key=lambda row: row.released is None)
    return rows


def _with_sources(node: Any, catalog: ChipCatalogVersion) -> Any:
    """The entry as JSON, each figure's source key expanded to {key, url, title, kind}."""
    if isinstance(node, dict):
        if "source" in node and "verify" in node:
            source = catalog.catalog.sources[node["source"]]
            return {**node, "source": {"key": node["source"], **source.model_dump()}}
        return {key: _with_sources(value, catalog) for key, value in node.items()}
    return node


def _chip_fields(record: ChipRecord, catalog: ChipCatalogVersion) -> dict[str, Any]:
    chip = record.chip
    fields: dict[str, Any] = _with_sources(record.entry.model_dump(mode="json"), catalog)
    fields["ridge_intensity_flops_per_byte"] = {
        dtype: chip.ridge_intensity(dtype, Unit.MATRIX)
        for dtype in record.entry.peak_flops_per_s.matrix
    }
    return fields


def chips(catalogs: Catalogs, version: str | None) -> ChipList:
    """Every chip of a catalog version (default: the current one)."""
    catalog = catalogs.chips(version)
    return ChipList(
        catalog_version=catalog.version,
        content_sha256=catalog.content_sha256,
        conventions=catalog.catalog.conventions,
        chips=[ChipOut(**_chip_fields(r, catalog)) for r in catalog.chips.values()],
    )


def chip(
    catalogs: Catalogs, sessions: sessionmaker[Session] | None, name: str, version: str | None
) -> ChipDetail:
    """One chip by id or alias, with the newest empirical profile measured on it (none while
    the database is unreachable, `sessions` None)."""
    catalog = catalogs.chips(version)
    record = catalog.resolve(name)
    row = None
    if sessions is not None:
        row = unless_unreachable(partial(empirical.latest, sessions, record.entry.id))
    return ChipDetail(
        catalog_version=catalog.version,
        **_chip_fields(record, catalog),
        empirical=None if row is None else profile_view(row, record),
    )


def measured_profiles(
    version: ChipCatalogVersion, sessions: sessionmaker[Session] | None
) -> dict[str, EmpiricalOut]:
    """The newest empirical profile of each chip of `version` that has one, by chip id (none
    while the database is unreachable, `sessions` None)."""
    rows = None
    if sessions is not None:
        rows = unless_unreachable(partial(empirical.latest_by_chip, sessions))
    return {
        chip_id: profile_view(row, version.chips[chip_id])
        for chip_id, row in (rows or {}).items()
        if chip_id in version.chips
    }


def _model_fields(record: ModelRecord) -> dict[str, Any]:
    entry, arch = record.entry, record.arch
    counts = param_counts(arch)
    att = arch.attention
    return {
        "id": entry.id,
        "name": entry.name,
        "family": entry.family,
        "aliases": entry.aliases,
        "hf_repo": entry.hf_repo,
        "params_total": counts.total,
        "params_active": counts.active,
        "params_matmul": counts.matmul,
        "params_matmul_active": counts.matmul_active,
        "kv_bytes_per_token": kv_bytes_per_token(arch, KV_DTYPE),
        "kv_bytes_per_token_dtype": KV_DTYPE,
        "architecture": ArchitectureOut(
            hidden_size=arch.hidden,
            layers=arch.layers,
            heads=att.heads,
            kv_heads=att.kv_heads,
            head_dim=att.head_dim,
            vocab_size=arch.vocab,
            mlp_intermediate=arch.mlp.intermediate,
            tied_embeddings=arch.tied_embeddings,
            experts=arch.moe.experts if arch.moe else None,
            experts_per_token=arch.moe.experts_per_token if arch.moe else None,
            mla=att.mla is not None,
            sliding_window=att.sliding_window,
            max_position_embeddings=arch.max_positions,
        ),
        "official_params": entry.official_params.model_dump(),
        "config_source": entry.config_source,
        "checkpoint": entry.checkpoint.model_dump(),
    }


def models(catalogs: Catalogs) -> list[ModelOut]:
    """Every model of the catalog, without its config."""
    return [ModelOut(**_model_fields(r)) for r in catalogs.models.models.values()]


def model(catalogs: Catalogs, name: str) -> ModelDetail:
    """One model by id or alias, with its Hugging Face config."""
    record = catalogs.models.resolve(name)
    return ModelDetail(**_model_fields(record), config=record.entry.config)


def versions(catalogs: Catalogs, sessions: sessionmaker[Session]) -> CatalogVersions:
    """Every chip-catalog version stored; `usable` is false for one that no longer validates
    against today's schema (kept, but not calculated with)."""
    return CatalogVersions(
        current=catalogs.current,
        versions=[
            CatalogVersionOut(
                version=row.version,
                content_sha256=row.content_sha256,
                first_loaded_at=row.loaded_at.isoformat(),
                date=row.content.get("date"),
                current=row.version == catalogs.current,
                usable=row.version in catalogs.chip_versions,
            )
            for row in catalog_versions.stored_versions(sessions)
        ],
    )
