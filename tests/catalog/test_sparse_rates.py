"""The catalog's 2:4 structured-sparse rates (peak_flops_per_s.sparse)."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from app.catalog.loader import CatalogError, chip_catalog_from_data, load_chip_catalog
from app.engine import Dtype

REAL = Path(__file__).resolve().parents[2] / "chip_catalog.json"
DATA = json.loads(REAL.read_text())
CATALOG = load_chip_catalog(REAL)


@pytest.mark.parametrize(
    ("chip_id", "dtype", "tflops"),
    [
        ("a100-sxm4-80gb", Dtype.BF16, 624),
        ("a100-sxm4-80gb", Dtype.INT8, 1248),
        ("h100-sxm5-80gb", Dtype.FP8, 3957.8),
        ("h200-sxm-141gb", Dtype.BF16, 1979),
        ("b200", Dtype.FP16, 4500),
        ("l40s", Dtype.FP8, 1466),
        ("l4", Dtype.BF16, 242),
        ("rtx-4090", Dtype.BF16, 330.4),
    ],
)
def test_sparse_headline_rates_reach_the_engine(chip_id, dtype, tflops):
    assert CATALOG.chips[chip_id].chip.sparse_peak(dtype).flops_per_s == tflops * 1e12


def test_each_sparse_rate_is_about_twice_its_dense_one_from_the_same_page():
    # vendors print the sparse rate as 2x the dense; the L40S's 733 over 362.05 is the widest
    # rounding (2.025x)
    for record in CATALOG.chips.values():
        peaks = record.entry.peak_flops_per_s
        for dtype, figure in peaks.sparse.items():
            dense = peaks.matrix[dtype]
            assert 1.99 <= figure.value / dense.value <= 2.03, (record.entry.id, dtype)
            assert (figure.source, figure.verify) == (dense.source, dense.verify)


def test_chips_without_sparse_tensor_cores_have_no_sparse_rates():
    for chip_id in ("v100-sxm2-32gb", "t4", "a10g", "tpu-v5p", "gaudi3", "apple-m2-max"):
        assert CATALOG.chips[chip_id].chip.sparse_peaks == {}


def _with_sparse(dtype: str, value: float, chip_id: str = "a100-sxm4-80gb") -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(DATA)
    chip = next(c for c in data["chips"] if c["id"] == chip_id)
    chip["peak_flops_per_s"]["sparse"][dtype] = {
        "value": value,
        "source": "nv-a100-80-ds",
        "verify": "V",
    }
    return data


@pytest.mark.parametrize(
    ("dtype", "value", "words"),
    [
        ("bf16", 312e12, "must exceed the dense"),  # the dense figure taken for the sparse
        ("bf16", 1248e12, "at most twice"),  # sparse counted twice
        ("fp8", 624e12, "no dense fp8 matrix peak"),  # no fp8 on an A100
        ("tf32", 312e12, "tf32 has no 2:4 sparse rate"),  # tf32 runs 1:2
    ],
)
def test_a_bad_sparse_rate_names_the_chip_and_field(dtype, value, words):
    with pytest.raises(CatalogError) as raised:
        chip_catalog_from_data(_with_sparse(dtype, value), "test")
    assert "a100-sxm4-80gb" in str(raised.value)
    assert words in str(raised.value)
