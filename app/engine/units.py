"""The only unit constants of the engine.

Inside the engine everything is in SI base units: seconds, bytes, FLOPs, FLOP/s, bytes/s.
Humans get formatted values only at the edges (API docs, HTML pages).

- GB = 1e9 bytes, GiB = 2**30 bytes; bandwidths are decimal (1 TB/s = 1e12 bytes/s).
- Dtype sizes (docs/formulas.md#units): fp64 8, fp32/tf32 4, bf16/fp16 2, fp8/int8 1,
  fp4/int4 0.5 bytes; mxfp4 0.53125 (4-bit values and one 8-bit scale per 32 of them);
  llama.cpp's q4_0 0.5625 and q8_0 1.0625 (one fp16 scale per 32 values); int4-g128
  0.51953125 (GPTQ's and AWQ's 4-bit values, an fp16 scale and a 4-bit zero per 128);
  int4-g32 0.625 (gpt-fast's 4-bit values, a bf16 scale and a bf16 zero per 32).
"""

from __future__ import annotations

from enum import StrEnum

# Decimal SI prefixes: GB = GIGA bytes, TFLOP/s = TERA FLOP/s, 1 TB/s = TERA bytes/s.
KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15
MILLI = 1e-3
MICRO = 1e-6
NANO = 1e-9
MIB = 2**20  # bytes: binary sizes of buffers (the probe's), never of capacities
GIB = 2**30
HOUR = 3_600.0  # seconds
DAY = 86_400.0  # seconds
BITS_PER_BYTE = 8


def seconds_from_ms(milliseconds: float) -> float:
    """Milliseconds (as users type them) to seconds."""
    return milliseconds * MILLI


def ms_from_seconds(seconds: float) -> float:
    """Seconds to milliseconds (as users read them)."""
    return seconds * KILO


class Dtype(StrEnum):
    """A number format that a kernel reads, writes or computes in."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"
    INT4 = "int4"
    MXFP4 = "mxfp4"  # a storage format of weights (gpt-oss's experts), not a peak's dtype
    Q4_0 = "q4_0"  # llama.cpp's (GGUF) storage formats of weights, not peaks' dtypes
    Q8_0 = "q8_0"
    INT4_G128 = "int4-g128"  # GPTQ's and AWQ's 4-bit weights in groups of 128 (storage)
    INT4_G32 = "int4-g32"  # gpt-fast's 4-bit weights in groups of 32 (storage)


class Unit(StrEnum):
    """Which execution unit's peak applies: the matrix (tensor) unit or the vector ALUs."""

    MATRIX = "matrix"
    VECTOR = "vector"


DTYPE_BYTES: dict[Dtype, float] = {
    Dtype.FP64: 8.0,
    Dtype.FP32: 4.0,
    Dtype.TF32: 4.0,  # stored as fp32; only the matrix unit rounds the mantissa
    Dtype.BF16: 2.0,
    Dtype.FP16: 2.0,
    Dtype.FP8: 1.0,
    Dtype.INT8: 1.0,
    Dtype.FP4: 0.5,
    Dtype.INT4: 0.5,
    # OCP Microscaling Formats (MX) v1.0: blocks of 32 FP4 (E2M1) values sharing one 8-bit
    # (E8M0) scale: (32 x 4 + 8) / 32 = 4.25 bits an element
    Dtype.MXFP4: (32 * 4 + 8) / 32 / BITS_PER_BYTE,
    # ggml's block formats (ggml/src/ggml-common.h, https://github.com/ggml-org/llama.cpp):
    # block_q4_0 is one fp16 scale and 32 4-bit values, 2 + 16 = 18 bytes (4.5 bits an
    # element); block_q8_0 one fp16 scale and 32 int8 values, 2 + 32 = 34 bytes (8.5 bits)
    Dtype.Q4_0: (16 + 32 * 4) / 32 / BITS_PER_BYTE,
    Dtype.Q8_0: (16 + 32 * 8) / 32 / BITS_PER_BYTE,
    # AutoGPTQ's QuantLinear and AutoAWQ's WQLinear_GEMM store, per output channel and group
    # of 128 inputs, 128 4-bit values, one fp16 scale (`scales`) and one 4-bit zero point
    # packed eight to an int32 (`qzeros`): (128 x 4 + 16 + 4) / 128 = 4.15625 bits an element
    # (https://github.com/AutoGPTQ/AutoGPTQ/blob/main/auto_gptq/nn_modules/qlinear/qlinear_cuda.py,
    # https://github.com/casper-hansen/AutoAWQ/blob/main/awq/modules/linear/gemm.py); GPTQ's
    # `g_idx`, one int32 per input row, is under 0.01 bit an element and not counted
    Dtype.INT4_G128: (128 * 4 + 16 + 4) / 128 / BITS_PER_BYTE,
    # gpt-fast's WeightOnlyInt4Linear (torch's int4pack) stores, per group of `groupsize`
    # inputs (32 by default) and output channel, a bf16 scale and a bf16 zero
    # (`scales_and_zeros`, in_features // groupsize x out_features x 2, bfloat16):
    # (32 x 4 + 16 + 16) / 32 = 5 bits an element
    # (https://github.com/pytorch-labs/gpt-fast/blob/0055c42dfeb98f5c3e1a1ab8c2e4b3025f7d3f3a/quantize.py)
    Dtype.INT4_G32: (32 * 4 + 16 + 16) / 32 / BITS_PER_BYTE,
}


def dtype_bytes(dtype: Dtype) -> float:
    """Bytes per element of `dtype`."""
    return DTYPE_BYTES[dtype]
