"""Readable answers: the workload echoed with the fields that applied to it, `formatted`
display strings, and prose without exponents or binary float noise, on every calculation."""

import re
from itertools import product
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine import Phase
from app.schemas.answers import ExpectedTime
from app.schemas.echo import APPLIES
from app.schemas.requests import TrainingFields, TransformerWorkload

PROSE = ("explanation", "warnings", "assumptions", "advice")
EXPONENT = re.compile(r"\d[eE][+-]?\d")
DECIMAL = re.compile(r"\d[\d,]*\.\d+")
SCALING: dict[str, Any] = {"chip": "h100", "model": "llama-8b", "batch": 16, "chip_counts": "8,16"}


def noisy(text: str) -> list[str]:
    """The numbers in `text` written with an exponent or with more than 6 significant digits
    (0.012500000000000002, 1.37e+03)."""
    found = EXPONENT.findall(text)
    for number in DECIMAL.findall(text):
        digits = number.replace(",", "").replace(".", "").lstrip("0")
        if len(digits) > 6:
            found.append(number)
    return found


def prose_of(answer: dict[str, Any]) -> list[str]:
    return [line for key in PROSE for line in answer.get(key) or []]


def assert_readable(answer: dict[str, Any]) -> None:
    bad = {line: noisy(line) for line in prose_of(answer) if noisy(line)}
    assert not bad, bad
    for text in (answer.get("formatted") or {}).values():
        assert not noisy(text), text


def test_the_noise_finder_finds_noise() -> None:
    assert noisy("MFU 0.012500000000000002") and noisy("1.37e+03 FLOP/B")
    assert not noisy("1,370 FLOP/B at 0.0125 and 2.5x, 12,300 tok/s")


def test_a_decode_answer_echoes_no_training_field(client: TestClient) -> None:
    query: dict[str, Any] = {
        "chip": "h100",
        "model": "llama-8b",
        "phase": "decode",
        "zero": 3,
        "gen_len": 9,
    }
    answer = client.get("/expected-time", params=query).json()
    echoed = set(answer["workload"])
    assert echoed == APPLIES[Phase.DECODE]
    assert not echoed & set(TrainingFields.model_fields) - {"chips_per_node"}
    assert "gen_len" not in echoed and "flash_attention" in echoed  # every phase's kernel
    # the ignored fields the request set are named
    assert "Ignored, as they only apply to phase=training: zero." in answer["warnings"]
    assert "Ignored, as they only apply to phase=generate: gen_len." in answer["warnings"]


def test_each_phase_echoes_its_own_fields(client: TestClient) -> None:
    for phase, path in product(("prefill", "generate", "training"), ("/check", "/memory-fit")):
        query = {"chip": "h100", "model": "llama-8b", "phase": phase}
        measured = {"measured_ms": 50} if path == "/check" else {}
        answer = client.get(path, params={**query, **measured}).json()
        assert set(answer["workload"]) == APPLIES[Phase(phase)], (phase, path)
        assert not [w for w in answer["warnings"] if w.startswith("Ignored")]
    training = client.get("/scaling", params=SCALING).json()
    assert "zero" in training["workload"] and "gen_len" not in training["workload"]


def test_chips_per_node_applies_to_inference_beyond_a_node(client: TestClient) -> None:
    # tp=16 over nodes of 8 pays the scale-out collectives' latency; over 16 it does not
    query: dict[str, Any] = {"chip": "h100", "model": "llama-70b", "phase": "decode", "tp": 16}
    across = client.get("/expected-time", params={**query, "chips_per_node": 8}).json()
    within = client.get("/expected-time", params={**query, "chips_per_node": 16}).json()
    assert across["realistic_time_s"] > within["realistic_time_s"]
    assert within["workload"]["chips_per_node"] == 16 and not within["warnings"]


def test_a_kernel_echoes_its_own_fields(client: TestClient) -> None:
    body = {"chip": "a100", "workload": {"kind": "matmul", "m": 7, "n": 8, "k": 9}}
    answer = client.post("/expected-time", json=body).json()
    assert answer["workload"] == {
        "kind": "matmul",
        "m": 7,
        "n": 8,
        "k": 9,
        "dtype": "fp32",
        "allow_tf32": False,
        "sparsity": None,  # dense
    }


