"""The chip catalog: the real file validates, and a bad file stops start-up with a clear message."""

import copy
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.catalog.loader import CatalogError, content_hash, load_chip_catalog
from app.catalog.schema import ChipCatalog
from app.engine import Dtype
from app.main import create_app
from app.settings import Settings

REAL = Settings().chip_catalog
DATA = json.loads(REAL.read_text())


def test_the_real_catalog_loads_and_every_chip_has_the_roofline_figures():
    catalog = load_chip_catalog(REAL)
    assert catalog.version == DATA["version"]
    for record in catalog.chips.values():
        chip = record.chip
        assert chip.memory_bytes > 1e9 and chip.memory_bandwidth > 1e11
        assert chip.matrix_peaks
        assert 0 < chip.sustained_matrix <= 1 and 0 < chip.sustained_memory <= 1


@pytest.mark.parametrize(
    ("chip_id", "bf16", "bandwidth"),
    [
        # dense peaks and datasheet bandwidths (sparse figures halved)
        ("a100-sxm4-80gb", 312e12, 2.039e12),
        ("a100-sxm4-40gb", 312e12, 1.555e12),
        ("h100-sxm5-80gb", 989.4e12, 3.35e12),
        ("mi300x", 1307.4e12, 5.3e12),
        ("tpu-v5e", 197e12, 819e9),
    ],
)
def test_headline_figures(chip_id, bf16, bandwidth):
    chip = load_chip_catalog(REAL).resolve(chip_id).chip
    assert chip.matrix_peaks[Dtype.BF16] == pytest.approx(bf16, rel=0.005)
    assert chip.memory_bandwidth == pytest.approx(bandwidth, rel=0.02)


def test_the_hash_ignores_formatting_but_not_content():
    assert content_hash(DATA) == content_hash(json.loads(json.dumps(DATA, indent=4)))
    changed = copy.deepcopy(DATA)
    changed["chips"][0]["name"] += " (edited)"
    assert content_hash(changed) != content_hash(DATA)


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "chip_catalog.json"
    path.write_text(json.dumps(data))
    return path


def first_chip(data):
    return data["chips"][0]


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (
            lambda d: first_chip(d)["memory"].pop("bandwidth_bytes_per_s"),
            "memory.bandwidth_bytes_per_s: Field required",
        ),
        (
            lambda d: first_chip(d)["memory"]["capacity_bytes"].update(value=-1),
            "memory.capacity_bytes.value",
        ),
        (
            lambda d: first_chip(d)["memory"]["bandwidth_bytes_per_s"].update(value=-2e12),
            "memory.bandwidth_bytes_per_s.value",
        ),
        (
            lambda d: first_chip(d)["memory"]["bandwidth_bytes_per_s"].pop("source"),
            "memory.bandwidth_bytes_per_s.source: Field required",
        ),
        (
            lambda d: first_chip(d)["sustained"]["matrix"].update(value=1.5),
            "sustained.matrix.value",
        ),
        (
            lambda d: first_chip(d)["memory"]["capacity_bytes"].update(source="nowhere"),
            "memory.capacity_bytes.source 'nowhere' is not in sources",
        ),
        (
            lambda d: first_chip(d)["peak_flops_per_s"]["vector"].update(
                int8={
                    "value": 1.0,
                    "source": first_chip(d)["memory"]["capacity_bytes"]["source"],
                    "verify": "V",
                }
            ),
            "vector: dtype int8 is not a vector rate",
        ),
        (
            # the vendor's "with sparsity" number taken as the peak (the dense one is half)
            lambda d: first_chip(d)["peak_flops_per_s"]["matrix"].update(
                bf16={
                    "value": 624e12,
                    "source": first_chip(d)["memory"]["capacity_bytes"]["source"],
                    "verify": "V",
                    "note": "vendor prints 624 TFLOP/s with sparsity",
                }
            ),
            "matrix.bf16: 6.24e+14 is the 'with sparsity' figure",
        ),
        (lambda d: first_chip(d)["aliases"].append(d["chips"][1]["id"]), "is already used"),
        (lambda d: first_chip(d).update(colour="green"), "colour: Extra inputs"),
        (
            lambda d: first_chip(d).update(
                compute_units={
                    "value": 80.5,
                    "source": first_chip(d)["memory"]["capacity_bytes"]["source"],
                    "verify": "V",
                }
            ),
            "compute_units: Value error, must be a whole number",
        ),
        (
            # a per-dtype fraction needs that dtype's matrix peak to be a fraction of
            lambda d: first_chip(d)["sustained"].update(
                matrix_by_dtype={
                    "fp4": {
                        "value": 0.5,
                        "source": first_chip(d)["memory"]["capacity_bytes"]["source"],
                        "verify": "S",
                    }
                }
            ),
            "sustained.matrix_by_dtype.fp4: the chip has no fp4 matrix peak",
        ),
    ],
)
def test_a_bad_catalog_names_the_chip_and_field(tmp_path, mutate, words):
    data = copy.deepcopy(DATA)
    mutate(data)
    with pytest.raises(CatalogError) as info:
        load_chip_catalog(write(tmp_path, data))
    message = str(info.value)
    assert words in message
    assert first_chip(DATA)["id"] in message


