"""Worked kernel examples: the arithmetic is in each test, the engine must agree."""

from dataclasses import replace

import pytest

from app.engine import (
    AttentionKernel,
    Bound,
    Dtype,
    InvalidInput,
    RowOp,
    Unit,
    Unsupported,
    Work,
    attention,
    custom,
    elementwise,
    matmul,
    place,
    pointwise_flops,
    row_op,
    saxpy,
)
from app.engine.roofline import on_the_roofs
from tests.engine.chips import A100, A100_40GB, H100


def test_matmul_4096_cubed_bf16_on_a100_is_compute_bound():
    # FLOPs = 2 * 4096^3 = 137,438,953,472
    # bytes = (3 * 4096^2 elements) * 2 bytes = 100,663,296
    # intensity = 1.374e11 / 1.007e8 = 1365.3 FLOP/B; ridge = 312e12 / 2.039e12 = 153.0 FLOP/B
    # compute = 1.374e11 / 312e12 = 440.5 us; memory = 1.007e8 / 2.039e12 = 49.4 us
    roof = place(matmul(4096, 4096, 4096, Dtype.BF16), A100)
    assert roof.flops == 137_438_953_472
    assert roof.bytes == 100_663_296
    assert roof.arithmetic_intensity == pytest.approx(1365.33, rel=1e-4)
    assert roof.ridge_intensity == pytest.approx(153.02, rel=1e-4)
    assert roof.compute_time == pytest.approx(440.5e-6, rel=1e-3)
    assert roof.memory_time == pytest.approx(49.37e-6, rel=1e-3)
    assert roof.bound is Bound.COMPUTE
    assert roof.expected_time == roof.compute_time
    # realistic: the measured 86.9% of peak: 440.5 / 0.869 = 506.9 us
    assert roof.realistic_time == pytest.approx(506.9e-6, rel=1e-3)


def test_fp32_matmul_uses_the_vector_peak_unless_tf32_is_allowed():
    # 2 * 1024^3 = 2.147e9 FLOPs: at 19.5 TFLOP/s fp32 110.1 us; at 156 TFLOP/s TF32 13.77 us
    plain = place(matmul(1024, 1024, 1024, Dtype.FP32), A100)
    tf32 = place(matmul(1024, 1024, 1024, Dtype.FP32, allow_tf32=True), A100)
    assert plain.peak.unit is Unit.VECTOR and plain.peak.dtype is Dtype.FP32
    assert plain.compute_time == pytest.approx(110.1e-6, rel=1e-3)
    assert tf32.peak.dtype is Dtype.TF32
    assert tf32.compute_time == pytest.approx(13.77e-6, rel=1e-3)


def test_a100_fp32_elementwise_needs_about_100_flops_per_element_to_be_compute_bound():
    # A100 40GB: ridge = 19.5e12 / 1.555e12 = 12.54 FLOP/B. A fused unary fp32 op moves
    # 4 + 4 = 8 bytes per element, so it turns compute-bound at 8 * 12.54 = 100.3 FLOPs/element.
    n = 10**8
    below = place(elementwise(n, Dtype.FP32, ops=1, flops_per_element=100), A100_40GB)
    above = place(elementwise(n, Dtype.FP32, ops=1, flops_per_element=101), A100_40GB)
    assert below.bound is Bound.MEMORY
    assert above.bound is Bound.COMPUTE
    assert 8 * below.ridge_intensity == pytest.approx(100.3, rel=1e-3)


def test_fused_cos_cos_costs_what_one_cos_costs_and_unfused_twice():
    # x.cos().cos() over 1e8 fp32 elements: 2e8 FLOPs either way.
    # fused: read x, write y: 2 * 1e8 * 4 = 8e8 B -> 8e8 / 2.039e12 = 392.4 us
    # unfused: each cos reads and writes: 2 * 2 * 1e8 * 4 = 1.6e9 B -> 784.7 us
    n = 10**8
    one_cos = place(elementwise(n, Dtype.FP32, ops=1), A100)
    fused = place(elementwise(n, Dtype.FP32, ops=2, fused=True), A100)
    unfused = place(elementwise(n, Dtype.FP32, ops=2, fused=False), A100)
    assert fused.bytes == 8e8 and unfused.bytes == 1.6e9
    assert fused.flops == unfused.flops == 2e8
    assert fused.expected_time == pytest.approx(one_cos.expected_time)
    assert fused.expected_time == pytest.approx(392.4e-6, rel=1e-3)
    assert unfused.expected_time == pytest.approx(2 * fused.expected_time)
    assert pointwise_flops(["cos", "cos"]) == 2


def test_saxpy_intensity_is_one_sixth_in_fp32():
    # y = a x + y: 2 FLOPs per element; read x and y and write y: 3 * 4 = 12 bytes -> 2/12
    roof = place(saxpy(10**6, Dtype.FP32), A100)
    assert roof.arithmetic_intensity == pytest.approx(1 / 6)
    assert roof.bound is Bound.MEMORY


