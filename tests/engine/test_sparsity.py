"""2:4 structured sparsity: worked matmul examples on the sparse tensor rate
(docs/formulas.md#structured-sparsity)."""

from dataclasses import replace

import pytest

from app.engine import Bound, Dtype, Unsupported, matmul, place
from app.engine.hardware import SPARSE_SPEEDUP
from tests.engine.chips import A100

# the A100 datasheet's 2:4 sparse rates: 624 TFLOP/s bf16/fp16, 1,248 TOPS int8
SPARSE_A100 = replace(
    A100, sparse_peaks={Dtype.BF16: 624e12, Dtype.FP16: 624e12, Dtype.INT8: 1248e12}
)


def test_a_sparse_4096_cubed_bf16_matmul_on_a100_runs_at_the_sparse_rate():
    # FLOPs: the dense-equivalent 2 * 4096^3 = 137,438,953,472 (what the 624 TFLOP/s counts)
    # bytes: A and C dense, 2 * 4096^2 * 2 = 67,108,864; B compressed: 4096^2 / 2 kept values
    #   of 2 bytes + 2 bits (0.25 byte) each = 8,388,608 * 2.25 = 18,874,368; total 85,983,232
    # compute 1.3744e11 / 624e12 = 220.25 us; memory 85,983,232 / 2.039e12 = 42.17 us
    roof = place(matmul(4096, 4096, 4096, Dtype.BF16, sparse=True), SPARSE_A100)
    assert roof.flops == 137_438_953_472
    assert roof.bytes == 85_983_232
    assert roof.peak.flops_per_s == 624e12
    assert roof.compute_time == pytest.approx(220.25e-6, rel=1e-4)
    assert roof.memory_time == pytest.approx(42.17e-6, rel=1e-3)
    assert roof.bound is Bound.COMPUTE
    # sustained: 0.869 * 1.21 / 2 = 0.5257 of the sparse rate: 220.25 / 0.5257 = 418.9 us,
    # against the dense 440.5 / 0.869 = 506.9 us: the published 1.21x, not the paper 2x
    assert roof.sustained_compute == pytest.approx(0.869 * 1.21 / 2)
    assert roof.realistic_time == pytest.approx(418.9e-6, rel=1e-3)
    dense = place(matmul(4096, 4096, 4096, Dtype.BF16), SPARSE_A100)
    assert dense.realistic_time / roof.realistic_time == pytest.approx(SPARSE_SPEEDUP)
    assert dense.expected_time / roof.expected_time == pytest.approx(2)


def test_a_sparse_gemv_is_faster_by_its_compressed_weights_only():
    # decode GEMV, m = 1, n = k = 4096, bf16: x and y 4096 * 2 = 8,192 bytes each; weights
    # dense 4096^2 * 2 = 33,554,432, sparse 8,388,608 * 2.25 = 18,874,368
    # memory: 33,570,816 / 2.039e12 = 16.46 us dense, 18,890,752 / 2.039e12 = 9.265 us sparse
    dense = place(matmul(1, 4096, 4096, Dtype.BF16), SPARSE_A100)
    sparse = place(matmul(1, 4096, 4096, Dtype.BF16, sparse=True), SPARSE_A100)
    assert dense.bytes == 33_570_816
    assert sparse.bytes == 18_890_752
    assert sparse.bound is Bound.MEMORY
    assert sparse.expected_time == pytest.approx(9.265e-6, rel=1e-3)
    assert dense.expected_time / sparse.expected_time == pytest.approx(1.777, rel=1e-3)


def test_int8_weights_carry_a_quarter_byte_of_index_per_kept_value():
    # 8 x 8 x 8 int8: A and C 64 bytes each; B 32 kept values x 1.25 bytes = 40
    assert matmul(8, 8, 8, Dtype.INT8, sparse=True).bytes == 64 + 64 + 40


@pytest.mark.parametrize(
    ("chip", "dtype", "allow_tf32"),
    [
        (A100, Dtype.BF16, False),  # no sparse rates at all
        (SPARSE_A100, Dtype.FP8, False),  # no fp8 on an A100
        (SPARSE_A100, Dtype.FP32, True),  # tf32 runs 1:2, not catalogued
        (SPARSE_A100, Dtype.FP32, False),  # fp32 has no tensor-core path
    ],
)
def test_no_sparse_rate_is_refused_on_the_sparsity_field(chip, dtype, allow_tf32):
    work = matmul(64, 64, 64, dtype, allow_tf32=allow_tf32, sparse=True)
    with pytest.raises(Unsupported) as raised:
        place(work, chip)
    assert raised.value.field == "sparsity"
    assert chip.id in raised.value.message
    assert "sparse" in raised.value.message


def test_work_partly_sparse_runs_each_part_at_its_own_peak():
    # 2 x 64^3 = 524,288 FLOPs a GEMM: scaled, a sparse GEMM's FLOPs stay sparse; two GEMMs,
    # one of them sparse, are 1,048,576 FLOPs of which 524,288 sparse
    dense = matmul(64, 64, 64, Dtype.BF16)
    assert dense.scaled(2).sparse_flops == 0
    assert matmul(64, 64, 64, Dtype.BF16, sparse=True).scaled(2).sparse_flops == 1_048_576
    both = replace(dense.scaled(2), sparse_flops=524_288)
    # on the A100 (312 dense, 624 sparse TFLOP/s): 524,288 / 312e12 + 524,288 / 624e12 =
    # 2.5206 ns, a blended 416 TFLOP/s (the harmonic mean)
    roof = place(both, SPARSE_A100)
    assert roof.compute_time == pytest.approx(524_288 / 312e12 + 524_288 / 624e12)
    assert roof.peak.flops_per_s == pytest.approx(416e12)
