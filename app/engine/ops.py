"""Operators by name (aten::mm, aten::cos, ...) as the engine's kernels
(docs/formulas.md#operations).

Each known operator is mapped onto one kernel formula of kernels.py, which gives its FLOPs, the
dtype and unit whose peak applies, and the published runs its realistic time is calibrated on.
Its bytes are its tensors' sizes: each input read once and each output written once, as its own
kernel (for tensors of one shape and dtype these are the kernel formula's bytes). View-like
operators (view, transpose, expand, ...) launch nothing: no FLOPs, no bytes, no kernel. An
operator the engine does not know needs its FLOPs and bytes given.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.engine.errors import InvalidInput
from app.engine.kernels import (
    POINTWISE_FLOPS,
    RowOp,
    attention,
    custom,
    elementwise,
    matmul,
    memcopy,
    reduction,
    row_op,
)
from app.engine.roofline import Work
from app.engine.units import Dtype, Unit, dtype_bytes

# operators that only re-describe memory (aliases and views): no kernel
VIEWS = frozenset(
    {
        "view",
        "_unsafe_view",
        "view_as",
        "reshape",
        "_reshape_alias",
        "flatten",
        "unflatten",
        "transpose",
        "permute",
        "t",
        "expand",
        "expand_as",
        "unsqueeze",
        "squeeze",
        "as_strided",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "detach",
        "lift_fresh",
    }
)
COPIES = frozenset({"copy", "_to_copy", "clone"})
REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "prod", "argmax", "argmin", "any", "all"})
ROW_OPS = {
    "softmax": RowOp.SOFTMAX,
    "_softmax": RowOp.SOFTMAX,
    "log_softmax": RowOp.SOFTMAX,  # x - max - log(sum exp): the same five steps
    "_log_softmax": RowOp.SOFTMAX,
    "layer_norm": RowOp.LAYERNORM,
    "native_layer_norm": RowOp.LAYERNORM,
    "rms_norm": RowOp.RMSNORM,
    "_fused_rms_norm": RowOp.RMSNORM,
}
ATTENTION = frozenset(
    {
        "scaled_dot_product_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_flash_attention_forward",
        "_efficient_attention_forward",
    }
)
MATMULS = frozenset(
    {"mm", "bmm", "matmul", "addmm", "baddbmm", "linear", "convolution", "_convolution", "conv2d"}
)
MAX_DIMS = 8
MAX_DIM = 2**31
# The transcendental functions an operator evaluates per element, each one of its FLOPs in
# kernels.py. Neither PyTorch's CPU nor its CUDA kernels evaluate one in a single instruction:
# each runs a routine of tens of instructions (a range reduction and a polynomial), so on a
# chip whose function rates were probed (app/probe.py) each is priced at its own measured
# rate (docs/formulas.md#the-local-chip), and on an NVIDIA chip at the rate of CUDA's precise
# routines (precise_functions.py). The composites as
# kernels.py writes them: silu = x sigmoid(x), gelu = x/2 (1 + erf(x/sqrt 2)),
# pow = exp2(y log2 x), softmax's exp (log_softmax's per-row log is left out, as its FLOPs).
SPECIAL_FUNCTIONS: dict[str, tuple[str, ...]] = {
    **{
        name: (name,)
        for name in (
            "exp",
            "log",
            "sin",
            "cos",
            "tanh",
            "sigmoid",
            "erf",
            "log1p",
            "expm1",
            "exp2",
            "log2",
        )
    },
    "silu": ("sigmoid",),
    "gelu": ("erf",),
    "pow": ("exp2", "log2"),
    **dict.fromkeys(("softmax", "_softmax", "log_softmax", "_log_softmax"), ("exp",)),
}


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor an operator reads or writes. `id`, when given, names it across operators (so
    that a fused group knows which tensors stay on chip); without one, an input is taken for the
    unconsumed earlier output of the same shape and dtype (docs/formulas.md#fusion)."""

    shape: tuple[int, ...]
    dtype: Dtype = Dtype.FP32
    id: str | None = None
    device: str | None = None  # "cpu", "cuda", "cuda:0", ...; None: not said

    @property
    def numel(self) -> int:
        """Elements (1 for a scalar, shape ())."""
        return math.prod(self.shape)

    @property
    def bytes(self) -> float:
        """Its size in memory."""
        return self.numel * dtype_bytes(self.dtype)


@dataclass(frozen=True, slots=True)
class Op:
    """One operator as a profiler names it, with its tensors, or with its FLOPs and bytes given
    (which replace the engine's)."""

    name: str
    inputs: tuple[Tensor, ...] = ()
    outputs: tuple[Tensor, ...] = ()
    flops: float | None = None
    bytes: float | None = None
    unit: Unit | None = None  # the peak given FLOPs run at (default: the operator's, or vector)
    causal: bool = False  # attention only
    non_blocking: bool = False  # host copies only: taken for a copy from or to pinned memory