def test_softmax_reads_and_writes_once_at_five_flops_per_element():
    # 4096 x 4096 fp32: 2 * 16.8e6 * 4 = 134.2 MB moved; 5 * 16.8e6 = 83.9 MFLOP
    work = row_op(RowOp.SOFTMAX, 4096, 4096, Dtype.FP32)
    assert work.bytes == 2 * 4096 * 4096 * 4
    assert work.flops == 5 * 4096 * 4096
    layernorm = row_op(RowOp.LAYERNORM, 4096, 4096, Dtype.FP32)
    assert layernorm.bytes == (2 * 4096 * 4096 + 2 * 4096) * 4  # plus gamma and beta


def _layer_4096(kernel: AttentionKernel) -> Work:
    """B=1, H=32, L=4096, d=128, bf16, not causal."""
    return attention(
        batch=1,
        heads=32,
        q_len=4096,
        kv_len=4096,
        head_dim=128,
        dtype=Dtype.BF16,
        implementation=kernel,
    )


def test_flash_attention_moves_qkvo_and_naive_adds_the_score_matrices():
    # B=1, H=32, L=4096, d=128, bf16, not causal: FLOPs = 4 * 32 * 4096^2 * 128 = 2.749e11
    # flash bytes = (Q + K + V + O) = 4 * 32 * 4096 * 128 * 2 = 134.2 MB
    # naive adds S and P written and read: 4 * 32 * 4096^2 * 2 = 4.295 GB
    flash, naive = _layer_4096(AttentionKernel.FUSED), _layer_4096(AttentionKernel.NAIVE)
    assert flash.flops == naive.flops == 4 * 32 * 4096**2 * 128
    assert flash.bytes == 4 * 32 * 4096 * 128 * 2
    assert naive.bytes - flash.bytes == 4 * 32 * 4096**2 * 2
    assert place(flash, H100).bound is Bound.COMPUTE
    assert place(naive, H100).bound is Bound.MEMORY
    causal = attention(
        batch=1, heads=32, q_len=4096, kv_len=4096, head_dim=128, dtype=Dtype.BF16, causal=True
    )
    assert causal.flops == flash.flops / 2


def test_flash_attention_2_is_held_to_the_warp_level_mma_share_of_the_peak():
    # B=1, H=32, L=4096, d=128, bf16: 2.749e11 FLOPs, 134.2 MB, compute-bound on an H100.
    # Ideal (either kernel): 2.749e11 / 989.4e12 = 277.9 us. Sustained: the fused kernel at
    # the chip's 80.3% = 346.0 us; FlashAttention-2's mma.sync issues at most half of
    # Hopper's peak: 2.749e11 / (0.5 * 989.4e12) = 555.7 us. An A100 has no faster path to
    # lose: both kernels sustain its 86.9%.
    fused, fa2 = _layer_4096(AttentionKernel.FUSED), _layer_4096(AttentionKernel.FLASH_2)
    assert (fa2.flops, fa2.bytes, fa2.kernels) == (fused.flops, fused.bytes, 1)
    hopper = replace(H100, warp_mma=0.5)
    assert place(fused, hopper).expected_time == place(fa2, hopper).expected_time
    assert place(fa2, hopper).expected_time == pytest.approx(277.9e-6, rel=1e-3)
    assert place(fused, hopper).realistic_time == pytest.approx(346.0e-6, rel=1e-3)
    assert place(fa2, hopper).realistic_time == pytest.approx(555.7e-6, rel=1e-3)
    assert place(fa2, A100).realistic_time == place(fused, A100).realistic_time
    assert fa2.scaled(3).warp and not fused.warp


def test_grouped_query_attention_reads_fewer_kv_bytes():
    mha = attention(batch=1, heads=32, q_len=1, kv_len=8192, head_dim=128, dtype=Dtype.BF16)
    gqa = attention(
        batch=1, heads=32, kv_heads=8, q_len=1, kv_len=8192, head_dim=128, dtype=Dtype.BF16
    )
    # K and V: 2 * 8192 * 128 * 2 bytes per KV head: 4.19 MB each; 32 vs 8 heads
    assert mha.bytes - gqa.bytes == 24 * 2 * 8192 * 128 * 2