def test_a_catalog_that_is_not_json_stops_the_service(tmp_path):
    path = tmp_path / "chip_catalog.json"
    path.write_text("{")
    database = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with pytest.raises(CatalogError, match="not valid JSON"):
        create_app(Settings(chip_catalog=path, database_url=database))
    with pytest.raises(CatalogError, match="cannot read"):
        create_app(Settings(chip_catalog=tmp_path / "missing.json", database_url=database))


# Chips added in catalog 2026.11.23: (id, fp16 matrix peak, bandwidth, capacity). Apple GPUs have no
# matrix unit, so their fp16 matrix row is the ALU rate: cores x 128 ALUs x 2 (FMA) x clock.
NEW_CHIPS = [
    # 38 x 128 x 2 x 1.398 GHz = 13.6 TFLOP/s; 400 GB/s; ridge 13.6e12 / 400e9 = 34 FLOP/B
    ("apple-m2-max", 13.6e12, 400e9, 96e9),
    # 76 x 128 x 2 x 1.398 GHz = 27.2 TFLOP/s (Apple's figure); ridge 27.2e12 / 800e9 = 34 FLOP/B
    ("apple-m2-ultra", 27.2e12, 800e9, 192e9),
    # 40 x 128 x 2 x 1.380 GHz = 14.13 TFLOP/s; ridge 14.13e12 / 400e9 = 35.3 FLOP/B
    ("apple-m3-max", 14.1312e12, 400e9, 128e9),
    # 80 x 128 x 2 x 1.380 GHz = 28.26 TFLOP/s; ridge 28.26e12 / 819e9 = 34.5 FLOP/B
    ("apple-m3-ultra", 28.2624e12, 819e9, 512e9),
    # 40 x 128 x 2 x 1.578 GHz (unverified) = 16.16 TFLOP/s; ridge 16.16e12 / 546e9 = 29.6 FLOP/B
    ("apple-m4-max", 16.1587e12, 546e9, 128e9),
    # H20: 148 TFLOP/s dense FP16 on 4.0 TB/s; ridge 148e12 / 4.0e12 = 37 FLOP/B
    ("h20", 148e12, 4.0e12, 96e9),
]


@pytest.mark.parametrize(("chip_id", "fp16", "bandwidth", "capacity"), NEW_CHIPS)
def test_new_chips_headline_figures(chip_id, fp16, bandwidth, capacity):
    chip = load_chip_catalog(REAL).resolve(chip_id).chip
    assert chip.matrix_peaks[Dtype.FP16] == pytest.approx(fp16, rel=1e-4)
    assert chip.memory_bandwidth == pytest.approx(bandwidth, rel=1e-9)
    assert chip.memory_bytes == pytest.approx(capacity, rel=1e-9)


@pytest.mark.parametrize(("chip_id", "ridge"), [("apple-m2-ultra", 34.0), ("h20", 37.0)])
def test_new_chips_ridge(chip_id, ridge):
    # ridge = peak / bandwidth: 27.2e12 / 800e9 = 34; 148e12 / 4.0e12 = 37 FLOP/B
    chip = load_chip_catalog(REAL).resolve(chip_id).chip
    assert chip.matrix_peaks[Dtype.FP16] / chip.memory_bandwidth == pytest.approx(ridge)