@dataclass(frozen=True, slots=True)
class HostCosts:
    """What a CPU's operators pay beyond their FLOPs at the peaks and their bytes at the
    bandwidth, as measured on it (app/probe.py): each transcendental function's evaluations
    per second (by SPECIAL_FUNCTIONS' names; one not given keeps its FLOP at the vector
    peak), and the seconds per byte of writing an output into fresh memory (the page faults
    of its first touch), which outputs of at least `fresh_from_bytes` pay on every call (the
    allocator maps them anew each time; smaller ones reuse freed memory)."""

    special_per_s: Mapping[str, float] = field(default_factory=dict, hash=False)
    first_touch_s_per_byte: float = 0.0
    fresh_from_bytes: float = math.inf


def _short(name: str) -> str:
    """The name without namespace and overload: "aten::add_.Tensor" -> "add_"."""
    return name.rsplit("::", 1)[-1].split(".", 1)[0].lower()


def is_in_place(name: str) -> bool:
    """Whether the operator writes its first input (PyTorch's trailing underscore: add_)."""
    short = _short(name)
    return short.endswith("_") and not short.endswith("__") and len(short) > 1


def base_name(name: str) -> str:
    """The operator's name without namespace, overload and in-place suffix:
    "aten::add_.Tensor" -> "add"."""
    short = _short(name)
    return short[:-1] if is_in_place(name) else short


def is_view(op: Op) -> bool:
    """Whether the operator launches no kernel (a view or alias, nothing given)."""
    return base_name(op.name) in VIEWS and op.flops is None and op.bytes is None


def special_evaluations(op: Op) -> dict[str, int]:
    """How many times the operator evaluates each transcendental function (SPECIAL_FUNCTIONS):
    once per element of its output (a row op's output has its input's shape). None for an
    operator given its FLOPs, whose own count replaces the engine's."""
    if op.flops is not None or not op.outputs:
        return {}
    return chain_evaluations([op.name], op.outputs[0].numel)


def chain_evaluations(names: Iterable[str], elements: int) -> dict[str, int]:
    """How many times a chain of pointwise or row operators (by name, each over `elements`
    elements) evaluates each transcendental function (SPECIAL_FUNCTIONS)."""
    counts = Counter(f for name in names for f in SPECIAL_FUNCTIONS.get(base_name(name), ()))
    return {function: count * elements for function, count in counts.items()}


def io_bytes(op: Op) -> float:
    """Bytes of the operator as its own kernel: its inputs read and its outputs written."""
    return sum(t.bytes for t in (*op.inputs, *op.outputs))


def _need(field: str, op: Op, tensors: Sequence[Tensor], count: int, what: str) -> None:
    if len(tensors) < count:
        raise InvalidInput(field, f"{op.name} needs {what}")


def _dims(field: str, op: Op, tensor: Tensor, least: int) -> tuple[int, ...]:
    if len(tensor.shape) < least:
        raise InvalidInput(field, f"{op.name} needs tensors of at least {least} dimensions")
    return tensor.shape


def _broadcast(field: str, a: Sequence[int], b: Sequence[int]) -> int:
    """Elements of the broadcast of batch shapes `a` and `b` (NumPy's rules)."""
    width = max(len(a), len(b))
    size = 1
    for x, y in zip(
        (1,) * (width - len(a)) + tuple(a), (1,) * (width - len(b)) + tuple(b), strict=True
    ):
        if x != y and 1 not in (x, y):
            raise InvalidInput(
                field, f"batch dimensions {tuple(a)} and {tuple(b)} do not broadcast"
            )
        size *= max(x, y)
    return size


