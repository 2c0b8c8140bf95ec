"""Each chip's matrix peaks as units x clock x FLOP per cycle, and its last-level cache, in the
real catalog (docs/formulas.md#peaks-from-units-clock-and-flop-per-cycle,
docs/formulas.md#the-cache-roof)."""

import copy
import json

import pytest
from pydantic import ValidationError

from app.catalog.loader import load_chip_catalog
from app.catalog.schema import ChipCatalog
from app.engine import Dtype
from app.engine.hardware import peak_from_parts
from app.settings import Settings

REAL = Settings().chip_catalog
DATA = json.loads(REAL.read_text())
CATALOG = load_chip_catalog(REAL)
DERIVED = [r.entry for r in CATALOG.chips.values() if r.entry.peak_derivation is not None]
# vendors print peaks to 3-4 significant figures (A100: 312 for 311.87): a tenth of a percent
ROUNDING = 1e-3


@pytest.mark.parametrize("entry", DERIVED, ids=lambda e: e.id)
def test_units_times_clock_times_flop_per_cycle_is_the_listed_peak(entry):
    parts, units = entry.peak_derivation, entry.compute_units
    assert parts is not None and units is not None
    assert parts.matrix_flops_per_cycle_per_unit
    for dtype, per_cycle in parts.matrix_flops_per_cycle_per_unit.items():
        product = peak_from_parts(units.value, parts.clock_hz.value, per_cycle.value)
        listed = entry.peak_flops_per_s.matrix[dtype].value
        assert product == pytest.approx(listed, rel=ROUNDING), (entry.id, dtype)


def test_the_worked_derivations():
    # A100 SXM4 40GB: 108 SMs x 1.41e9 Hz x 2,048 FLOP (1,024 dense FP16 FMA per SM per
    # clock) = 311,869,440,000,000 FLOP/s, listed 312e12; MI300X: 304 CUs x 2.1e9 x 4,096
    # (fp8) = 2,614,886,400,000,000, listed 2,614.9e12
    a100 = CATALOG.resolve("a100-sxm4-40gb").entry
    mi300x = CATALOG.resolve("mi300x").entry
    assert a100.peak_derivation and a100.compute_units and mi300x.peak_derivation
    per_sm = a100.peak_derivation.matrix_flops_per_cycle_per_unit[Dtype.BF16].value
    assert peak_from_parts(a100.compute_units.value, 1.41e9, per_sm) == 311_869_440_000_000
    assert mi300x.peak_derivation.matrix_flops_per_cycle_per_unit[Dtype.FP8].value == 4096
    assert peak_from_parts(304, 2.1e9, 4096) == pytest.approx(2_614_886_400_000_000)
    assert {e.id for e in DERIVED} >= {"a100-sxm4-40gb", "mi300x", "mi250x"}


def test_every_chip_says_its_last_level_cache_or_why_not():
    for record in CATALOG.chips.values():
        cache = record.entry.last_level_cache
        assert cache is not None, record.entry.id
        if cache.size_bytes is None or cache.bandwidth_bytes_per_s is None:
            assert cache.unknown, record.entry.id
        chip = record.chip
        assert chip.cache_bytes == (cache.size_bytes.value if cache.size_bytes else None)
        if chip.cache_bandwidth is not None:
            # a cache no slower than the memory behind it
            assert chip.cache_bandwidth > chip.memory_bandwidth, record.entry.id


@pytest.mark.parametrize(
    ("chip_id", "size", "bandwidth"),
    [
        # the sizes of the architecture papers (MiB as the vendors' MB mean them), the
        # bandwidths of their bytes per clock: A100 5,120 B/clk x 1.41 GHz = 7,219 GB/s
        ("a100-sxm4-40gb", 40 * 2**20, 7.219e12),
        ("h100-sxm5-80gb", 50 * 2**20, 5120 * 1.83e9),
        ("l40s", 96 * 2**20, None),
        ("rtx-4090", 72 * 2**20, None),
        ("mi300x", 256 * 2**20, 17e12),
        ("gaudi3", 96 * 2**20, 12.8e12),
        ("tpu-v5p", None, None),
    ],
)
def test_cache_figures(chip_id, size, bandwidth):
    chip = CATALOG.resolve(chip_id).chip
    assert chip.cache_bytes == size
    assert chip.cache_bandwidth == bandwidth


def _with(change):
    data = copy.deepcopy(DATA)
    change(next(c for c in data["chips"] if c["id"] == "a100-sxm4-40gb"))
    return data


def test_a_null_cache_figure_needs_its_reason():
    def drop(chip):
        chip["last_level_cache"]["bandwidth_bytes_per_s"] = None

    with pytest.raises(ValidationError, match="a null size or bandwidth needs the reason"):
        ChipCatalog.model_validate(_with(drop))


def test_a_derivation_needs_units_and_a_peak_to_derive():
    def no_units(chip):
        chip["compute_units"] = None

    def unknown_dtype(chip):
        chip["peak_derivation"]["matrix_flops_per_cycle_per_unit"]["fp8"] = {
            "value": 4096,
            "source": "nv-ampere-blog",
            "verify": "U",
        }

    with pytest.raises(ValidationError, match="needs compute_units"):
        ChipCatalog.model_validate(_with(no_units))
    with pytest.raises(ValidationError, match="has no fp8 matrix peak for it to derive"):
        ChipCatalog.model_validate(_with(unknown_dtype))