@pytest.mark.parametrize(
    "alias", ["m2-max", "m2-ultra", "m3-max", "m3-ultra", "m4-max", "h20-96gb"]
)
def test_new_chips_resolve_by_alias(alias):
    assert load_chip_catalog(REAL).resolve(alias).entry.id in {c for c, *_ in NEW_CHIPS}


def test_apple_chips_have_matrix_equal_to_vector_and_no_links():
    catalog = load_chip_catalog(REAL)
    for chip_id in [c for c, *_ in NEW_CHIPS if c.startswith("apple-")]:
        record = catalog.resolve(chip_id)
        # no separate matrix unit: every matrix row is the vector rate of the same dtype
        assert record.chip.matrix_peaks == record.chip.vector_peaks
        assert Dtype.BF16 not in record.chip.matrix_peaks  # no sourced bf16 rate
        assert record.entry.interconnect.scale_up is None
        assert record.entry.interconnect.host is None


def test_h20_figures():
    chip = load_chip_catalog(REAL).resolve("h20").chip
    assert chip.matrix_peaks[Dtype.BF16] == pytest.approx(148e12)
    assert chip.matrix_peaks[Dtype.FP8] == pytest.approx(296e12)  # = int8 296 TOPS
    assert chip.scale_up_bandwidth == pytest.approx(900e9)  # NVLink 4, bidirectional


@pytest.mark.parametrize("chip_id", ["mi250x", "mi250x-gcd"])
def test_mi250x_sustained_matrix_is_its_own_measurement(chip_id):
    record = load_chip_catalog(REAL).resolve(chip_id)
    # 127 TFLOP/s measured on one GCD / 191.5 per GCD = 0.663 (the package is 2 x 191.5 = 383)
    assert record.chip.sustained_matrix == pytest.approx(127 / 191.5, abs=1e-3)
    assert record.entry.sustained.matrix.source == "mleng-mi250x-issue"


def test_every_new_figure_has_a_source_url():
    catalog = load_chip_catalog(REAL)
    sources = catalog.catalog.sources
    for chip_id in [c for c, *_ in NEW_CHIPS]:
        for path, figure in catalog.resolve(chip_id).entry.figures().items():
            assert sources[figure.source].url.startswith("https://"), (chip_id, path)
            if figure.verify == "D":
                assert figure.note, (chip_id, path)  # a derived figure says how


# the units a GEMM's tiles are spread over, per vendor: NVIDIA SMs, AMD CUs, Intel Gaudi MMEs,
# Google TPU TensorCores x MXUs
COMPUTE_UNITS = [
    ("a100-sxm4-40gb", 108),
    ("a100-sxm4-80gb", 108),
    ("a100-pcie-40gb", 108),
    ("a100-pcie-80gb", 108),
    ("h100-sxm5-80gb", 132),
    ("h100-pcie-80gb", 114),
    ("b200", 148),  # 2 dies x 74 enabled SMs
    ("mi250x", 220),  # 2 GCDs x 110
    ("mi250x-gcd", 110),
    ("mi300x", 304),
    ("mi325x", 304),
    ("mi355x", 256),
    ("gaudi2", 2),
    ("gaudi3", 8),
    ("tpu-v4", 8),  # 2 TensorCores x 4 MXUs
    ("tpu-v5e", 4),  # 1 x 4
    ("tpu-v5p", 8),  # 2 x 4
    ("tpu-v6e", 2),  # 1 x 2 (256x256 MXUs)
]

# ml-engineering FP8 MAMF (TFLOP/s) over the catalog's dense fp8 matrix peak (TFLOP/s)
FP8_MAMF = [
    ("h100-sxm5-80gb", 1402.6, 1978.9),
    ("h200-sxm-141gb", 1453.4, 1979.0),
    ("gh200", 1535.0, 1979.0),
    ("b200", 3432.5, 4500.0),
    ("gb200", 3615.6, 5000.0),
    ("gaudi2", 826.5, 865.0),
    ("gaudi3", 1289.5, 1835.0),
]