def test_formatted_shows_what_the_answer_has(client: TestClient) -> None:
    # llama-8b decode on H100: 15,144,198,144 B at 3.35 TB/s = 4.5206 ms (test_calculations.py)
    query: dict[str, Any] = {
        "chip": "h100",
        "model": "llama-8b",
        "phase": "decode",
        "seq_len": 1024,
    }
    answer = client.get("/check", params={**query, "measured_ms": 9}).json()
    shown = answer["formatted"]
    assert shown["expected_time"] == "4.52 ms"
    assert shown["measured_time"] == "9 ms"
    assert shown["ratio"] == "2.0x"  # 9 / 4.5206 = 1.99
    assert shown["tokens_per_s"] == "221 tok/s"  # 1 / 4.5206 ms
    assert shown["memory_required"].endswith(" GB")
    assert "time_to_first_token" not in shown  # decode has none
    assert "communication_time" not in shown  # one chip: nothing communicated
    fit = client.get("/memory-fit", params=query).json()["formatted"]
    assert set(fit) == {"required", "available"}
    assert "formatted" not in client.get("/scaling", params=SCALING).json()


def test_a_stored_answer_without_the_filter_still_reads_back(client: TestClient) -> None:
    query = {"chip": "h100", "model": "llama-8b", "phase": "decode"}
    answer = client.get("/expected-time", params=query).json()
    old = {**answer, "workload": {**answer["workload"], "zero": 0, "optimizer": "adamw"}}
    del old["formatted"]
    workload = ExpectedTime.model_validate(old).workload
    assert isinstance(workload, TransformerWorkload) and workload.phase == "decode"


MODELS = ("llama-8b", "mixtral-8x7b", "bert-base")
PHASES = ("decode", "prefill", "generate", "training")


def test_no_prose_is_noisy_on_any_chip_model_or_phase(client: TestClient) -> None:
    chips = [chip["id"] for chip in client.get("/chips").json()["chips"]]
    for chip, model, phase in product(chips, MODELS, PHASES):
        query = {"chip": chip, "model": model, "phase": phase, "mfu": 0.0125, "zero": 1}
        for path, measured in (("/check", {"measured_ms": 0.0123456789}), ("/memory-fit", {})):
            got = client.get(path, params={**query, **measured})
            if got.status_code == 200:
                assert_readable(got.json())
            else:
                assert got.status_code in (404, 422), got.text


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    m=st.sampled_from([1, 7, 10**6, 10**9]),
    n=st.sampled_from([1, 3, 4096, 10**6]),
    measured=st.sampled_from([1e-9, 3.3e-7, 0.0125, 1.0, 1e7]),
    kind=st.sampled_from(["matmul", "saxpy", "custom"]),
)
def test_no_kernel_prose_is_noisy_at_extreme_sizes(
    client: TestClient, m: int, n: int, measured: float, kind: str
) -> None:
    workload = {
        "matmul": {"kind": "matmul", "m": m, "n": n, "k": n},
        "saxpy": {"kind": "saxpy", "n": m * n},
        "custom": {"kind": "custom", "flops": float(m) * n * 1e9, "bytes": float(n)},
    }[kind]
    body = {"chip": "h100", "workload": workload, "measured_time_s": measured}
    got = client.post("/check", json=body)
    assert got.status_code == 200, got.text
    assert_readable(got.json())


@pytest.mark.parametrize(
    "query",
    [
        {"phase": "training", "mfu": 0.0125, "train_tokens": 1e13},
        {"phase": "training", "micro_batch": 1, "network_bandwidth": 1.23456789e9},
    ],
)
def test_no_scaling_or_batch_prose_is_noisy(client: TestClient, query: dict[str, Any]) -> None:
    scaling = {**SCALING, **query, "serial_fraction": 0.000012345}
    expected = {k: v for k, v in scaling.items() if k not in ("chip_counts", "serial_fraction")}
    for path, params in (("/scaling", scaling), ("/expected-time", expected)):
        got = client.get(path, params=params)
        assert got.status_code == 200, got.text
        assert_readable(got.json())


def test_the_pages_show_no_noisy_numbers(client: TestClient) -> None:
    query = {"chip": "h100", "model": "llama-8b", "phase": "decode", "measured_ms": "0.0125"}
    page = client.get("/", params=query)
    assert page.status_code == 200
    # the page's text, less its style sheet and the form's input hints ("e.g. 2.5e12")
    text = re.sub(r"<style>.*?</style>|<[^>]*>|e\.g\. \S+", " ", page.text, flags=re.S)
    assert "Compute:" in text and not noisy(text), noisy(text)
    chart = client.get("/roofline.svg", params=query).text
    assert "FLOP/B" in chart and not re.findall(r"ridge [^<]*e[+-]", chart)
