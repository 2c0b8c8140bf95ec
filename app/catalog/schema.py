"""Pydantic schemas of the catalog files: every figure is {value, source, verify, note}.

Units are in the field names (bytes, bytes_per_s, flops_per_s); all values are SI.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from app.engine.units import TERA, Dtype

_ID = r"^[a-z0-9][a-z0-9._/-]*$"
_MATRIX_DTYPES = frozenset(
    {
        Dtype.FP64,
        Dtype.TF32,
        Dtype.FP32,
        Dtype.BF16,
        Dtype.FP16,
        Dtype.FP8,
        Dtype.INT8,
        Dtype.INT4,
        Dtype.FP4,
    }
)
_VECTOR_DTYPES = frozenset({Dtype.FP64, Dtype.FP32, Dtype.FP16, Dtype.BF16})
# the dtypes whose sparse tensor rate runs the 2:4 pattern (two kept values of every four along
# K); tf32 runs 1:2 and 4-bit types their own patterns, so their "with sparsity" rates stay out
_SPARSE_DTYPES = frozenset({Dtype.BF16, Dtype.FP16, Dtype.FP8, Dtype.INT8})
# the 16-bit dtype whose products can accumulate in fp16 (bf16 accumulates in fp32 only)
_FP16_ACCUMULATE_DTYPES = frozenset({Dtype.FP16})


def _finite_positive(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a positive finite number, got {value}")
    return value


def _url(value: str) -> str:
    if not re.match(r"^https?://\S+$", value):
        raise ValueError(f"must be an http(s) URL, got {value!r}")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """A number with its source key and how well it was verified (V/S/U/D as in chips.md)."""

    value: Annotated[float, AfterValidator(_finite_positive)]
    source: str
    verify: Literal["V", "S", "U", "D"]
    note: str | None = None


class Fraction(Figure):
    """A figure between 0 (exclusive) and 1."""

    value: Annotated[float, Field(gt=0, le=1)]


class Count(Figure):
    """A figure that counts things (compute units): a positive whole number."""

    @model_validator(mode="after")
    def _whole(self) -> Count:
        if not self.value.is_integer():
            raise ValueError(f"must be a whole number, got {self.value}")
        return self


class Released(_Strict):
    """The month a chip was announced or launched (YYYY-MM), with its source."""

    value: Annotated[str, Field(pattern=r"^(19|20)\d{2}-(0[1-9]|1[0-2])$")]
    source: str
    verify: Literal["V", "S", "U", "D"]
    note: str | None = None


class Source(_Strict):
    """Where figures come from."""

    url: Annotated[str, AfterValidator(_url)]
    title: str
    kind: Literal["vendor", "secondary", "measurement"]


class Memory(_Strict):
    """Device memory: the marketing label, usable capacity in bytes, datasheet bandwidth."""

    label: str
    capacity_bytes: Figure
    bandwidth_bytes_per_s: Figure


class Peaks(_Strict):
    """Dense peak FLOP/s (ops/s for integers) per dtype, on the matrix unit and the vector ALUs,
    and the matrix unit's 2:4 structured-sparse rate where the vendor prints one.

    `sparse` counts FLOPs as vendors do: the dense-equivalent 2 m n k of the product, so a
    sparse rate is (at most) twice the dense one (docs/formulas.md#structured-sparsity).
    `matrix` rates accumulate in fp32; `fp16_accumulate` holds the dense fp16 rate with fp16
    accumulation where the vendor prints a faster one (GeForce cards: twice), which a stack
    that accumulates in fp16 runs at (docs/formulas.md#accumulation).
    """

    matrix: dict[Dtype, Figure]
    vector: dict[Dtype, Figure] = Field(default_factory=dict)
    sparse: dict[Dtype, Figure] = Field(default_factory=dict)
    fp16_accumulate: dict[Dtype, Figure] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_rows(self) -> Peaks:
        if not self.matrix:
            raise ValueError("matrix: at least one matrix peak is required")
        for unit, rows, allowed in (
            ("matrix", self.matrix, _MATRIX_DTYPES),
            ("vector", self.vector, _VECTOR_DTYPES),
        ):
            extra = set(rows) - allowed
            if extra:
                raise ValueError(f"{unit}: dtype {sorted(extra)[0]} is not a {unit} rate")
            for dtype, figure in rows.items():
                if _is_sparse(figure):
                    raise ValueError(
                        f"{unit}.{dtype}: {figure.value:.4g} is the 'with sparsity' figure its "
                        "note quotes; a peak is dense: give half of it"
                    )
        for dtype, figure in self.sparse.items():
            if dtype not in _SPARSE_DTYPES:
                raise ValueError(f"sparse: dtype {dtype} has no 2:4 sparse rate")
            dense = self.matrix.get(dtype)
            if dense is None:
                raise ValueError(f"sparse.{dtype}: the chip has no dense {dtype} matrix peak")
            # skipping half the products at most doubles the rate; a figure outside
            # (dense, 2 dense] is a dense one or a misread (3% for the vendors' rounding: the L40S
            # prints 362.05 dense, 733 sparse)
            if not dense.value < figure.value <= 2 * dense.value * 1.03:
                raise ValueError(
                    f"sparse.{dtype}: {figure.value:.4g} must exceed the dense "
                    f"{dense.value:.4g} and be at most twice it"
                )
        for dtype, figure in self.fp16_accumulate.items():
            if dtype not in _FP16_ACCUMULATE_DTYPES:
                raise ValueError(f"fp16_accumulate: {dtype} products do not accumulate in fp16")
            fp32_acc = self.matrix.get(dtype)
            # a faster mode than the fp32-accumulate peak, by the 2x of GeForce's halved
            # fp32-accumulate rate at most (3% for the vendors' rounding)
            if fp32_acc is None or not fp32_acc.value < figure.value <= 2 * fp32_acc.value * 1.03:
                raise ValueError(
                    f"fp16_accumulate.{dtype}: {figure.value:.4g} must exceed the matrix "
                    f"{dtype} (fp32-accumulate) peak and be at most twice it"
                )
        return self


# "vendor prints 125 TFLOP/s with sparsity", "(284 with sparsity)": the number before the phrase
_SPARSE_QUOTE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(?:TFLOP/s|TFLOPS|TOPS|TF)?\s+with sparsity")


def _is_sparse(figure: Figure) -> bool:
    """Whether a peak's value is the 'with sparsity' figure its own note quotes (vendors print
    those in T: TFLOP/s or TOPS)."""
    quoted = _SPARSE_QUOTE.findall(figure.note or "")
    return any(
        math.isclose(figure.value / TERA, float(q.replace(",", "")), rel_tol=5e-3) for q in quoted
    )


class Link(_Strict):
    """A link: its name and bidirectional bandwidth per chip."""

    name: str
    bandwidth_bytes_per_s: Figure


class Interconnect(_Strict):
    """Scale-up (chip-to-chip) and host links; null when the chip has none."""

    scale_up: Link | None = None
    host: Link | None = None


class Sustained(_Strict):
    """Measured fractions of the matrix peak and of the memory bandwidth.

    `matrix` is the bf16-based fraction every matrix dtype uses; `matrix_by_dtype` holds the
    measured fraction of a dtype's own matrix peak where it differs (e.g. fp8).
    """

    matrix: Fraction
    memory: Fraction
    matrix_by_dtype: dict[Dtype, Fraction] = Field(default_factory=dict)
    # the share of the matrix peak Ampere's warp-level MMA (mma.sync) issues, on chips whose
    # full rate needs asynchronous MMA (Hopper's wgmma, datacenter Blackwell's tcgen05)
    warp_mma: Fraction | None = None


class LastLevelCache(_Strict):
    """The cache all of a chip's compute units share in front of its memory (NVIDIA's L2, AMD
    CDNA 3's Infinity Cache, Gaudi's on-die SRAM): its name, size and read bandwidth. A figure
    no source gives is null, and `unknown` says why (docs/formulas.md#the-cache-roof)."""

    name: str
    size_bytes: Figure | None
    bandwidth_bytes_per_s: Figure | None
    unknown: str | None = None

    @model_validator(mode="after")
    def _null_has_a_reason(self) -> LastLevelCache:
        if (self.size_bytes is None or self.bandwidth_bytes_per_s is None) and not self.unknown:
            raise ValueError("unknown: a null size or bandwidth needs the reason it is null")
        if self.size_bytes is None and self.bandwidth_bytes_per_s is not None:
            raise ValueError("size_bytes: a cache with a bandwidth needs its size")
        return self


class PeakDerivation(_Strict):
    """What a matrix peak is made of: the clock its peak is quoted at and the dense FLOPs one
    compute unit (`ChipEntry.compute_units`) does per cycle, per dtype; units x clock x FLOP
    per cycle is the peak (docs/formulas.md#peaks-from-units-clock-and-flop-per-cycle)."""

    clock_hz: Figure
    matrix_flops_per_cycle_per_unit: dict[Dtype, Figure]


class ChipEntry(_Strict):
    """One chip of the catalog."""

    id: Annotated[str, Field(pattern=_ID)]
    name: str
    vendor: str
    aliases: list[Annotated[str, Field(pattern=_ID)]] = Field(default_factory=list)
    memory: Memory
    peak_flops_per_s: Peaks
    interconnect: Interconnect
    sustained: Sustained
    # the units a GEMM's output tiles are spread over: NVIDIA SMs, AMD CUs, Intel Gaudi MMEs,
    # Google TPU TensorCores x MXUs (the note says which)
    compute_units: Count | None = None
    # the vendor's maximum board power (TDP, TGP) in watts; null where none could be sourced
    board_power_w: Figure | None = None
    # the vendor's announcement or launch month (the note says which); null where unsourced
    released: Released | None = None
    # the cache shared in front of memory; null where the catalog has not looked
    last_level_cache: LastLevelCache | None = None
    # the matrix peaks as units x clock x FLOP per cycle, where the vendor gives the parts
    peak_derivation: PeakDerivation | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _fractions_of_known_peaks(self) -> ChipEntry:
        for dtype in self.sustained.matrix_by_dtype:
            if dtype not in self.peak_flops_per_s.matrix:
                raise ValueError(
                    f"sustained.matrix_by_dtype.{dtype}: the chip has no {dtype} matrix peak "
                    "for it to be a fraction of"
                )
        derivation = self.peak_derivation
        if derivation is not None:
            if self.compute_units is None:
                raise ValueError("peak_derivation: needs compute_units, the units it multiplies")
            for dtype in derivation.matrix_flops_per_cycle_per_unit:
                if dtype not in self.peak_flops_per_s.matrix:
                    raise ValueError(
                        f"peak_derivation.matrix_flops_per_cycle_per_unit.{dtype}: the chip "
                        f"has no {dtype} matrix peak for it to derive"
                    )
        return self

    def figures(self) -> dict[str, Figure]:
        """Every figure of the chip by its dotted path."""
        found: dict[str, Figure] = {}
        _collect(self, "", found)
        return found


def _collect(node: Any, prefix: str, found: dict[str, Figure]) -> None:
    if isinstance(node, Figure):
        found[prefix] = node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            _collect(getattr(node, name), f"{prefix}.{name}".lstrip("."), found)
    elif isinstance(node, dict):
        for key, value in node.items():
            _collect(value, f"{prefix}.{key}", found)


class ChipCatalog(_Strict):
    """The versioned chip catalog file (chip_catalog.json)."""

    version: Annotated[str, Field(min_length=1, max_length=64)]
    date: str | None = None
    description: str = ""
    conventions: str = ""
    sources: dict[str, Source]
    chips: list[ChipEntry]

    @model_validator(mode="after")
    def _consistent(self) -> ChipCatalog:
        names: dict[str, str] = {}
        for chip in self.chips:
            for name in (chip.id, *chip.aliases):
                if name in names:
                    raise ValueError(
                        f"chip {chip.id}: name {name!r} is already used by chip {names[name]}"
                    )
                names[name] = chip.id
            sourced: dict[str, Figure | Released] = dict(chip.figures())
            if chip.released is not None:
                sourced["released"] = chip.released
            for path, figure in sourced.items():
                if figure.source not in self.sources:
                    raise ValueError(
                        f"chip {chip.id}: {path}.source {figure.source!r} is not in sources"
                    )
        return self


class OfficialParams(_Strict):
    """The officially stated parameter count, with its source."""

    total: Annotated[int, Field(gt=0)]
    active: Annotated[int, Field(gt=0)] | None = None
    active_counts_input_embedding: bool = True
    source: dict[str, str]


class Checkpoint(_Strict):
    """The dtype the published weights are stored in (the quantised linear weights' where
    they are quantised), with its source; null where none are published."""

    dtype: Dtype | None
    source: dict[str, str]


class ModelEntry(_Strict):
    """One architecture: its Hugging Face config and where it was read."""

    id: Annotated[str, Field(pattern=_ID)]
    name: str
    family: str
    aliases: list[Annotated[str, Field(pattern=_ID)]] = Field(default_factory=list)
    hf_repo: str | None
    config_source: dict[str, str]
    checkpoint: Checkpoint
    official_params: OfficialParams
    config: dict[str, Any]


class ModelCatalog(_Strict):
    """The model catalog file (app/catalog/models.json)."""

    version: str
    models: list[ModelEntry]
