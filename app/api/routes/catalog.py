"""The catalogs: chips with every figure's source, models with derived counts, versions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from app.api.deps import CatalogsDep, OptionalSessionsDep, SessionsDep
from app.api.routes.empirical import profile_view
from app.catalog.loader import ChipCatalogVersion, ChipRecord, ModelRecord
from app.db import catalog_versions, empirical
from app.db.availability import UNAVAILABLE
from app.engine import Dtype, Unit, kv_bytes_per_token, param_counts

router = APIRouter(tags=["catalog"])

_Name = Annotated[str, Path(max_length=100)]
_Version = Annotated[str | None, Query(max_length=64)]
_NOT_FOUND: dict[int | str, dict[str, str]] = {
    404: {"description": "Unknown name or catalog version; with suggestions."}
}


def _with_sources(node: Any, catalog: ChipCatalogVersion) -> Any:
    """The entry as JSON, each figure's source key expanded to {key, url, title, kind}."""
    if isinstance(node, dict):
        if "source" in node and "verify" in node:
            source = catalog.catalog.sources[node["source"]]
            return {**node, "source": {"key": node["source"], **source.model_dump()}}
        return {key: _with_sources(value, catalog) for key, value in node.items()}
    return node


def _chip(record: ChipRecord, catalog: ChipCatalogVersion) -> dict[str, Any]:
    chip = record.chip
    ridges = {
        str(dtype): chip.peak(dtype, Unit.MATRIX).flops_per_s / chip.memory_bandwidth
        for dtype in record.entry.peak_flops_per_s.matrix
    }
    body: dict[str, Any] = _with_sources(record.entry.model_dump(mode="json"), catalog)
    body["ridge_intensity_flops_per_byte"] = ridges
    return body


@router.get("/chips", responses=_NOT_FOUND)
async def chips(catalogs: CatalogsDep, catalog_version: _Version = None) -> dict[str, Any]:
    """Every chip of a catalog version, every figure with its source and verification tag."""
    catalog = catalogs.chips(catalog_version)
    return {
        "catalog_version": catalog.version,
        "content_sha256": catalog.content_sha256,
        "conventions": catalog.catalog.conventions,
        "chips": [_chip(record, catalog) for record in catalog.chips.values()],
    }


@router.get("/chips/{chip}", responses=_NOT_FOUND)
def chip(
    chip: _Name,
    catalogs: CatalogsDep,
    sessions: OptionalSessionsDep,
    catalog_version: _Version = None,
) -> dict[str, Any]:
    """One chip by id or alias, with the newest empirical profile measured on it (null when
    there is none, or while the database is unreachable)."""
    catalog = catalogs.chips(catalog_version)
    record = catalog.resolve(chip)
    row = None if sessions is None else empirical.latest(sessions, record.entry.id)
    return {
        "catalog_version": catalog.version,
        **_chip(record, catalog),
        "empirical": None if row is None else profile_view(row, record),
    }


def _model(record: ModelRecord, *, with_config: bool) -> dict[str, Any]:
    entry, arch = record.entry, record.arch
    counts = param_counts(arch)
    att = arch.attention
    body: dict[str, Any] = {
        "id": entry.id,
        "name": entry.name,
        "family": entry.family,
        "aliases": entry.aliases,
        "hf_repo": entry.hf_repo,
        "params_total": counts.total,
        "params_active": counts.active,
        "params_matmul": counts.matmul,
        "params_matmul_active": counts.matmul_active,
        "kv_bytes_per_token": kv_bytes_per_token(arch, Dtype.BF16),
        "kv_bytes_per_token_dtype": "bf16",
        "architecture": {
            "hidden_size": arch.hidden,
            "layers": arch.layers,
            "heads": att.heads,
            "kv_heads": att.kv_heads,
            "head_dim": att.head_dim,
            "vocab_size": arch.vocab,
            "mlp_intermediate": arch.mlp.intermediate,
            "tied_embeddings": arch.tied_embeddings,
            "experts": arch.moe.experts if arch.moe else None,
            "experts_per_token": arch.moe.experts_per_token if arch.moe else None,
            "mla": att.mla is not None,
            "sliding_window": att.sliding_window,
            "max_position_embeddings": arch.max_positions,
        },
        "official_params": entry.official_params.model_dump(),
        "config_source": entry.config_source,
    }
    if with_config:
        body["config"] = entry.config
    return body


@router.get("/models")
async def models(catalogs: CatalogsDep) -> dict[str, Any]:
    """Every architecture with its derived parameter counts and KV bytes per token."""
    return {"models": [_model(r, with_config=False) for r in catalogs.models.models.values()]}


@router.get("/models/{model}", responses=_NOT_FOUND)
async def model(model: _Name, catalogs: CatalogsDep) -> dict[str, Any]:
    """One model by id or alias, with its Hugging Face config."""
    return _model(catalogs.models.resolve(model), with_config=True)


@router.get("/catalog/versions", responses=UNAVAILABLE)
def versions(catalogs: CatalogsDep, sessions: SessionsDep) -> dict[str, Any]:
    """Every chip-catalog version the service has loaded, with its content hash and dates.

    `usable` is false for a stored version that no longer validates against today's schema
    (it is kept, but cannot be calculated with).
    """
    return {
        "current": catalogs.current,
        "versions": [
            {
                "version": row.version,
                "content_sha256": row.content_sha256,
                "first_loaded_at": row.loaded_at.isoformat(),
                "date": row.content.get("date"),
                "current": row.version == catalogs.current,
                "usable": row.version in catalogs.chip_versions,
            }
            for row in catalog_versions.stored_versions(sessions)
        ],
    }
