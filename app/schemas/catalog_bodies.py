"""Bodies of the catalog endpoints: chips, models, catalog versions and empirical profiles."""

from __future__ import annotations

import math
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.columns import HOST_LENGTH
from app.engine import Dtype

MAX_RATE = 1e18  # 1 EFLOP/s or 1 EB/s: far beyond any single chip


def _rate(value: float) -> float:
    if not (math.isfinite(value) and 0 < value <= MAX_RATE):
        raise ValueError(f"must be > 0 and <= {MAX_RATE:g}")
    return value


Rate = Annotated[float, AfterValidator(_rate)]


def _calendar_date(value: str) -> str:
    date.fromisoformat(value)  # ValueError for a day no calendar has (2026-13-45)
    return value


class EmpiricalProfile(BaseModel):
    """What `roofcheck probe` measured on one chip. Unknown fields are refused (422)."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field(min_length=1, max_length=HOST_LENGTH)
    backend: Literal["torch", "numpy"]
    date: Annotated[str, AfterValidator(_calendar_date)] = Field(
        pattern=r"^\d{4}-\d{2}-\d{2}$", description="ISO date of the run"
    )
    copy_bytes_per_s: Rate
    matmul_flops_per_s: dict[Dtype, Rate] = Field(min_length=1)
    software: dict[str, Annotated[str, Field(max_length=100)]] = Field(default_factory=dict)
    hostname: str | None = Field(default=None, max_length=HOST_LENGTH)
    copy_bytes: int | None = Field(None, ge=0, description="Bytes the probe copied (not stored).")
    matmul_n: int | None = Field(None, ge=0, description="The probe's matmul size (not stored).")
    force: bool = Field(
        False,
        description="Store the profile although its device is not the chip (recorded as forced).",
    )


# --- answers -------------------------------------------------------------------------------


class Health(BaseModel):
    """Liveness, and the chip-catalog version answers come from."""

    # degraded: the database is unreachable (the calculations still answer)
    status: Literal["ok", "degraded"]
    catalog_version: str


class SourceOut(BaseModel):
    """Where a figure comes from."""

    key: str
    url: str
    title: str
    kind: Literal["vendor", "secondary", "measurement"]


class FigureOut(BaseModel):
    """A catalog figure with its source and how well it was verified (V, S, U or D)."""

    value: float
    source: SourceOut
    verify: Literal["V", "S", "U", "D"]
    note: str | None


class ReleasedOut(BaseModel):
    """The month the chip was announced or launched, with its source."""

    value: str = Field(description="YYYY-MM")
    source: SourceOut
    verify: Literal["V", "S", "U", "D"]
    note: str | None


class MemoryOut(BaseModel):
    """Device memory: the marketing label, usable bytes, datasheet bandwidth (bytes/s)."""

    label: str
    capacity_bytes: FigureOut
    bandwidth_bytes_per_s: FigureOut


class PeaksOut(BaseModel):
    """Dense peak FLOP/s per dtype on the matrix unit and on the vector ALUs, and the matrix
    unit's 2:4 structured-sparse rates (dense-equivalent FLOP/s) where the vendor prints them."""

    matrix: dict[Dtype, FigureOut]
    vector: dict[Dtype, FigureOut]
    sparse: dict[Dtype, FigureOut] = Field(default_factory=dict)
    fp16_accumulate: dict[Dtype, FigureOut] = Field(
        default_factory=dict,
        description="The fp16 matrix rate with fp16 accumulation where the vendor prints one "
        "faster than `matrix` (fp32 accumulation): GeForce cards, twice. Stacks that accumulate "
        "in fp16 (llama.cpp) run at it.",
    )


class LinkOut(BaseModel):
    """A link and its bidirectional bandwidth per chip (bytes/s)."""

    name: str
    bandwidth_bytes_per_s: FigureOut


class InterconnectOut(BaseModel):
    """Scale-up (chip-to-chip) and host links; null when the chip has none."""

    scale_up: LinkOut | None
    host: LinkOut | None


class SustainedOut(BaseModel):
    """Measured fractions of the matrix peak and of the memory bandwidth."""

    matrix: FigureOut
    memory: FigureOut
    matrix_by_dtype: dict[Dtype, FigureOut] = Field(
        default_factory=dict,
        description="Measured fractions of a dtype's own matrix peak where they differ from "
        "`matrix` (e.g. fp8).",
    )
    warp_mma: FigureOut | None = Field(
        default=None,
        description="The share of the matrix peak Ampere's warp-level MMA (mma.sync, "
        "FlashAttention-2) issues where the full rate needs asynchronous MMA (Hopper, "
        "B200); null: no such loss.",
    )


class LastLevelCacheOut(BaseModel):
    """The cache every compute unit shares in front of memory (docs/formulas.md#the-cache-roof):
    its size (bytes) and read bandwidth (bytes/s), each null where no source gives it, and
    then `unknown` says why."""

    name: str
    size_bytes: FigureOut | None
    bandwidth_bytes_per_s: FigureOut | None
    unknown: str | None


