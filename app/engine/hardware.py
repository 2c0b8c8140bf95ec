"""The engine's view of a chip: peak rates, memory and links, in SI units."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from app.engine.errors import Unsupported
from app.engine.stacks import FP16_ACCUMULATE, Backend, Software
from app.engine.units import Dtype, Unit

# Pointwise kernels in fp16/bf16/fp8/int8 compute in fp32 registers (PyTorch's
# at::opmath_type<Half> and <BFloat16> are float), so where a chip publishes no narrow vector
# rate, the fp32 vector peak is the one that bounds them.
_NARROW = frozenset(
    {
        Dtype.BF16,
        Dtype.FP16,
        Dtype.FP8,
        Dtype.INT8,
        Dtype.FP4,
        Dtype.INT4,
        Dtype.MXFP4,
        Dtype.Q4_0,
        Dtype.Q8_0,
        Dtype.INT4_G128,
        Dtype.INT4_G32,
    }
)


def names_chip(device: str, chip_id: str) -> bool:
    """Whether a device's own name ("NVIDIA H200", as PyTorch and the profiler give it) names
    the catalog chip `chip_id`: it holds the chip's model number as a word, the first part of
    its id with a digit (a100 in "NVIDIA A100-SXM4-80GB", mi300x, 4090, m2); so an L40S is no
    L4 and an H200 no H100."""
    parts = chip_id.split("-")
    model = next((part for part in parts if any(c.isdigit() for c in part)), parts[0])
    return model in re.split(r"[^a-z0-9]+", device.lower())


def pointwise_dtype(dtype: Dtype) -> Dtype:
    """The dtype a pointwise kernel computes in: fp32 for narrower inputs (PyTorch's opmath
    type), so its compute roof is the fp32 vector peak even where a chip publishes a faster
    16-bit vector rate (A100, V100)."""
    return Dtype.FP32 if dtype in _NARROW else dtype


# What 2:4 sparse GEMMs make of the sparse rate (docs/formulas.md#structured-sparsity): the
# sparse tensor cores double the peak, but published cuSPARSELt runs beat the dense GEMM of the
# same shape by far less. The median of three: 1.11x on an A100 (fp16, 4096^3: 0.6080 ms dense
# CUTLASS, 0.5458 ms sparse; https://github.com/NVIDIA/CUDALibrarySamples/issues/57), 1.21x on
# an H100 (8192^3, "around 1.20-1.22x"; https://github.com/NVIDIA/CUDALibrarySamples/issues/203)
# and 1.48x on an A100 (1024 x 9408 x 2048: 192.9 us dense, 130.1 us sparse;
# https://github.com/pytorch/pytorch/pull/96147). A sparse kernel therefore reaches
# SPARSE_SPEEDUP / 2 of the share of its (doubled) peak that the dense kernel reaches of its own.
SPARSE_SPEEDUP = 1.21


def peak_from_parts(units: float, clock_hz: float, flops_per_cycle_per_unit: float) -> float:
    """A peak (FLOP/s) as its parts make it: compute units x clock x FLOPs one unit does per
    cycle (docs/formulas.md#peaks-from-units-clock-and-flop-per-cycle)."""
    return units * clock_hz * flops_per_cycle_per_unit


def ridge_intensity(flops_per_s: float, bytes_per_s: float) -> float:
    """FLOPs per byte where a peak's compute roof meets the memory roof ("machine balance")."""
    return flops_per_s / bytes_per_s


@dataclass(frozen=True, slots=True)
class Peak:
    """The peak rate that applies to some work, and which dtype/unit row it came from."""

    flops_per_s: float
    dtype: Dtype
    unit: Unit


@dataclass(frozen=True, slots=True)
class Chip:
    """One accelerator (one device as the framework sees it).

    `scale_up_bandwidth` and `host_bandwidth` are bidirectional totals per chip, as vendors
    quote them; a collective uses one direction's half. `sustained_*` are measured fractions
    of the peaks that well-tuned kernels reach (for the realistic figure, never the ideal).
    """

    id: str
    name: str
    memory_bytes: float
    memory_bandwidth: float
    # compared, not hashed (mappings are unhashable)
    matrix_peaks: Mapping[Dtype, float] = field(hash=False)
    vector_peaks: Mapping[Dtype, float] = field(hash=False)
    sustained_matrix: float
    sustained_memory: float
    scale_up_bandwidth: float | None = None
    host_bandwidth: float | None = None
    # measured matrix fractions of particular dtypes (e.g. fp8), where they differ from the
    # chip's `sustained_matrix`; and the units a GEMM's tiles are spread over (NVIDIA SMs,
    # AMD CUs, TPU MXUs, Gaudi MMEs), for wave quantisation (docs/formulas.md#realistic-time)
    sustained_matrix_by_dtype: Mapping[Dtype, float] = field(default_factory=dict, hash=False)
    compute_units: int | None = None
    # the share of the matrix peak that kernels written with Ampere's warp-level MMA
    # (mma.sync: FlashAttention-2) can issue where the full rate needs asynchronous MMA
    # (Hopper's wgmma, datacenter Blackwell's tcgen05); 1 elsewhere
    warp_mma: float = 1.0
    # the matrix unit's 2:4 structured-sparse rates, in dense-equivalent FLOP/s (2 m n k per
    # product, as vendors count them): twice the dense rate where published
    sparse_peaks: Mapping[Dtype, float] = field(default_factory=dict, hash=False)
    # the matrix unit's fp16 rate with fp16 accumulation, where it is faster than the
    # fp32-accumulate `matrix_peaks` one (GeForce cards: twice); a stack that accumulates in
    # fp16 runs at it (`run_by`)
    fp16_accumulate_peaks: Mapping[Dtype, float] = field(default_factory=dict, hash=False)
    # the last-level cache all compute units share in front of memory (L2, Infinity Cache):
    # its name, size in bytes and read bandwidth in bytes/s, None where no source gives them
    # (docs/formulas.md#the-cache-roof)
    cache_name: str = "L2"
    cache_bytes: float | None = None
    cache_bandwidth: float | None = None
    # the vendor's software backend (the catalog's vendor), which picks a stack's published
    # ratio on it where runs of the stack on that backend were published; None: unknown
    backend: Backend | None = None

    def peak(self, dtype: Dtype, unit: Unit) -> Peak:
        """The peak for `dtype` on `unit`, following the fallbacks of docs/formulas.md#the-roofline;
        raises Unsupported where there is none.

        Matrix tf32 falls back to matrix fp32 (AMD's fp32 matrix rate), which falls back to the
        vector fp32 peak (NVIDIA has no fp32 matrix path without TF32). Vector rates for narrow
        dtypes fall back to the vector fp32 peak (they compute in fp32).
        """
        if unit is Unit.MATRIX:
            if dtype in self.matrix_peaks:
                return Peak(self.matrix_peaks[dtype], dtype, unit)
            if dtype is Dtype.TF32:
                return self.peak(Dtype.FP32, Unit.MATRIX)
            if dtype in (Dtype.FP32, Dtype.FP64):
                return self.peak(dtype, Unit.VECTOR)
            raise Unsupported(
                "dtype",
                f"{self.id} has no published {dtype} matrix peak; "
                f"available: {_names(self.matrix_peaks)}",
            )
        if dtype in self.vector_peaks:
            return Peak(self.vector_peaks[dtype], dtype, unit)
        if dtype in _NARROW or dtype is Dtype.TF32:
            return self.peak(Dtype.FP32, Unit.VECTOR)
        raise Unsupported(
            "dtype",
            f"{self.id} has no published {dtype} vector peak; "
            f"available: {_names(self.vector_peaks)}",
        )

    def sparse_peak(self, dtype: Dtype) -> Peak:
        """The 2:4 structured-sparse matrix rate for `dtype`; raises Unsupported on the
        `sparsity` field where the chip publishes none."""
        if dtype not in self.sparse_peaks:
            raise Unsupported(
                "sparsity",
                f"{self.id} has no published 2:4 sparse {dtype} rate; "
                f"sparse rates: {_names(self.sparse_peaks)}",
            )
        return Peak(self.sparse_peaks[dtype], dtype, Unit.MATRIX)

    def accumulates_in_fp16(self, software: Software, dtype: Dtype) -> bool:
        """Whether `software` runs `dtype` GEMMs on this chip at its fp16-accumulate rate: a
        stack that accumulates in fp16 (stacks.FP16_ACCUMULATE), on a chip that has one."""
        return software in FP16_ACCUMULATE and dtype in self.fp16_accumulate_peaks

    def run_by(self, software: Software) -> Chip:
        """The chip as `software` drives it: the fastest accumulate mode the stack uses, its
        fp16-accumulate matrix rates in place of the fp32-accumulate ones where the chip has
        them, so that the ideal stays a floor for the stack's runs."""
        if software not in FP16_ACCUMULATE or not self.fp16_accumulate_peaks:
            return self
        return replace(self, matrix_peaks={**self.matrix_peaks, **self.fp16_accumulate_peaks})

    def default_compute_dtype(self, preferred: Dtype) -> Dtype:
        """`preferred` where the chip has a matrix peak for it; a 16-bit model on a chip
        without bf16 (T4, V100) computes in fp16, which those chips' tensor cores run."""
        no_bf16 = Dtype.BF16 not in self.matrix_peaks and Dtype.FP16 in self.matrix_peaks
        return Dtype.FP16 if preferred is Dtype.BF16 and no_bf16 else preferred

    def sustained_matrix_of(self, dtype: Dtype) -> float:
        """The measured matrix fraction for `dtype`: its own where measured, else the chip's."""
        return self.sustained_matrix_by_dtype.get(dtype, self.sustained_matrix)

    def ridge_intensity(self, dtype: Dtype, unit: Unit) -> float:
        """FLOPs per byte where the roof of `dtype` on `unit` meets the memory roof."""
        return ridge_intensity(self.peak(dtype, unit).flops_per_s, self.memory_bandwidth)

    def warp_sustained(self, sustained: float) -> float:
        """The share of the matrix peak warp-level MMA kernels (FlashAttention-2) sustain
        where other kernels sustain `sustained`: at most the chip's `warp_mma` share."""
        return min(sustained, self.warp_mma)

    def link_bandwidth_per_direction(self) -> float:
        """One direction of the chip-to-chip link (scale-up, else the host link)."""
        bidirectional = self.scale_up_bandwidth or self.host_bandwidth
        if bidirectional is None:
            raise Unsupported("tp", f"{self.id} has no interconnect figure; use tp=1")
        return bidirectional / 2


def _names(peaks: Mapping[Dtype, float]) -> str:
    return ", ".join(str(d) for d in peaks) or "none"