def _gemm(field: str, op: Op, a: Sequence[int], b: Sequence[int]) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of a @ b with torch.matmul's rules: a 1-D operand is a row (a) or a
    column (b); leading dimensions broadcast."""
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise InvalidInput(field, f"{op.name}: inner dimensions {a2[-1]} and {b2[-2]} differ")
    return _broadcast(field, a2[:-2], b2[:-2]), a2[-2], b2[-1], a2[-1]


def _matmul_op(field: str, op: Op, short: str) -> Work:
    """A matrix product: 2 m n k FLOPs per batch (a bias add is left out, as PyTorch's
    FlopCounterMode counts addmm; a convolution is its implicit GEMM: m = output elements per
    output channel, n = output channels, k = the weight's elements per output channel)."""
    ins = op.inputs
    if short in ("addmm", "baddbmm"):
        _need(field, op, ins, 3, "its bias and two matrices as inputs")
        ins = ins[1:]
    _need(field, op, ins, 2, "two input tensors")
    first, second = ins[0], ins[1]
    if short == "linear":  # weight is (out_features, in_features)
        x, w = _dims(field, op, first, 1), _dims(field, op, second, 2)
        shape = _gemm(field, op, (math.prod(x[:-1]), x[-1]), (w[1], w[0]))
    elif short in ("convolution", "_convolution", "conv2d"):
        _need(field, op, op.outputs, 1, "its output")
        w, out = _dims(field, op, second, 2), op.outputs[0].numel
        if out % w[0]:
            raise InvalidInput(field, f"the output is not a multiple of {w[0]} channels")
        shape = (1, out // w[0], w[0], math.prod(w[1:]))
    else:
        least = 3 if short in ("bmm", "baddbmm") else 2 if short in ("mm", "addmm") else 1
        a, b = _dims(field, op, first, least), _dims(field, op, second, least)
        shape = _gemm(field, op, a, b)
    batch, m, n, k = shape
    one = matmul(m, n, k, first.dtype)
    return replace(one.scaled(batch), tiles=one.tiles * batch, tile_fill=one.tile_fill)


def _pointwise(field: str, op: Op, short: str) -> Work:
    _need(field, op, op.outputs, 1, "its output")
    return elementwise(
        op.outputs[0].numel,
        (op.inputs or op.outputs)[0].dtype,
        ops=1,
        flops_per_element=POINTWISE_FLOPS[short],
        inputs=max(len(op.inputs), 1),
    )


def _reduction(field: str, op: Op, short: str) -> Work:
    _need(field, op, op.inputs, 1, "its input")
    _need(field, op, op.outputs, 1, "its output")
    x = op.inputs[0]
    return reduction(x.numel, op.outputs[0].numel, x.dtype)


def _row_op(field: str, op: Op, short: str) -> Work:
    _need(field, op, op.inputs, 1, "its input")
    x = _dims(field, op, op.inputs[0], 1)
    return row_op(ROW_OPS[short], math.prod(x[:-1]), x[-1], op.inputs[0].dtype)


def _attention(field: str, op: Op, short: str) -> Work:
    _need(field, op, op.inputs, 3, "query, key and value as inputs")
    q = _dims(field, op, op.inputs[0], 4)
    k = _dims(field, op, op.inputs[1], 4)
    return attention(
        batch=q[0],
        heads=q[1],
        q_len=q[2],
        kv_len=k[2],
        head_dim=q[3],
        dtype=op.inputs[0].dtype,
        kv_heads=k[1],
        causal=op.causal,
    )


def _copy(field: str, op: Op, short: str) -> Work:
    _need(field, op, op.outputs, 1, "its output")
    return memcopy(op.outputs[0].bytes)


_FORMULAS: tuple[tuple[Collection[str], Callable[[str, Op, str], Work]], ...] = (
    (MATMULS, _matmul_op),
    (ATTENTION, _attention),
    (ROW_OPS, _row_op),
    (REDUCTIONS, _reduction),
    (POINTWISE_FLOPS, _pointwise),
    (COPIES, _copy),
)


def _formula(short: str, op: Op) -> Callable[[str, Op, str], Work] | None:
    if short in ("max", "min") and len(op.inputs) == 1:  # aten::max(x): a reduction
        return _reduction
    return next((formula for names, formula in _FORMULAS if short in names), None)


def _check_tensors(field: str, op: Op) -> None:
    for tensor in (*op.inputs, *op.outputs):
        if len(tensor.shape) > MAX_DIMS or not all(1 <= d <= MAX_DIM for d in tensor.shape):
            raise InvalidInput(
                field, f"shapes have at most {MAX_DIMS} dimensions, each 1 to {MAX_DIM}"
            )


def op_work(op: Op, field: str = "ops") -> Work:
    """The operator as its own kernel: FLOPs from its kernel formula (or as given), bytes its
    tensors' (or as given). A view launches nothing: no FLOPs, no bytes, no kernels."""
    if is_view(op):
        return Work(0.0, 0.0, Dtype.FP32, Unit.VECTOR, kernels=0)
    short = base_name(op.name)
    formula = _formula(short, op)
    if formula is None:
        if op.flops is None or op.bytes is None:
            raise InvalidInput(
                f"{field}.name",
                f"unknown operator {op.name!r}: give its flops and bytes (and unit, matrix or "
                "vector, for its peak)",
            )
        dtype = (op.inputs or op.outputs or (Tensor(()),))[0].dtype
        return custom(op.flops, op.bytes, dtype, op.unit or Unit.VECTOR)
    _check_tensors(field, op)
    try:
        work = formula(field, op, short)
    except InvalidInput as error:
        raise InvalidInput(field, f"{op.name}: {error.message}") from error
    traffic = io_bytes(op) if op.bytes is None else op.bytes
    if not traffic > 0:
        raise InvalidInput(f"{field}.bytes", f"{op.name} moves no bytes: give its tensors")
    return replace(
        work,
        flops=float(work.flops if op.flops is None else op.flops),
        bytes=float(traffic),
        unit=work.unit if op.unit is None else op.unit,
    )