@pytest.mark.parametrize(("chip_id", "units"), COMPUTE_UNITS)
def test_the_loader_maps_compute_units_into_the_chip(chip_id, units):
    record = load_chip_catalog(REAL).resolve(chip_id)
    assert record.chip.compute_units == units
    assert isinstance(record.chip.compute_units, int)
    assert record.entry.compute_units is not None and record.entry.compute_units.note


@pytest.mark.parametrize(("chip_id", "achieved", "peak"), FP8_MAMF)
def test_the_loader_maps_the_fp8_fraction_into_the_chip(chip_id, achieved, peak):
    record = load_chip_catalog(REAL).resolve(chip_id)
    chip = record.chip
    assert chip.matrix_peaks[Dtype.FP8] == pytest.approx(peak * 1e12)
    assert chip.sustained_matrix_by_dtype[Dtype.FP8] == pytest.approx(achieved / peak, abs=5e-4)
    assert chip.sustained_matrix_of(Dtype.FP8) == chip.sustained_matrix_by_dtype[Dtype.FP8]
    # bf16 keeps the chip's own fraction
    assert chip.sustained_matrix_of(Dtype.BF16) == chip.sustained_matrix
    assert record.entry.sustained.matrix_by_dtype[Dtype.FP8].source == "mleng-mamf"


def test_h100_fp8_worked_example():
    chip = load_chip_catalog(REAL).resolve("h100-sxm5-80gb").chip
    # MAMF FP8 1402.6 TFLOP/s / 1978.9 TFLOP/s dense fp8 peak = 0.70878 -> 0.709, below the
    # bf16 fraction 794.5 / 989.4 = 0.803: an fp8 GEMM's sustained time is peak time / 0.709
    assert chip.sustained_matrix_by_dtype[Dtype.FP8] == 0.709
    assert chip.sustained_matrix == 0.803
    assert chip.compute_units == 132


def test_chips_without_the_new_figures_keep_the_defaults():
    catalog = load_chip_catalog(REAL)
    with_units = {c for c, _ in COMPUTE_UNITS}
    with_fp8 = {c for c, *_ in FP8_MAMF}
    for chip_id, record in catalog.chips.items():
        if chip_id not in with_units:
            assert record.chip.compute_units is None, chip_id
        if chip_id not in with_fp8:
            assert dict(record.chip.sustained_matrix_by_dtype) == {}, chip_id
            assert record.chip.sustained_matrix_of(Dtype.FP8) == record.chip.sustained_matrix


def test_every_compute_unit_and_fp8_figure_has_a_source_url():
    catalog = load_chip_catalog(REAL)
    sources = catalog.catalog.sources
    for chip_id, _ in COMPUTE_UNITS:
        figure = catalog.resolve(chip_id).entry.compute_units
        assert figure is not None
        assert sources[figure.source].url.startswith("https://"), chip_id
    for chip_id, *_ in FP8_MAMF:
        fp8 = catalog.resolve(chip_id).entry.sustained.matrix_by_dtype[Dtype.FP8]
        assert sources[fp8.source].url.startswith("https://"), chip_id
        assert fp8.note and "FP8 MAMF" in fp8.note, chip_id


def test_h100_96gb_is_the_grace_hopper_gpu():
    # the 96 GB HBM3 H100 is GH200's GPU: 96e9 bytes, 4.0 TB/s, 989.5 TFLOP/s bf16 (its datasheet)
    chip = load_chip_catalog(REAL).resolve("h100-96gb").chip
    assert chip.id == "gh200"
    assert (chip.memory_bytes, chip.matrix_peaks[Dtype.BF16]) == (96e9, 989.5e12)