class PeakDerivationOut(BaseModel):
    """With `compute_units`, the parts whose product is each matrix peak: the clock (Hz) and
    the dense FLOPs one unit does per cycle, per dtype."""

    clock_hz: FigureOut
    matrix_flops_per_cycle_per_unit: dict[Dtype, FigureOut]


class ChipOut(BaseModel):
    """One chip: every figure with its source, and the ridge of each matrix peak."""

    id: str
    name: str
    vendor: str
    aliases: list[str]
    memory: MemoryOut
    peak_flops_per_s: PeaksOut
    interconnect: InterconnectOut
    sustained: SustainedOut
    compute_units: FigureOut | None = Field(
        default=None,
        description="The units a GEMM's output tiles are spread over (NVIDIA SMs, AMD CUs, "
        "Gaudi MMEs, TPU TensorCores x MXUs); null where not catalogued.",
    )
    board_power_w: FigureOut | None = Field(
        default=None,
        description="The vendor's maximum board power (TDP or TGP), watts; null where it "
        "could not be sourced.",
    )
    released: ReleasedOut | None = Field(
        default=None,
        description="The vendor's announcement or launch month (the note says which); null "
        "where it could not be sourced.",
    )
    last_level_cache: LastLevelCacheOut | None = Field(
        default=None,
        description="The cache shared in front of memory (L2, Infinity Cache); null where the "
        "catalog has not looked.",
    )
    peak_derivation: PeakDerivationOut | None = Field(
        default=None,
        description="units x clock x FLOP per cycle per unit = each matrix peak, where the "
        "vendor gives the parts; null elsewhere.",
    )
    notes: str | None
    ridge_intensity_flops_per_byte: dict[Dtype, float] = Field(
        description="matrix peak / memory bandwidth, FLOPs per byte, per dtype."
    )


class ChipList(BaseModel):
    """Every chip of one catalog version."""

    catalog_version: str
    content_sha256: str
    conventions: str
    chips: list[ChipOut]


class EmpiricalOut(BaseModel):
    """A stored empirical profile, each figure also as a fraction of the datasheet's."""

    id: int
    created_at: str = Field(description="ISO 8601, when it was stored.")
    device: str
    backend: str
    date: str = Field(description="ISO date of the run.")
    software: dict[str, str]
    hostname: str | None
    copy_bytes_per_s: float
    copy_fraction_of_datasheet: float
    matmul_flops_per_s: dict[str, float]
    matmul_fraction_of_datasheet: dict[str, float]
    forced: bool = Field(description="Stored although its device is not this chip.")
    written_by: str | None = Field(description="The owner of the write token that stored it.")


class _CatalogVersion(BaseModel):
    catalog_version: str


class ChipDetail(ChipOut, _CatalogVersion):
    """One chip, with the newest empirical profile measured on it (null if none)."""

    empirical: EmpiricalOut | None


class _ChipId(BaseModel):
    chip: str


class StoredProfile(EmpiricalOut, _ChipId):
    """An empirical profile as stored for `chip`."""


class ArchitectureOut(BaseModel):
    """The hyperparameters the engine reads from a model's config."""

    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    mlp_intermediate: int
    tied_embeddings: bool
    experts: int | None
    experts_per_token: int | None
    mla: bool = Field(description="Multi-head latent attention (DeepSeek).")
    sliding_window: int | None
    max_position_embeddings: int | None


class OfficialParamsOut(BaseModel):
    """The officially stated parameter count, with its source."""

    total: int
    active: int | None
    active_counts_input_embedding: bool
    source: dict[str, str]


class CheckpointOut(BaseModel):
    """The dtype the published weights are stored in, with its source."""

    dtype: Dtype | None = Field(
        description="The quantised linear weights' where they are quantised (gpt-oss: mxfp4, "
        "its routed experts); null where no weights are published. An inference's weights "
        "default to it where it is narrower than the compute dtype."
    )
    source: dict[str, str]


class ModelOut(BaseModel):
    """One model: derived parameter counts, KV-cache bytes per token, architecture."""

    id: str
    name: str
    family: str
    aliases: list[str]
    hf_repo: str | None
    params_total: int
    params_active: int
    params_matmul: int
    params_matmul_active: int
    kv_bytes_per_token: float = Field(description="All layers, in kv_bytes_per_token_dtype.")
    kv_bytes_per_token_dtype: Dtype
    architecture: ArchitectureOut
    official_params: OfficialParamsOut
    config_source: dict[str, str]
    checkpoint: CheckpointOut


class ModelDetail(ModelOut):
    """One model with its Hugging Face config."""

    config: dict[str, Any]


class ModelList(BaseModel):
    """Every model of the catalog."""

    models: list[ModelOut]


class CatalogVersionOut(BaseModel):
    """A chip-catalog version the service has loaded."""

    version: str
    content_sha256: str
    first_loaded_at: str = Field(description="ISO 8601.")
    date: str | None
    current: bool
    usable: bool = Field(description="False when it no longer validates against the schema.")


class CatalogVersions(BaseModel):
    """Every chip-catalog version the service has loaded."""

    current: str
    versions: list[CatalogVersionOut]
