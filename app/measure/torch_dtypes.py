"""PyTorch dtypes as the engine's (by name, so that this module needs no torch).

Floating-point dtypes and int8 map onto the engine's dtypes. Tensors of a dtype the engine has
no name for (bool, the other integers, complex) are counted by their width, which is all their
bytes need: 1-byte ones as int8, 2-byte ones as bf16, wider ones as fp32 words (an int64 tensor
of shape S as an fp32 tensor of shape (*S, 2)). Any other dtype is an error that says so.
"""

from __future__ import annotations

from app.engine import Dtype

DTYPES: dict[str, Dtype] = {
    "float64": Dtype.FP64,
    "double": Dtype.FP64,
    "float32": Dtype.FP32,
    "float": Dtype.FP32,
    "bfloat16": Dtype.BF16,
    "float16": Dtype.FP16,
    "half": Dtype.FP16,
    "float8_e4m3fn": Dtype.FP8,
    "float8_e5m2": Dtype.FP8,
    "float8_e4m3fnuz": Dtype.FP8,
    "float8_e5m2fnuz": Dtype.FP8,
    "float8_e8m0fnu": Dtype.FP8,
    "int8": Dtype.INT8,
    "float4_e2m1fn_x2": Dtype.INT8,  # two fp4 values packed in one byte
}
# dtypes the engine has no name for, by their width in bytes
STAND_INS: dict[str, int] = {
    "bool": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "complex32": 4,
    "complex64": 8,
    "complex128": 16,
}
_WIDTH = {1: Dtype.INT8, 2: Dtype.BF16}
FP32_WORD = 4


class UnsupportedDtype(ValueError):
    """A tensor dtype roofcheck cannot count."""

    def __init__(self, name: str) -> None:
        known = ", ".join(sorted({*DTYPES, *STAND_INS}))
        super().__init__(f"roofcheck cannot count tensors of dtype {name}; it knows: {known}")
        self.name = name


def dtype_name(dtype: object) -> str:
    """'torch.float32' (or a torch.dtype) -> 'float32'."""
    return str(dtype).removeprefix("torch.")


def engine_dtype(dtype: object) -> Dtype:
    """The engine's name of a PyTorch floating-point dtype (or int8); UnsupportedDtype for
    the others (see `counted_as` for how their bytes are counted)."""
    name = dtype_name(dtype)
    if name not in DTYPES:
        raise UnsupportedDtype(name)
    return DTYPES[name]


def counted_as(dtype: object, shape: tuple[int, ...]) -> tuple[Dtype, tuple[int, ...]]:
    """The engine dtype and shape a tensor is counted as: its own where the engine names its
    dtype, else a stand-in of the same bytes (module docstring)."""
    name = dtype_name(dtype)
    if name in DTYPES:
        return DTYPES[name], shape
    width = STAND_INS.get(name)
    if width is None:
        raise UnsupportedDtype(name)
    if width in _WIDTH:
        return _WIDTH[width], shape
    words = width // FP32_WORD
    return Dtype.FP32, shape if words == 1 else (*shape, words)
