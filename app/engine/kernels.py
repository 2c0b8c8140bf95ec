"""FLOPs and minimum bytes moved of single kernels (docs/formulas.md#kernels).

Bytes are the floor: each input read once and each output written once, as a perfectly fused
and tiled kernel would. A multiply-add counts as 2 FLOPs.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from app.engine.errors import InvalidInput
from app.engine.hardware import pointwise_dtype
from app.engine.roofline import Work
from app.engine.stacks import Kind
from app.engine.tiling import output_tiles
from app.engine.units import Dtype, Unit, dtype_bytes

# FLOPs per element of named pointwise ops. Each op is one arithmetic instruction per element
# (a transcendental is one special-function instruction, a comparison or select one), except
# a fused multiply-add (2, the "multiply-add is 2 FLOPs" convention of docs/formulas.md#units)
# and the composites, counted as the instructions they are written with
# (docs/formulas.md#kernels): clamp = max, min (2); silu = x sigmoid(x) (2); pow = exp2(y log2 x)
# (3); gelu = x/2 (1 + erf(x/sqrt 2)) (5, PyTorch's default exact form). A fill writes a
# constant: no FLOPs.
POINTWISE_FLOPS: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "square"), 1),
    **dict.fromkeys(("max", "min", "maximum", "minimum", "where", "masked_fill"), 1),
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge", "sign", "floor", "ceil", "round"), 1),
    **dict.fromkeys(
        ("exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal", "erf"), 1
    ),
    **dict.fromkeys(("log1p", "expm1", "exp2", "log2"), 1),
    **dict.fromkeys(("fma", "clamp", "silu"), 2),
    "pow": 3,
    "gelu": 5,
    **dict.fromkeys(("fill", "zero"), 0),
}


class RowOp(StrEnum):
    """Row-wise normalisations, with their FLOPs per element.

    softmax: max, subtract, exp, sum, divide = 5; layernorm: mean-add, subtract, square,
    variance-add, scale by rstd, multiply gamma, add beta = 7; rmsnorm: square, sum, scale by
    rsqrt, multiply gamma = 4. (The per-row rsqrt/division is negligible and not counted.)
    """

    SOFTMAX = "softmax"
    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"


ROW_OP_FLOPS: dict[RowOp, int] = {RowOp.SOFTMAX: 5, RowOp.LAYERNORM: 7, RowOp.RMSNORM: 4}


# pointwise kernels (elementwise chains, norms, softmax, copies) are calibrated together
_POINTWISE = Kind.ELEMENTWISE


def _positive(field: str, value: float) -> None:
    if not value > 0:
        raise InvalidInput(field, f"must be > 0, got {value}")


# 2:4 structured sparsity keeps two values of every four along K, with each kept value's
# position among the four as a 2-bit index (log2 4 = 2): 2 bits = 1/4 byte per kept value
# (the format of NVIDIA's "Accelerating Sparse Deep Neural Networks", arXiv 2104.08378; for 16-bit
# values 2 x 16 + 2 x 2 = 36 bits per four, 56.25% of the dense 64: docs/formulas.md)
_SPARSE_INDEX_BYTES = 2 / 8


def sparse_bytes(dtype_size: float) -> float:
    """Bytes per weight of a 2:4 structured-sparse operand of `dtype_size`-byte values,
    compressed: half the values kept, each with its 2-bit index, (s + 1/4) / 2."""
    return (dtype_size + _SPARSE_INDEX_BYTES) / 2


def matmul(
    m: int, n: int, k: int, dtype: Dtype, *, allow_tf32: bool = False, sparse: bool = False
) -> Work:
    """(m x k) @ (k x n): 2mnk FLOPs; (mk + kn + mn) elements moved.

    fp32 runs on the matrix unit as TF32 only when `allow_tf32`; otherwise at the fp32 peak.
    `sparse`: the (k x n) operand (the weights) is 2:4 structured-sparse: it moves compressed,
    kn/2 kept values and their 2-bit indices, and the product runs at the chip's sparse rate.
    FLOPs stay the dense-equivalent 2mnk that the vendors' sparse rates count.
    """
    for field, value in (("m", m), ("n", n), ("k", k)):
        _positive(field, value)
    s = dtype_bytes(dtype)
    weights = k * n * (sparse_bytes(s) if sparse else s)
    peak_dtype = Dtype.TF32 if dtype is Dtype.FP32 and allow_tf32 else dtype
    tiles, tile_fill = output_tiles(m, n)
    flops = 2.0 * m * n * k
    return Work(
        flops,
        (m * k + m * n) * s + weights,
        peak_dtype,
        Unit.MATRIX,
        Kind.MATMUL,
        tiles=tiles,
        tile_fill=tile_fill,
        sparse_flops=flops if sparse else 0.0,
    )


def pointwise_flops(ops: Sequence[str]) -> int:
    """FLOPs per element of a chain of named pointwise ops."""
    unknown = [op for op in ops if op not in POINTWISE_FLOPS]
    if unknown:
        raise InvalidInput(
            "ops", f"unknown op {unknown[0]!r}; known: {', '.join(sorted(POINTWISE_FLOPS))}"
        )
    return sum(POINTWISE_FLOPS[op] for op in ops)


def elementwise(
    n: int,
    dtype: Dtype,
    *,
    ops: int,
    flops_per_element: float | None = None,
    fused: bool = True,
    inputs: int = 1,
) -> Work:
    """A chain of `ops` pointwise ops over `n` elements (and `inputs` input tensors).

    Fused: the inputs are read once and the result written once: (inputs + 1) n s bytes.
    Unfused: every op writes its result and the next op reads it back:
    (inputs + 1) n s + (ops - 1) 2 n s, which is 2 ops n s for one input.
    FLOPs: n x flops_per_element (default: one per op).
    """
    _positive("n", n)
    _positive("ops", ops)
    _positive("inputs", inputs)
    per_element = float(ops) if flops_per_element is None else flops_per_element
    if per_element < 0:
        raise InvalidInput("flops_per_element", f"must be >= 0, got {per_element}")
    s = dtype_bytes(dtype)
    traffic = (inputs + 1) * n * s
    if not fused:
        traffic += (ops - 1) * 2 * n * s
    kernels = 1 if fused else ops
    return Work(n * per_element, traffic, pointwise_dtype(dtype), Unit.VECTOR, _POINTWISE, kernels)


def saxpy(n: int, dtype: Dtype) -> Work:
    """y = a x + y: one multiply-add (2 FLOPs) per element; read x and y, write y: 3 n s."""
    _positive("n", n)
    return Work(
        2.0 * n, 3 * n * dtype_bytes(dtype), pointwise_dtype(dtype), Unit.VECTOR, _POINTWISE
    )


def row_op(op: RowOp, rows: int, cols: int, dtype: Dtype) -> Work:
    """Fused softmax / layernorm / rmsnorm over a (rows x cols) tensor: read once, write once.

    Norm weights (gamma, beta) are `cols` elements each and are counted too.
    """
    _positive("rows", rows)
    _positive("cols", cols)
    params = {RowOp.SOFTMAX: 0, RowOp.LAYERNORM: 2, RowOp.RMSNORM: 1}[op]
    elements = 2 * rows * cols + params * cols
    flops = float(ROW_OP_FLOPS[op] * rows * cols)
    return Work(
        flops, elements * dtype_bytes(dtype), pointwise_dtype(dtype), Unit.VECTOR, _POINTWISE
    )


def reduction(n: int, out: int, dtype: Dtype) -> Work:
    """A reduction (sum, mean, amax, ...) of `n` elements to `out`: one add or compare per
    element read; read once, write once: (n + out) s bytes."""
    _positive("n", n)
    _positive("out", out)
    return Work(
        float(n), (n + out) * dtype_bytes(dtype), pointwise_dtype(dtype), Unit.VECTOR, _POINTWISE
    )


class AttentionKernel(StrEnum):
    """How an attention layer is computed (docs/formulas.md#realistic-time)."""

    FUSED = "fused"  # one kernel on the chip's fastest MMA path: FlashAttention-3, cuDNN, ...
    FLASH_2 = "flash-attention-2"  # one kernel on Ampere's warp-level MMA, on every chip
    NAIVE = "naive"  # QK^T, softmax and PV as three kernels, the scores in memory


# An attention without a fused kernel runs QK^T, the softmax and PV as three kernels
NAIVE_ATTENTION_KERNELS = 3


def score_traffic(scores: float, dtype: Dtype) -> float:
    """Bytes an attention without a fused kernel moves for `scores` score entries held in
    `dtype`: the scores written by QK^T and read by the softmax, the probabilities written
    by it and read by PV, four accesses in all."""
    return 4.0 * scores * dtype_bytes(dtype)


def attention_pairs(q_len: int, kv_len: int, *, causal: bool, window: int | None = None) -> float:
    """Number of (query, key) score entries computed, per head and sequence.

    Non-causal: Lq x Lk. Causal self-attention (Lq = Lk = L) computes half: L^2 / 2, as
    docs/formulas.md#kernels counts it. With a sliding window w < L each query sees at most w keys:
    w^2 / 2 + (L - w) w. A causal query block of Lq new tokens after Lk - Lq cached ones
    (chunked prefill) sees Lq (Lk - Lq) + Lq^2 / 2.
    """
    if not causal:
        return float(q_len) * (kv_len if window is None else min(kv_len, window))
    past = kv_len - q_len
    if past < 0:
        raise InvalidInput("kv_len", "causal attention needs kv_len >= q_len")
    if window is None or window >= kv_len:
        return float(q_len) * past + q_len * q_len / 2
    full_before = _causal_windowed(past, window)
    return _causal_windowed(kv_len, window) - full_before


def _causal_windowed(length: int, window: int) -> float:
    if length <= window:
        return length * length / 2
    return window * window / 2 + float(length - window) * window


def attention(
    *,
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    dtype: Dtype,
    kv_heads: int | None = None,
    causal: bool = False,
    implementation: AttentionKernel = AttentionKernel.FUSED,
) -> Work:
    """One attention layer: QK^T and PV, 4 B H (score entries) d FLOPs.

    Fused (flash): Q, K, V read and O written. Naive: plus the score and probability matrices
    (B H x score entries each) written and read back: 4 B H Lq Lk s more bytes. The softmax's
    few FLOPs per score are left out (they are < 1% of the matmul FLOPs for d >= 64).
    FlashAttention-2 moves what a fused kernel moves, with warp-level MMA (`Work.warp`).
    """
    for field, value in (
        ("batch", batch),
        ("heads", heads),
        ("q_len", q_len),
        ("kv_len", kv_len),
        ("head_dim", head_dim),
    ):
        _positive(field, value)
    kvh = heads if kv_heads is None else kv_heads
    _positive("kv_heads", kvh)
    if heads % kvh:
        raise InvalidInput("kv_heads", f"must divide heads ({heads}), got {kvh}")
    pairs = attention_pairs(q_len, kv_len, causal=causal)
    s = dtype_bytes(dtype)
    flops = 4.0 * batch * heads * pairs * head_dim
    qo = 2.0 * batch * heads * q_len * head_dim
    kv = 2.0 * batch * kvh * kv_len * head_dim
    traffic = (qo + kv) * s
    naive = implementation is AttentionKernel.NAIVE
    if naive:
        traffic += score_traffic(batch * heads * q_len * kv_len, dtype)
    return Work(
        flops,
        traffic,
        dtype,
        Unit.MATRIX,
        Kind.ATTENTION,
        NAIVE_ATTENTION_KERNELS if naive else 1,
        warp=implementation is AttentionKernel.FLASH_2,
    )


def memcopy(bytes_copied: float) -> Work:
    """A copy of `bytes_copied` bytes within device memory: each byte read once and written
    once, 2x the bytes, no FLOPs (STREAM's copy kernel counts the same)."""
    _positive("bytes", bytes_copied)
    return Work(0.0, 2.0 * bytes_copied, Dtype.FP32, Unit.VECTOR, _POINTWISE)


def custom(flops: float, bytes_moved: float, dtype: Dtype, unit: Unit) -> Work:
    """Work given directly as FLOPs and bytes."""
    if not flops >= 0:
        raise InvalidInput("flops", f"must be >= 0, got {flops}")
    _positive("bytes", bytes_moved)
    return Work(float(flops), float(bytes_moved), dtype, unit)
