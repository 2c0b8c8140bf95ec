"""The catalog's fp16-accumulate tensor rates (peak_flops_per_s.fp16_accumulate) and the stacks
that run at them (docs/formulas.md#accumulation)."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from app.catalog.loader import CatalogError, chip_catalog_from_data, load_chip_catalog
from app.engine import Dtype, Software

REAL = Path(__file__).resolve().parents[2] / "chip_catalog.json"
DATA = json.loads(REAL.read_text())
CATALOG = load_chip_catalog(REAL)


@pytest.mark.parametrize(
    ("chip_id", "fp16_acc", "fp32_acc"),
    [
        # the whitepapers' "Peak FP16 Tensor TFLOPS with FP16 / FP32 Accumulate", dense
        ("rtx-3090", 142, 71),  # GA102 whitepaper, Appendix A
        ("rtx-4090", 330.3, 165.2),  # Ada whitepaper, Appendix A
        ("rtx-5090", 419, 209.5),  # RTX Blackwell whitepaper, Appendix A
    ],
)
def test_each_geforce_card_has_its_fp16_accumulate_rate_at_twice_the_fp32_one(
    chip_id, fp16_acc, fp32_acc
):
    chip = CATALOG.chips[chip_id].chip
    assert chip.fp16_accumulate_peaks == {Dtype.FP16: fp16_acc * 1e12}
    assert chip.matrix_peaks[Dtype.FP16] == fp32_acc * 1e12
    # llama.cpp sees the faster one; PyTorch-based stacks keep the fp32-accumulate one
    assert chip.run_by(Software.LLAMA_CPP).matrix_peaks[Dtype.FP16] == fp16_acc * 1e12
    assert chip.run_by(Software.VLLM) is chip
    # bf16 products accumulate in fp32 whatever the stack
    bf16 = chip.matrix_peaks[Dtype.BF16]
    assert chip.run_by(Software.LLAMA_CPP).matrix_peaks[Dtype.BF16] == bf16


def test_data_center_chips_accumulate_at_full_rate_either_way():
    # their fp32-accumulate rate is the full one: no faster mode to list
    for chip_id in ("a100-sxm4-80gb", "h100-sxm5-80gb", "l40s", "a10", "mi300x"):
        chip = CATALOG.chips[chip_id].chip
        assert chip.fp16_accumulate_peaks == {}
        assert chip.run_by(Software.LLAMA_CPP) is chip


def _with_fp16_acc(dtype: str, value: float) -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(DATA)
    chip = next(c for c in data["chips"] if c["id"] == "rtx-4090")
    chip["peak_flops_per_s"]["fp16_accumulate"] = {
        dtype: {"value": value, "source": "nv-ada-wp", "verify": "V"}
    }
    return data


@pytest.mark.parametrize(
    ("dtype", "value", "words"),
    [
        ("fp16", 165.2e12, "must exceed the matrix fp16"),  # the fp32-accumulate one again
        ("fp16", 660.6e12, "at most twice"),  # the sparse figure
        ("bf16", 330.4e12, "bf16 products do not accumulate in fp16"),
    ],
)
def test_a_bad_fp16_accumulate_rate_names_the_chip_and_field(dtype, value, words):
    with pytest.raises(CatalogError) as raised:
        chip_catalog_from_data(_with_fp16_acc(dtype, value), "test")
    assert "rtx-4090" in str(raised.value)
    assert words in str(raised.value)
