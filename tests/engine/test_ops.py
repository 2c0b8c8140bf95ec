"""Operators by name and sequences of them: worked examples (the arithmetic in each test),
the kernel formulas reused, fusion's bounds, and invariants on generated sequences."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import (
    Bound,
    Dtype,
    InvalidInput,
    Kind,
    RowOp,
    Software,
    Unit,
    Unsupported,
    attention,
    elementwise,
    matmul,
    place,
    row_op,
)
from app.engine.fusion import AgainstFusion, estimate_ops, kernel_groups
from app.engine.ops import Op, Tensor, base_name, op_work
from app.engine.traffic import external_bytes
from tests.engine.chips import A100

BF16, FP32 = Dtype.BF16, Dtype.FP32


def t(*shape, dtype=FP32, id=None):
    return Tensor(tuple(shape), dtype, id)


def op(name, inputs=(), outputs=(), **given):
    return Op(name, tuple(inputs), tuple(outputs), **given)


COS = op("aten::cos", [t(10**8)], [t(10**8)])


def test_cos_cos_eager_unfused_fused_and_the_launch_floor():
    # x.cos().cos(), 1e8 fp32 elements on an A100 (2.039 TB/s, 19.5 TFLOP/s fp32):
    # each cos: 1e8 FLOPs (5.1 us of compute), reads and writes 4e8 B: 8e8 / 2.039e12 = 392.35 us
    # unfused: 784.70 us + eager launches: 2 gaps of 2.31 us and the second cos's 3.0 us
    #   boundary with the first (the 2 x 8 us host dispatch hides under the device time)
    #   = 792.32 us
    # fused: read x, write y: 8e8 B = 392.35 us + one gap of 2.31 us = 394.66 us
    # launch floor, two kernels: max(2 x 2.31 + 3.0 us, 2 x 8 us of dispatch) = 16 us
    result = estimate_ops([COS, COS], A100, Software.EAGER)
    assert [c.work.flops for c in result.ops] == [1e8, 1e8]
    assert [c.work.bytes for c in result.ops] == [8e8, 8e8]
    assert all(c.bound is Bound.MEMORY for c in result.ops)
    assert result.roofline.bytes == 1.6e9
    assert result.roofline.expected_time == pytest.approx(784.70e-6, rel=1e-4)
    assert result.unfused_time == pytest.approx(792.32e-6, rel=1e-4)
    assert result.fused_time == pytest.approx(394.66e-6, rel=1e-4)
    assert result.fused_bytes == 8e8
    assert result.launch_overhead == pytest.approx(16e-6)
    assert (result.kernels, result.unfused_kernels, result.kind) == (2, 2, Kind.ELEMENTWISE)
    # grouped as one kernel: the fused bytes, one launch (floor: one 8 us dispatch)
    grouped = estimate_ops([COS, COS], A100, Software.EAGER, groups=[[0, 1]])
    assert grouped.roofline.bytes == 8e8
    assert grouped.roofline.expected_time == pytest.approx(392.35e-6, rel=1e-4)
    assert grouped.kernels == 1
    assert grouped.launch_overhead == pytest.approx(8e-6)


def test_the_ops_reuse_the_kernel_formulas():
    # the same bytes and FLOPs as the elementwise kernel, fused and unfused
    unfused = estimate_ops([COS, COS], A100).roofline
    fused = estimate_ops([COS, COS], A100, groups=[[0, 1]]).roofline
    assert unfused.bytes == elementwise(10**8, FP32, ops=2, fused=False).bytes
    assert fused.bytes == elementwise(10**8, FP32, ops=2, fused=True).bytes
    assert fused.flops == unfused.flops == elementwise(10**8, FP32, ops=2).flops
    # a lone mm is the matmul kernel, placed the same way (tiles included)
    a = t(4096, 4096, dtype=BF16)
    mm = estimate_ops([op("aten::mm", [a, a], [a])], A100).roofline
    alone = place(matmul(4096, 4096, 4096, BF16), A100)
    assert (mm.flops, mm.bytes, mm.expected_time) == (alone.flops, alone.bytes, alone.expected_time)
    assert mm.sustained_time == alone.realistic_time


def test_mm_view_gelu_fused_keeps_the_intermediate_on_chip():
    # mm 4096^3 bf16: 2 x 4096^3 = 137,438,953,472 FLOPs, 3 x 4096^2 x 2 = 100,663,296 B
    # gelu over 4096^2 bf16: 5 x 16,777,216 = 83,886,080 FLOPs, 2 x 33,554,432 = 67,108,864 B
    # the view between them is free; fused: A, B read and the gelu written: 100,663,296 B;
    # compute 440.51 us (bf16 matrix at 312 TFLOP/s) + 83,886,080 / 19.5e12 = 4.30 us
    a = t(4096, 4096, dtype=BF16)
    b = t(1, 4096, 4096, dtype=BF16)
    ops = [op("aten::mm", [a, a], [a]), op("aten::view", [a], [b]), op("aten::gelu", [b], [b])]
    result = estimate_ops(ops, A100)
    assert [c.work.flops for c in result.ops] == [137_438_953_472, 0, 83_886_080]
    assert [c.work.bytes for c in result.ops] == [100_663_296, 0, 67_108_864]
    assert [c.bound for c in result.ops] == [Bound.COMPUTE, None, Bound.MEMORY]
    assert result.ops[1].expected_time == 0
    assert result.unfused_kernels == 2
    assert result.fused_bytes == 100_663_296
    assert result.roofline.peak.unit is Unit.MATRIX and result.kind is Kind.MATMUL
    fused = estimate_ops(ops, A100, groups=[[0, 1, 2]]).roofline
    assert fused.compute_time == pytest.approx(440.51e-6 + 4.30e-6, rel=1e-4)
    assert fused.expected_time == fused.compute_time


@pytest.mark.parametrize(
    ("name", "inputs", "outputs", "flops"),
    [
        # linear: x (8, 128, 4096) @ W^T, W (11008, 4096): 2 x 1024 x 11008 x 4096
        ("aten::linear", [t(8, 128, 4096), t(11008, 4096)], [t(8, 128, 11008)], 92_341_796_864),
        # bmm (32, 128, 64) @ (32, 64, 256): 2 x 32 x 128 x 256 x 64
        ("aten::bmm", [t(32, 128, 64), t(32, 64, 256)], [t(32, 128, 256)], 134_217_728),
        # matmul broadcasts batch (4, 1) with (8,): 32 x 2 x 128 x 32 x 64
        ("aten::matmul", [t(4, 1, 128, 64), t(8, 64, 32)], [t(4, 8, 128, 32)], 16_777_216),
        # a vector times a matrix: 2 x 1 x 10 x 64
        ("aten::matmul", [t(64), t(64, 10)], [t(10)], 1280),
        # addmm: the bias add is not counted (FlopCounterMode): 2 x 64 x 32 x 16
        ("aten::addmm", [t(32), t(64, 16), t(16, 32)], [t(64, 32)], 65_536),
        ("aten::baddbmm", [t(2, 8, 4), t(2, 8, 3), t(2, 3, 4)], [t(2, 8, 4)], 384),
        # 3x3 convolution, 64 -> 128 channels on 8 x 56 x 56: 2 x (8 x 56 x 56) x 128 x (64 x 9)
        (
            "aten::convolution",
            [t(8, 64, 56, 56), t(128, 64, 3, 3)],
            [t(8, 128, 56, 56)],
            3_699_376_128,
        ),
        # flash attention, GQA 32/8 heads, 1024 tokens, d 128: 4 x 2 x 32 x 1024^2 x 128
        (
            "aten::_scaled_dot_product_flash_attention",
            [t(2, 32, 1024, 128), t(2, 8, 1024, 128), t(2, 8, 1024, 128)],
            [t(2, 32, 1024, 128)],
            34_359_738_368,
        ),
        ("aten::_softmax", [t(1024, 4096)], [t(1024, 4096)], 5 * 1024 * 4096),
        ("aten::log_softmax", [t(1024, 4096)], [t(1024, 4096)], 5 * 1024 * 4096),
        ("aten::native_layer_norm", [t(1024, 4096), t(4096), t(4096)], [t(1024, 4096)], 7 * 2**22),
        ("aten::rms_norm", [t(1024, 4096), t(4096)], [t(1024, 4096)], 4 * 2**22),
        ("aten::sum.dim_IntList", [t(1024, 4096)], [t(1024)], 2**22),
        ("aten::max", [t(1024, 4096)], [t()], 2**22),  # one input: a reduction
        ("aten::max.other", [t(100), t(100)], [t(100)], 100),  # two: pointwise
        ("aten::add_.Tensor", [t(100), t(100)], [t(100)], 100),
        ("aten::silu", [t(100)], [t(100)], 200),
        ("aten::pow.Tensor_Scalar", [t(100)], [t(100)], 300),
        ("aten::copy_", [t(100), t(100, dtype=BF16)], [t(100)], 0),
        ("aten::_to_copy", [t(100)], [t(100, dtype=BF16)], 0),
    ],
)
def test_known_operators_count_their_flops_from_the_shapes(name, inputs, outputs, flops):
    work = op_work(op(name, inputs, outputs))
    assert work.flops == flops
    # bytes: each input read and each output written
    assert work.bytes == sum(x.bytes for x in (*inputs, *outputs))
    assert work.kernels == 1


def test_attention_and_norms_are_the_kernel_formulas():
    q, kv = t(2, 32, 1024, 128, dtype=BF16), t(2, 8, 1024, 128, dtype=BF16)
    sdpa = op_work(op("aten::scaled_dot_product_attention", [q, kv, kv], [q], causal=True))
    kernel = attention(
        batch=2,
        heads=32,
        kv_heads=8,
        q_len=1024,
        kv_len=1024,
        head_dim=128,
        dtype=BF16,
        causal=True,
    )
    assert (sdpa.flops, sdpa.bytes, sdpa.unit, sdpa.kind) == (
        kernel.flops,
        kernel.bytes,
        Unit.MATRIX,
        Kind.ATTENTION,
    )
    x, w = t(64, 512), t(512)
    norm = op_work(op("aten::layer_norm", [x, w, w], [x]))
    assert (norm.flops, norm.bytes) == (
        row_op(RowOp.LAYERNORM, 64, 512, FP32).flops,
        2 * 64 * 512 * 4 + 2 * 512 * 4,
    )


@pytest.mark.parametrize(
    "name",
    [
        "aten::view",
        "aten::reshape",
        "aten::transpose.int",
        "aten::permute",
        "aten::t",
        "aten::expand",
        "aten::unsqueeze",
        "aten::_unsafe_view",
    ],
)
def test_views_launch_nothing(name):
    work = op_work(op(name, [t(4, 8)], [t(8, 4)]))
    assert (work.flops, work.bytes, work.kernels) == (0, 0, 0)


def test_names_lose_namespace_overload_and_in_place_suffix():
    assert base_name("aten::add_.Tensor") == "add"
    assert base_name("aten::_softmax") == "_softmax"
    assert base_name("aten::copy_") == "copy"
    assert base_name("Relu") == "relu"
    assert base_name("aten::__and__") == "__and__"


def test_an_unknown_operator_needs_its_flops_and_bytes():
    with pytest.raises(InvalidInput, match="give its flops and bytes") as error:
        op_work(op("mylib::fused_thing", [t(10)], [t(10)]), "ops.3")
    assert error.value.field == "ops.3.name"
    given = op_work(op("mylib::fused_thing", [t(10, dtype=BF16)], flops=1e9, bytes=1e6))
    assert (given.flops, given.bytes, given.unit, given.dtype) == (1e9, 1e6, Unit.VECTOR, BF16)
    matrix = op_work(op("custom", flops=1e9, bytes=1e6, unit=Unit.MATRIX))
    assert (matrix.unit, matrix.dtype) == (Unit.MATRIX, FP32)
    # given FLOPs or bytes replace a known operator's
    mm = op_work(op("aten::mm", [t(8, 8), t(8, 8)], [t(8, 8)], flops=5.0, bytes=7.0))
    assert (mm.flops, mm.bytes, mm.unit) == (5.0, 7.0, Unit.MATRIX)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([op("aten::mm", [t(8, 4), t(5, 8)], [t(8, 8)])], "inner dimensions 4 and 5"),
        ([op("aten::bmm", [t(2, 8, 4), t(3, 4, 8)], [t(8, 8)])], "do not broadcast"),
        ([op("aten::mm", [t(8, 4)], [t(8, 8)])], "two input tensors"),
        ([op("aten::cos", [t(8)])], "needs its output"),
        ([op("aten::cos", [t(8, 0)], [t(8)])], "each 1 to"),
        ([op("aten::cos", [t(*[2] * 9)], [t(8)])], "at most 8 dimensions"),
        ([op("aten::_softmax", [t()], [t()])], "at least 1 dimensions"),
        ([op("aten::sdpa_flash", [t(8)], [t(8)])], "unknown operator"),
        (
            [
                op(
                    "aten::scaled_dot_product_attention",
                    [t(1, 2, 8, 4), t(1, 2, 4, 4)] * 2,
                    [t(1)],
                    causal=True,
                )
            ],
            "kv_len >= q_len",
        ),
        ([op("aten::convolution", [t(1, 3, 8, 8), t(5, 3, 3, 3)], [t(1, 4, 6, 6)])], "channels"),
        ([op("aten::view", [t(4)], [t(4)])], "all views"),
        ([op("aten::cos", [t(4)], [t(4)], bytes=0.0)], "moves no bytes"),
        ([], "give 1 to 4096 ops"),
    ],
)
def test_bad_operators_are_named(ops, message):
    with pytest.raises(InvalidInput, match=message):
        estimate_ops(ops, A100)


def test_a_dtype_the_chip_lacks_names_the_op():
    with pytest.raises(Unsupported, match="aten::mm") as error:
        estimate_ops([COS, op("aten::mm", [t(8, 8, dtype=Dtype.FP8)] * 2, [t(8, 8)])], A100)
    assert error.value.field == "ops.1"


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([[0, 2]], "op index 2 is not in 0 to 1"),
        ([[0], [0, 1]], "more than one group"),
        ([[]], "at least one"),
    ],
)
def test_bad_groups_are_named(groups, message):
    with pytest.raises(InvalidInput, match=message) as error:
        estimate_ops([COS, COS], A100, groups=groups)
    assert error.value.field.startswith("groups.")


def test_kernels_are_the_groups_and_the_ops_left_alone_in_order():
    assert kernel_groups(5, [[3, 1]]) == [[0], [1, 3], [2], [4]]


def test_ids_name_tensors_across_ops():
    # y = x * w; z = y + x: with ids, x is read once and y stays on chip: x, w read, z written
    x, w, y, z = (t(1000, id=name) for name in "xwyz")
    ops = [op("aten::mul", [x, w], [y]), op("aten::add", [y, x], [z])]
    assert external_bytes(ops) == 3 * 4000
    # without ids, y is matched by its shape, and x is read again: 4 tensors
    anonymous = [
        op("aten::mul", [t(1000)] * 2, [t(1000)]),
        op("aten::add", [t(1000)] * 2, [t(1000)]),
    ]
    assert external_bytes(anonymous) == 4 * 4000
    # a tensor with an id is never taken for one without: y is written, and read back
    mixed = [ops[0], op("aten::cos", [t(1000)], [t(1000)])]
    assert external_bytes(mixed) == 5 * 4000
    # a view of a tensor on chip is on chip: y viewed as v stays there
    v = t(10, 100, id="v")
    viewed = [ops[0], op("aten::view", [y], [v]), op("aten::cos", [v], [z])]
    assert external_bytes(viewed) == 3 * 4000
    # a view of a tensor in memory is read by its user
    assert external_bytes(viewed[1:]) == 2 * 4000
    # an op given its bytes is opaque
    assert (
        external_bytes([op("x", [t(1000)], [t(1000)], flops=0, bytes=10.0), ops[1]])
        == 10 + 3 * 4000
    )


def test_a_measured_time_is_placed_between_fused_and_unfused():
    result = estimate_ops([COS, COS], A100, Software.EAGER)
    assert result.against_fusion(300e-6) is AgainstFusion.FASTER
    assert result.against_fusion(500e-6) is AgainstFusion.BETWEEN
    assert result.against_fusion(1e-3) is AgainstFusion.SLOWER
    assert "more of them ran fused than given" in result.fusion_advice(500e-6)
    assert "fusing the ops into one kernel would reach 0.3947 ms" in result.fusion_advice(786e-6)
    assert "not what ran" in result.fusion_advice(300e-6)
    assert "fused, the ops would take" in result.fusion_advice(1e-3)


# --- invariants on generated sequences --------------------------------------------------------

_POINTWISE = ["aten::cos", "aten::add", "aten::mul", "aten::gelu", "aten::silu", "aten::exp"]


@st.composite
def sequences(draw):
    """A chain over a (rows x cols) activation: pointwise ops, matmuls by square weights,
    views and reductions at the end; and a partition of it into contiguous groups."""
    rows, cols = draw(st.integers(1, 4096)), draw(st.sampled_from([64, 128, 1024, 4096]))
    dtype = draw(st.sampled_from([BF16, FP32]))
    x = t(rows, cols, dtype=dtype)
    ops = []
    for _ in range(draw(st.integers(1, 12))):
        choice = draw(st.sampled_from(["pointwise", "binary", "mm", "view", "softmax"]))
        if choice == "mm":
            ops.append(op("aten::mm", [x, t(cols, cols, dtype=dtype)], [x]))
        elif choice == "binary":
            ops.append(op("aten::add", [x, x], [x]))
        elif choice == "view":
            ops.append(op("aten::view", [x], [x]))
        elif choice == "softmax":
            ops.append(op("aten::_softmax", [x], [x]))
        else:
            ops.append(op(draw(st.sampled_from(_POINTWISE)), [x], [x]))
    cuts = sorted(
        draw(st.sets(st.integers(1, len(ops) - 1), max_size=len(ops))) if len(ops) > 1 else []
    )
    edges = [0, *cuts, len(ops)]
    groups = [list(range(a, b)) for a, b in itertools.pairwise(edges) if b > a]
    return ops, groups


@settings(max_examples=80, deadline=None)
@given(sequence=sequences(), software=st.sampled_from([Software.TYPICAL, Software.EAGER]))
def test_fusing_never_costs_time_or_bytes(sequence, software):
    ops, groups = sequence
    if all(o.name == "aten::view" for o in ops):
        return
    unfused = estimate_ops(ops, A100, software)
    grouped = estimate_ops(ops, A100, software, groups)
    # bytes: the whole fused <= as grouped <= each op alone (the sum of the ops' own)
    assert unfused.fused_bytes <= grouped.roofline.bytes * (1 + 1e-12)
    assert grouped.roofline.bytes <= unfused.roofline.bytes * (1 + 1e-12)
    assert unfused.roofline.bytes == pytest.approx(sum(c.work.bytes for c in unfused.ops))
    # ideal times likewise, and with launches the fused time is never above the unfused
    assert grouped.roofline.expected_time <= unfused.roofline.expected_time * (1 + 1e-12)
    assert unfused.fused_time <= unfused.unfused_time
    assert unfused.launch_overhead <= unfused.unfused_time * (1 + 1e-12)
    assert grouped.launch_overhead <= grouped.roofline.realistic_time * (1 + 1e-12)
    # FLOPs never change with the grouping
    assert grouped.roofline.flops == pytest.approx(sum(c.work.flops for c in unfused.ops))
    assert grouped.roofline.expected_time >= grouped.roofline.compute_time * (1 - 1e-12)
