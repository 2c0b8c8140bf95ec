"""The chip catalog: the real file validates, and a bad file stops start-up with a clear message."""

import copy
import json
from pathlib import Path

import pytest

from app.catalog.loader import CatalogError, content_hash, load_chip_catalog
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


@pytest.mark.parametrize("chip_id", ["mi250x", "mi250x-gcd"])
def test_mi250x_sustained_matrix_is_its_own_measurement(chip_id):
    record = load_chip_catalog(REAL).resolve(chip_id)
    # 127 TFLOP/s measured on one GCD / 191.5 per GCD = 0.663 (the package is 2 x 191.5 = 383)
    assert record.chip.sustained_matrix == pytest.approx(127 / 191.5, abs=1e-3)
    assert record.entry.sustained.matrix.source == "mleng-mi250x-issue"