def test_custom_work_and_its_errors():
    roof = place(custom(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100)
    assert roof.arithmetic_intensity == 1000
    with pytest.raises(InvalidInput, match="bytes"):
        custom(1e12, 0, Dtype.BF16, Unit.MATRIX)
    with pytest.raises(InvalidInput, match="flops"):
        custom(-1, 1, Dtype.BF16, Unit.MATRIX)
    # work built elsewhere is refused where it is placed, and where its busy time is taken
    for work, field in (
        (Work(1.0, 0.0, Dtype.BF16, Unit.MATRIX), "bytes"),
        (Work(-1.0, 1.0, Dtype.BF16, Unit.MATRIX), "flops"),
    ):
        for placing in (place, on_the_roofs):
            with pytest.raises(InvalidInput, match=field):
                placing(work, A100)


def test_a_dtype_the_chip_lacks_is_unsupported_and_lists_what_it_has():
    with pytest.raises(Unsupported, match="no published fp8 matrix peak; available: bf16"):
        place(matmul(16, 16, 16, Dtype.FP8), A100)


def test_half_precision_vector_work_falls_back_to_the_fp32_vector_peak():
    roof = place(elementwise(10**6, Dtype.BF16, ops=1), A100)
    assert roof.peak.dtype is Dtype.FP32 and roof.peak.flops_per_s == 19.5e12


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: matmul(0, 1, 1, Dtype.BF16), "m"),
        (lambda: elementwise(10, Dtype.FP32, ops=0), "ops"),
        (lambda: elementwise(10, Dtype.FP32, ops=1, flops_per_element=-1), "flops_per_element"),
        (lambda: pointwise_flops(["cos", "frobnicate"]), "ops"),
        (lambda: row_op(RowOp.SOFTMAX, 0, 1, Dtype.FP32), "rows"),
        (
            lambda: attention(
                batch=1, heads=32, kv_heads=5, q_len=1, kv_len=1, head_dim=1, dtype=Dtype.BF16
            ),
            "kv_heads",
        ),
        (
            lambda: attention(
                batch=1, heads=1, q_len=8, kv_len=4, head_dim=1, dtype=Dtype.BF16, causal=True
            ),
            "kv_len",
        ),
    ],
)
def test_bad_kernel_inputs_name_their_field(call, field):
    with pytest.raises(InvalidInput) as info:
        call()
    assert info.value.field == field


@pytest.mark.parametrize(
    ("op", "flops", "params"),
    [
        # max, subtract, exp, sum, divide; no weights
        (RowOp.SOFTMAX, 5, 0),
        # mean-add, subtract, square, variance-add, scale by rstd, times gamma, plus beta;
        # gamma and beta
        (RowOp.LAYERNORM, 7, 2),
        # square, sum, scale by rsqrt, times gamma; gamma
        (RowOp.RMSNORM, 4, 1),
    ],
)
def test_row_ops_count_their_flops_and_weights_per_element(op, flops, params):
    # 10 rows x 100 cols = 1000 elements, fp32: read 1000 and write 1000, plus 100 per weight
    # vector. layernorm: 7 * 1000 = 7000 FLOPs, (2000 + 2 * 100) * 4 = 8800 bytes.
    work = row_op(op, 10, 100, Dtype.FP32)
    assert work.flops == flops * 1000
    assert work.bytes == (2000 + params * 100) * 4
    assert work.unit is Unit.VECTOR


def test_layernorm_on_a100_is_memory_bound_at_seven_flops_per_element():
    # 4096 x 4096 bf16: 7 * 16,777,216 = 117,440,512 FLOPs; bytes (2 * 16,777,216 + 2 * 4096) * 2
    # = 67,125,248. bf16 vector work runs at the fp32 vector peak, 19.5e12:
    # compute 6.0226 us, memory 67,125,248 / 2.039e12 = 32.921 us
    roof = place(row_op(RowOp.LAYERNORM, 4096, 4096, Dtype.BF16), A100)
    assert roof.flops == 117_440_512
    assert roof.bytes == 67_125_248
    assert roof.compute_time == pytest.approx(6.0226e-6, rel=1e-4)
    assert roof.memory_time == pytest.approx(32.921e-6, rel=1e-4)


@pytest.mark.parametrize(
    ("ops", "flops"),
    [
        (["fma"], 2),  # a multiply-add is 2 FLOPs
        (["mul", "add"], 2),  # the same work unfused into two instructions
        (["fma", "fma", "exp"], 5),
        (["add", "sub", "mul", "div", "neg", "abs", "relu", "max", "min", "square"], 10),
        (["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal"], 9),
        ([], 0),
    ],
)
def test_pointwise_flops_count_one_per_op_and_two_per_fma(ops, flops):
    assert pointwise_flops(ops) == flops


def test_an_fma_chain_over_a_million_elements():
    # y = fma(x, a, b) fused over 1e6 fp32 elements, one input: 2e6 FLOPs, (1 + 1) * 4e6 bytes
    work = elementwise(10**6, Dtype.FP32, ops=1, flops_per_element=pointwise_flops(["fma"]))
    assert work.flops == 2e6
    assert work.bytes == 8e6


def test_a_copy_with_other_peaks_reads_its_own():
    faster = replace(A100, matrix_peaks={Dtype.BF16: 1e15})
    assert faster.peak(Dtype.BF16, Unit.MATRIX).flops_per_s == 1e15
    with pytest.raises(Unsupported):
        faster.peak(Dtype.FP16, Unit.MATRIX)
