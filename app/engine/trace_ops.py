"""A torch.profiler operator event as the engine's operator (docs/formulas.md#traces).

With `record_shapes=True`, each `cpu_op` event's args hold "Input Dims" (one entry per
argument: a tensor's shape, [] for a scalar or a 0-dimensional tensor), "Input type" (the
tensor's C++ scalar type, e.g. "float", "c10::BFloat16"; "Scalar", "ScalarList" or "" for
other arguments) and "Concrete Inputs" (the scalar arguments as text, e.g. a reduction's
"[-1]"). Outputs are not recorded: they are derived from the inputs by the operator's rule
(a matrix product's m x n, a pointwise op's broadcast, a reduction's kept dimensions).

An event the engine cannot model comes back as the reason why (a string), never an error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from app.engine.ops import ATTENTION, COPIES, MATMULS, REDUCTIONS, ROW_OPS, VIEWS, Op, Tensor
from app.engine.ops import base_name as short_name
from app.engine.units import Dtype

# the scalar types a tensor argument is recorded with (c10's names), as the engine's dtypes;
# one-byte booleans and integers move as int8 does
DTYPES = {
    "float": Dtype.FP32,
    "double": Dtype.FP64,
    "c10::Half": Dtype.FP16,
    "c10::BFloat16": Dtype.BF16,
    "c10::Float8_e4m3fn": Dtype.FP8,
    "c10::Float8_e5m2": Dtype.FP8,
    "c10::Float8_e4m3fnuz": Dtype.FP8,
    "c10::Float8_e5m2fnuz": Dtype.FP8,
    "signed char": Dtype.INT8,
    "unsigned char": Dtype.INT8,
    "bool": Dtype.INT8,
}
# c10::ScalarType codes, as _to_copy records its target dtype
SCALAR_TYPES = {
    "0": Dtype.INT8,
    "1": Dtype.INT8,
    "5": Dtype.FP16,
    "6": Dtype.FP32,
    "7": Dtype.FP64,
    "11": Dtype.INT8,
    "15": Dtype.BF16,
    "23": Dtype.FP8,
    "24": Dtype.FP8,
}
# where each attention operator's is_causal flag sits among its arguments
CAUSAL_ARGUMENT = {
    "scaled_dot_product_attention": 5,
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_efficient_attention": 6,
    "_scaled_dot_product_cudnn_attention": 6,
    "_scaled_dot_product_flash_attention_for_cpu": 4,
}
VIEW = "a view: it launches no kernel (its time is host overhead)"
_INTS = re.compile(r"-?\d+")


def uses_arguments(name: str) -> bool:
    """Whether the operator's model reads its scalar arguments (a reduction's dimensions, a
    cast's dtype, attention's causal flag): those then tell its events apart."""
    short = short_name(name)
    return short in REDUCTIONS or short in ("max", "min", "_to_copy") or short in ATTENTION


def _is_shape(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in value
    )


def tensors_of(dims: Sequence[object], types: Sequence[object]) -> tuple[Tensor, ...] | str:
    """The tensor arguments, in order; or why they cannot be modelled."""
    tensors = []
    for shape, kind in zip(dims, types, strict=False):
        if isinstance(kind, str) and kind in DTYPES:
            if not _is_shape(shape):
                return "a tensor's shape is not a list of integers"
            assert isinstance(shape, list)
            tensors.append(Tensor(tuple(shape), DTYPES[kind]))
        elif shape:  # a tensor (or a list of them) of a type the engine has no dtype for
            return f"arguments of type {str(kind)[:40]!r} are not modelled"
    return tuple(tensors)


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The broadcast of `shapes` (NumPy's rules; a mismatch is left to the engine's check)."""
    width = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (width - len(s)) + s for s in shapes]
    return tuple(max(sizes) for sizes in zip(*padded, strict=True))


def _matmul_out(short: str, ins: Sequence[Tensor]) -> tuple[int, ...] | str:
    if short in ("addmm", "baddbmm"):
        ins = ins[1:]
    if len(ins) < 2 or not ins[0].shape or not ins[1].shape:
        return "a matrix product needs two tensors of at least one dimension"
    a, b = ins[0].shape, ins[1].shape
    if short == "linear":
        return (*a[:-1], b[0]) if len(b) == 2 else a[:-1]
    if short in ("convolution", "_convolution", "conv2d"):
        return "a convolution's output shape is not in the trace"
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    out = (*_broadcast([a2[:-2], b2[:-2]]), a2[-2], b2[-1])
    if len(b) == 1:
        out = out[:-1]
    if len(a) == 1:
        out = (*out[:-2], out[-1]) if len(b) > 1 else out[:-1]
    return out


def _reduced(shape: tuple[int, ...], arguments: Sequence[object]) -> tuple[int, ...]:
    """`shape` with the reduced dimensions (the second argument, e.g. "[-1]") dropped; all of
    them when none are given."""
    given = str(arguments[1]) if len(arguments) > 1 else ""
    dims = {int(d) % len(shape) for d in _INTS.findall(given)} if shape else set()
    if not dims:
        return ()
    return tuple(size for i, size in enumerate(shape) if i not in dims)


def _argument(arguments: Sequence[object], index: int) -> str:
    return str(arguments[index]) if index < len(arguments) else ""


def _derive(
    short: str, ins: tuple[Tensor, ...], arguments: Sequence[object]
) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...], bool] | str:
    """(inputs, outputs, causal) of the operator, from its tensor inputs and arguments."""
    if not ins:
        return "no tensor arguments were recorded"
    first = ins[0]
    if short in MATMULS:
        shape = _matmul_out(short, ins)
        return shape if isinstance(shape, str) else (ins, (Tensor(shape, first.dtype),), False)
    if short in ATTENTION:
        if len(ins) < 3 or not ins[2].shape:
            return "attention needs query, key and value"
        result = Tensor((*first.shape[:-1], ins[2].shape[-1]), first.dtype)
        causal = _argument(arguments, CAUSAL_ARGUMENT.get(short, 5)) == "True"
        return ins, (result,), causal
    if short in ROW_OPS:
        return ins, (first,), False
    if short in REDUCTIONS or (short in ("max", "min") and len(ins) == 1):
        return (first,), (Tensor(_reduced(first.shape, arguments), first.dtype),), False
    if short == "copy":  # copy_(destination, source): reads the source, writes the destination
        return (ins[-1],), (first,), False
    if short == "_to_copy":
        code = _argument(arguments, 1)
        if code and code not in SCALAR_TYPES:
            return f"a cast to scalar type {code[:20]} is not modelled"
        return (first,), (Tensor(first.shape, SCALAR_TYPES.get(code, first.dtype)),), False
    if short in COPIES:
        return (first,), (first,), False
    pointwise = Tensor(_broadcast([t.shape for t in ins]), first.dtype)
    return ins, (pointwise,), False


def op_of(
    name: str, dims: Sequence[object], types: Sequence[object], arguments: Sequence[object]
) -> Op | str:
    """The event as the engine's operator, or why it is not modelled. Whether the engine
    knows the operator's name is left to its formulas (app/engine/ops.py)."""
    short = short_name(name)
    if short in VIEWS:
        return VIEW
    tensors = tensors_of(dims, types)
    if isinstance(tensors, str):
        return tensors
    derived = _derive(short, tensors, arguments)
    if isinstance(derived, str):
        return derived
    inputs, outputs, causal = derived
    if any(math.prod(t.shape) == 0 for t in outputs):
        return "an empty tensor"
    return Op(name, inputs, outputs, causal=causal)
