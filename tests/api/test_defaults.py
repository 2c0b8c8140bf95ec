"""Each default is declared once: the engine's dataclasses hold the workload defaults, the API
models read them, and the web form reads the API models. Pinned here, value by value."""

from dataclasses import fields

import pytest
from pydantic import BaseModel

from app.engine import Dtype, Phase, TransformerSpec
from app.engine.compare import DEFAULT_THRESHOLD
from app.engine.training import DataParallelAlgorithm, Lora, Optimizer, Parallelism, Training
from app.schemas.measurement_bodies import MeasurementIn
from app.schemas.queries import ScalingQuery
from app.schemas.requests import (
    CalculationRequest,
    CustomWorkload,
    ElementwiseWorkload,
    ScalingRequest,
    TransformerFields,
)
from app.web.forms import DEFAULTS

SPEC = TransformerSpec()


def test_the_engine_defaults_are_the_documented_ones():
    # docs/api.md lists these; vLLM's gpu_memory_utilization=0.9 leaves 0.1 in reserve
    assert (SPEC.phase, SPEC.batch, SPEC.seq_len, SPEC.gen_len) == (Phase.DECODE, 1, 2048, 256)
    assert SPEC.precision.compute is SPEC.precision.weights is SPEC.precision.kv is Dtype.BF16
    assert (SPEC.tp, SPEC.reserve_fraction, SPEC.flash_attention, SPEC.recompute) == (
        1,
        0.1,
        True,
        False,
    )
    parallel = Parallelism()
    assert (parallel.dp, parallel.pp, parallel.ep, parallel.cp, parallel.zero) == (1, 1, 1, 1, 0)
    assert parallel.chips_per_node == 8
    assert parallel.network_bandwidth == 400e9 / 8  # one 400 Gb/s NIC per chip, in bytes/s
    assert parallel.dp_algorithm is DataParallelAlgorithm.RING
    assert Training().optimizer is Optimizer.ADAMW
    assert DEFAULT_THRESHOLD == 0.1


def _api_default(name: str) -> object:
    return TransformerFields.model_fields[name].get_default(call_default_factory=True)


@pytest.mark.parametrize(
    ("field", "engine"),
    [
        ("phase", SPEC.phase),
        ("batch", SPEC.batch),
        ("seq_len", SPEC.seq_len),
        ("gen_len", SPEC.gen_len),
        ("tp", SPEC.tp),
        ("reserve_fraction", SPEC.reserve_fraction),
        ("flash_attention", SPEC.flash_attention),
        ("recompute", SPEC.recompute),
        ("optimizer", SPEC.training.optimizer),
        ("mfu", SPEC.training.mfu),
        ("train_tokens", SPEC.training.tokens),
        ("qlora", Lora().quantized_base),
        ("lora_targets", list(Lora().targets)),
        *[
            (f.name, getattr(Parallelism(), f.name))
            for f in fields(Parallelism)
            if f.name in TransformerFields.model_fields
        ],
    ],
)
def test_the_api_reads_the_engine_defaults(field, engine):
    assert _api_default(field) == engine


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("batch", "1"),
        ("seq_len", "2048"),
        ("gen_len", "256"),
        ("dtype", ""),  # blank: each kind's API default (bf16 for models, fp32 for kernels)
        ("stack", "typical"),
        ("ceilings", "datasheet"),
        ("unit", "vector"),
        ("tp", "1"),
        ("phase", "decode"),
        ("optimizer", "adamw"),
        ("zero", "0"),
        ("cp", "1"),
        ("qlora", "false"),
        ("mfu", ""),
        ("chip_counts", "8,16,32,64,128"),
        ("serial_fraction", "0"),
        ("ops", "1"),
        ("inputs", "1"),
        ("fused", "true"),
    ],
)
def test_the_form_shows_the_api_defaults(form, expected):
    assert DEFAULTS[form] == expected


def test_the_form_and_the_api_agree_on_every_shared_field():
    shared: dict[str, type[BaseModel]] = {
        **{
            n: TransformerFields
            for n in TransformerFields.model_fields
            if n in DEFAULTS and n != "dtype"
        },
        "stack": CalculationRequest,
        "ceilings": CalculationRequest,
        "unit": CustomWorkload,
        "chip_counts": ScalingQuery,
        "serial_fraction": ScalingRequest,
        **dict.fromkeys(("ops", "inputs", "fused"), ElementwiseWorkload),
    }
    for name, model in shared.items():
        value = model.model_fields[name].get_default(call_default_factory=True)
        shown = "" if value is None else str(value).lower() if isinstance(value, bool) else value
        shown = f"{shown:g}" if isinstance(shown, float) else str(shown)
        assert DEFAULTS[name] == shown, name


def test_the_regression_threshold_is_declared_once():
    assert MeasurementIn.model_fields["regression_threshold"].default == DEFAULT_THRESHOLD
