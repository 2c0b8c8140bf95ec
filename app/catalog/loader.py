"""Load and validate the catalogs once, at start-up; a bad file stops the service."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.catalog.names import NameIndex
from app.catalog.schema import ChipCatalog, ChipEntry, ModelCatalog, ModelEntry
from app.engine import Architecture, Backend, Chip, Dtype, EngineError, architecture_from_config


class CatalogError(Exception):
    """A catalog file is missing, not JSON, or inconsistent; the message names chip and field."""


@dataclass(frozen=True, slots=True)
class ChipRecord:
    """A catalog entry (with sources) and the engine's view of it."""

    entry: ChipEntry
    chip: Chip


@dataclass(frozen=True, slots=True)
class ChipCatalogVersion:
    """One loaded version of the chip catalog."""

    catalog: ChipCatalog
    content_sha256: str
    chips: dict[str, ChipRecord]
    names: NameIndex
    content: Any  # the JSON content as read, for the record in the database

    @property
    def version(self) -> str:
        """The catalog's version string."""
        return self.catalog.version

    def resolve(self, name: str) -> ChipRecord:
        """The chip an id or alias names; UnknownName with suggestions otherwise."""
        return self.chips[self.names.resolve(name)]


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """A model catalog entry and its parsed architecture."""

    entry: ModelEntry
    arch: Architecture


@dataclass(frozen=True, slots=True)
class ModelCatalogVersion:
    """The loaded model catalog."""

    catalog: ModelCatalog
    models: dict[str, ModelRecord]
    names: NameIndex

    def resolve(self, name: str) -> ModelRecord:
        """The model an id or alias names; UnknownName with suggestions otherwise."""
        return self.models[self.names.resolve(name)]


def content_hash(data: Any) -> str:
    """SHA-256 of the canonical JSON form (key order and whitespace do not count)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path}: not valid JSON: {exc}") from exc


def _describe(exc: ValidationError, data: Any, path: str, kind: str) -> CatalogError:
    """A message naming the chip/model (by id, not list index) and the field of each error."""
    lines = []
    for error in exc.errors():
        loc = list(error["loc"])
        where = ".".join(str(part) for part in loc)
        if len(loc) >= 2 and loc[0] == kind and isinstance(loc[1], int):
            try:
                entry_id = data[kind][loc[1]].get("id", f"#{loc[1]}")
            except (KeyError, IndexError, TypeError, AttributeError):
                entry_id = f"#{loc[1]}"
            field = ".".join(str(part) for part in loc[2:]) or "(entry)"
            where = f"{kind[:-1]} {entry_id}: {field}"
        lines.append(f"{where}: {error['msg']}")
    return CatalogError(f"{path}: invalid catalog:\n  " + "\n  ".join(lines))


def _engine_chip(entry: ChipEntry) -> Chip:
    link, cache = entry.interconnect, entry.last_level_cache
    return Chip(
        id=entry.id,
        name=entry.name,
        memory_bytes=entry.memory.capacity_bytes.value,
        memory_bandwidth=entry.memory.bandwidth_bytes_per_s.value,
        matrix_peaks={d: f.value for d, f in entry.peak_flops_per_s.matrix.items()},
        vector_peaks={d: f.value for d, f in entry.peak_flops_per_s.vector.items()},
        sparse_peaks={d: f.value for d, f in entry.peak_flops_per_s.sparse.items()},
        fp16_accumulate_peaks={
            d: f.value for d, f in entry.peak_flops_per_s.fp16_accumulate.items()
        },
        sustained_matrix=entry.sustained.matrix.value,
        sustained_memory=entry.sustained.memory.value,
        scale_up_bandwidth=link.scale_up.bandwidth_bytes_per_s.value if link.scale_up else None,
        host_bandwidth=link.host.bandwidth_bytes_per_s.value if link.host else None,
        sustained_matrix_by_dtype={d: f.value for d, f in entry.sustained.matrix_by_dtype.items()},
        compute_units=int(entry.compute_units.value) if entry.compute_units else None,
        warp_mma=entry.sustained.warp_mma.value if entry.sustained.warp_mma else 1.0,
        backend=next((b for b in Backend if b == entry.vendor.lower()), None),
        cache_name=cache.name if cache else "L2",
        cache_bytes=cache.size_bytes.value if cache and cache.size_bytes else None,
        cache_bandwidth=(
            cache.bandwidth_bytes_per_s.value if cache and cache.bandwidth_bytes_per_s else None
        ),
    )


def chip_catalog_from_data(data: Any, origin: str) -> ChipCatalogVersion:
    """Validate and index chip-catalog content (from the file, or as stored in the database)."""
    try:
        catalog = ChipCatalog.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc, data, origin, "chips") from exc
    chips = {entry.id: ChipRecord(entry, _engine_chip(entry)) for entry in catalog.chips}
    names = NameIndex("chip", [(name, e.id) for e in catalog.chips for name in (e.id, *e.aliases)])
    return ChipCatalogVersion(catalog, content_hash(data), chips, names, data)


def load_chip_catalog(path: Path) -> ChipCatalogVersion:
    """Read, validate and index chip_catalog.json."""
    return chip_catalog_from_data(_read(path), str(path))


# config.json's torch_dtype -> the engine's dtype
_TORCH_DTYPES = {"bfloat16": Dtype.BF16, "float16": Dtype.FP16, "float32": Dtype.FP32}


def _config_dtype(entry: ModelEntry, arch: Architecture) -> Dtype | None:
    """The weights' dtype the config says: its quantised format, else its torch_dtype."""
    if arch.quantised is not None:
        return arch.quantised.dtype
    return _TORCH_DTYPES.get(str(entry.config.get("torch_dtype")))


def load_model_catalog(path: Path) -> ModelCatalogVersion:
    """Read and validate models.json, and parse every architecture."""
    data = _read(path)
    try:
        catalog = ModelCatalog.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc, data, str(path), "models") from exc
    models: dict[str, ModelRecord] = {}
    names: list[tuple[str, str]] = []
    for entry in catalog.models:
        try:
            arch = architecture_from_config(entry.config)
        except EngineError as exc:
            raise CatalogError(f"{path}: model {entry.id}: {exc}") from exc
        for name in (entry.id, *entry.aliases, *([entry.hf_repo] if entry.hf_repo else [])):
            if any(n == name.lower() and i != entry.id for n, i in names):
                raise CatalogError(f"{path}: model {entry.id}: name {name!r} is used twice")
            names.append((name.lower(), entry.id))
        if entry.id in models:
            raise CatalogError(f"{path}: model {entry.id}: id is used twice")
        if (config_dtype := _config_dtype(entry, arch)) not in (None, entry.checkpoint.dtype):
            raise CatalogError(
                f"{path}: model {entry.id}: checkpoint.dtype {entry.checkpoint.dtype} is not "
                f"its config's {config_dtype}"
            )
        models[entry.id] = ModelRecord(entry, arch)
    return ModelCatalogVersion(catalog, models, NameIndex("model", names))