def test_warp_level_mma_shares_are_sourced_on_hopper_and_blackwell_only():
    # Hopper's SM doubled Ampere's tensor rate per clock (wgmma), Blackwell's doubled it again
    # (tcgen05); mma.sync keeps Ampere's: 1/2 and 1/4 of the peak; no loss elsewhere
    catalog = load_chip_catalog(REAL)
    shares = {chip_id: record.chip.warp_mma for chip_id, record in catalog.chips.items()}
    assert {i for i, s in shares.items() if s == 0.5} >= {"h100-sxm5-80gb", "h200-sxm-141gb"}
    assert {i for i, s in shares.items() if s == 0.25} == {"b200", "gb200"}
    assert shares["a100-sxm4-80gb"] == shares["h20"] == shares["mi300x"] == 1.0


# the vendor's maximum board power (W), where a page could be found that states it
BOARD_POWER = [
    ("a100-sxm4-80gb", 400),
    ("a100-pcie-40gb", 250),
    ("h100-sxm5-80gb", 700),
    ("h100-pcie-80gb", 350),
    ("h200-sxm-141gb", 700),
    ("b200", 1000),
    ("mi300x", 750),
    ("mi250x-gcd", 280),  # half of the MI250X module's 560 W
    ("gaudi3", 900),
    ("l4", 72),
    ("gaudi2", 600),  # the HL-225H OAM module
    ("h20", 400),
    ("tpu-v4", 192),  # Google's measured per-chip maximum (mean 170 W)
    ("a10g", 300),  # the power cap nvidia-smi reports on AWS G5: no published TDP
]


@pytest.mark.parametrize(("chip_id", "watts"), BOARD_POWER)
def test_board_power_headline_figures(chip_id, watts):
    figure = load_chip_catalog(REAL).resolve(chip_id).entry.board_power_w
    assert figure is not None and figure.value == watts


def test_every_board_power_is_sourced_and_the_unsourced_are_null():
    catalog = load_chip_catalog(REAL)
    sources = catalog.catalog.sources
    unsourced = set()
    for chip_id, record in catalog.chips.items():
        figure = record.entry.board_power_w
        if figure is None:
            unsourced.add(chip_id)
            continue
        assert sources[figure.source].url.startswith("http"), chip_id
        assert figure.note, chip_id  # says which SKU or configuration the watts are
    # no board power figure from a vendor or a page quoting one: left null, energy unknown
    # (Google publishes no watts for TPU v5e/v5p; Apple only whole-system wall power)
    assert {"tpu-v5e", "tpu-v5p", "apple-m4-max"} <= unsourced


# the vendor's announcement or launch month, where a page could be found that dates it
RELEASED = [
    ("v100-sxm2-16gb", "2017-05"),  # GTC 2017
    ("a100-sxm4-40gb", "2020-05"),
    ("h100-sxm5-80gb", "2022-03"),  # GTC 2022
    ("h200-sxm-141gb", "2023-11"),
    ("b200", "2024-03"),  # GTC 2024
    ("mi300x", "2023-12"),
    ("tpu-v4", "2021-05"),  # Google I/O 2021
    ("gaudi3", "2024-04"),
]


@pytest.mark.parametrize(("chip_id", "month"), RELEASED)
def test_release_months(chip_id, month):
    released = load_chip_catalog(REAL).resolve(chip_id).entry.released
    assert released is not None and released.value == month


def test_every_release_month_is_sourced():
    catalog = load_chip_catalog(REAL)
    dated = 0
    for chip_id, record in catalog.chips.items():
        released = record.entry.released
        if released is None:
            continue
        dated += 1
        assert catalog.catalog.sources[released.source].url.startswith("http"), chip_id
        assert released.note, chip_id  # says whether announcement or launch
    assert dated >= len(catalog.chips) - 1  # A10G: AWS never dated it on a page we found


@pytest.mark.parametrize("month", ["2024-13", "2024-00", "24-03", "2024-3", "March 2024"])
def test_a_malformed_release_month_is_rejected(month):
    entry = json.loads(REAL.read_text())
    entry["chips"][0]["released"]["value"] = month
    with pytest.raises(ValidationError, match="released"):
        ChipCatalog.model_validate(entry)


def test_a_release_month_with_an_unknown_source_is_rejected():
    entry = json.loads(REAL.read_text())
    entry["chips"][0]["released"]["source"] = "nowhere"
    with pytest.raises(ValidationError, match=r"released\.source .nowhere. is not in sources"):
        ChipCatalog.model_validate(entry)
