"""Power-limited chips (T4 70 W, L4 72 W, H100 PCIe 350 W): their sustained matrix fractions
are their own measurements of long GEMM runs under the power cap, not a bigger sibling's
fraction; and chips that once borrowed another chip's fraction carry their own measurement
too, of their matrix unit (H20, RTX 4090, V100) or of their memory (T4, A10, RTX 3090,
RTX 4090). Every expected value is derived by hand in the comment beside it."""

import pytest

from app.catalog.loader import load_chip_catalog
from app.engine import Bound, Dtype, matmul, place
from app.settings import Settings

CATALOG = load_chip_catalog(Settings().chip_catalog)

# chip, board power (W), its measurement's source key, measured TFLOP/s, peak TFLOP/s
POWER_LIMITED = [
    ("t4", 70, "t4-gemm-forum", 24.0, 65.0),  # cuBLAS fp16 4096^3, 100 iterations
    ("l4", 72, "l4-matmul", 56.90, 121.0),  # torch bf16 10240^3
    ("h100-pcie-80gb", 350, "h100-pcie-matmul", 471.79, 756.0),  # torch bf16 10240^3
]
# chip, its measurement's source key, measured TFLOP/s, peak TFLOP/s: torch matmuls at 10240^3
# (bf16; fp16 on the V100, which has no bf16 tensor path)
OWN_MEASUREMENT = [
    ("h20", "h20-matmul", 142.25, 148.0),
    ("rtx-4090", "rtx4090-matmul", 158.54, 165.2),
    ("v100-sxm2-16gb", "v100-matmul", 89.37, 125.0),
    ("v100-sxm2-32gb", "v100-matmul", 89.37, 125.0),  # the same GPU on a 32 GB board
]


@pytest.mark.parametrize(("chip_id", "watts", "source", "measured", "peak"), POWER_LIMITED)
def test_the_sustained_fraction_is_the_chips_own_measurement(
    chip_id, watts, source, measured, peak
):
    record = CATALOG.resolve(chip_id)
    figure = record.entry.sustained.matrix
    assert record.entry.board_power_w is not None
    assert record.entry.board_power_w.value == watts
    assert figure.source == source
    assert CATALOG.catalog.sources[source].kind == "measurement"
    assert CATALOG.catalog.sources[source].url.startswith("https://")
    # T4: 24.0 / 65 = 0.3692 -> 0.369; L4: 56.90 / 121 = 0.4702 -> 0.470;
    # H100 PCIe: 471.79 / 756 = 0.6241 -> 0.624
    assert record.chip.sustained_matrix == pytest.approx(measured / peak, abs=5e-4)
    # no per-dtype override: the one measured fraction is every matrix dtype's
    assert dict(record.chip.sustained_matrix_by_dtype) == {}


@pytest.mark.parametrize(("chip_id", "source", "measured", "peak"), OWN_MEASUREMENT)
def test_a_chip_once_given_a_siblings_fraction_carries_its_own(chip_id, source, measured, peak):
    record = CATALOG.resolve(chip_id)
    figure = record.entry.sustained.matrix
    assert figure.source == source and "proxy" not in (figure.note or "")
    assert CATALOG.catalog.sources[source].kind == "measurement"
    # H20: 142.25 / 148 = 0.9611 -> 0.961; RTX 4090: 158.54 / 165.2 = 0.9597 -> 0.960;
    # V100: 89.37 / 125 = 0.7150 -> 0.715
    assert record.chip.sustained_matrix == pytest.approx(measured / peak, abs=5e-4)


# chip, measured copy GB/s (read + write), the memory's GB/s: a torch copy of a 0.38 GB tensor
OWN_COPY = [
    ("t4", 240, 320),  # 240 / 320 = 0.750
    ("a10", 469, 600),  # 469 / 600 = 0.7817 -> 0.782
    ("rtx-3090", 831, 936),  # 831 / 936 = 0.8878 -> 0.888
    ("rtx-4090", 912, 1008),  # 912 / 1008 = 0.9048 -> 0.905
]


@pytest.mark.parametrize(("chip_id", "measured", "peak"), OWN_COPY)
def test_a_chip_once_given_a_siblings_copy_fraction_carries_its_own(chip_id, measured, peak):
    record = CATALOG.resolve(chip_id)
    figure = record.entry.sustained.memory
    assert figure.source == "devbench-copy"
    assert CATALOG.catalog.sources["devbench-copy"].kind == "measurement"
    assert record.chip.memory_bandwidth == peak * 1e9
    assert record.chip.sustained_memory == pytest.approx(measured / peak, abs=5e-4)


# A 4096^3 GEMM: 2 x 4096^3 = 137,438,953,472 FLOPs; A, B read and C written, 3 x 4096^2 x 2
# = 100,663,296 B. Each row: chip, dtype, the ideal and sustained seconds, the sustained rate.
GEMM_4096 = [
    # H100 PCIe: 137,438,953,472 / 756e12 = 0.181798 ms ideal (memory / 2.0e12 = 0.0503 ms);
    # sustained 0.181798 / 0.624 = 0.291343 ms: 471.74 TFLOP/s, the rate the 350 W board held
    # at 10240^3, where an H100 SXM's 0.803 would have promised 607
    ("h100-pcie-80gb", Dtype.BF16, 1.817975e-4, 2.913421e-4, 471.74e12),
    # T4: compute 137,438,953,472 / 65e12 = 2.1144 ms, memory / 320e9 = 0.3146 ms; sustained
    # compute 2.1144 / 0.369 = 5.7302 ms, memory 0.3146 / 0.833 = 0.3776 ms: 23.985 TFLOP/s,
    # the ~24 the forum measured at this shape
    ("t4", Dtype.FP16, 2.114445e-3, 5.730204e-3, 23.985e12),
    # L4: 137,438,953,472 / 121e12 = 1.13586 ms ideal (memory / 300e9 = 0.3355 ms); sustained
    # 1.13586 / 0.470 = 2.41672 ms against memory 0.3355 / 0.829 = 0.4048 ms: 56.87 TFLOP/s
    ("l4", Dtype.BF16, 1.135859e-3, 2.416722e-3, 56.87e12),
]


@pytest.mark.parametrize(("chip_id", "dtype", "ideal", "sustained", "rate"), GEMM_4096)
def test_a_4096_cubed_gemm_runs_at_the_chips_own_fraction(chip_id, dtype, ideal, sustained, rate):
    roof = place(matmul(4096, 4096, 4096, dtype), CATALOG.resolve(chip_id).chip)
    assert roof.bound is Bound.COMPUTE
    assert roof.flops == 2 * 4096**3
    assert roof.expected_time == pytest.approx(ideal, rel=1e-5)
    assert roof.sustained_time == pytest.approx(sustained, rel=1e-5)
    assert roof.flops / roof.sustained_time == pytest.approx(rate, rel=1e-4)
