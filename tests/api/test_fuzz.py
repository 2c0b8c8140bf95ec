"""Odd input never yields a 500, invalid JSON, NaN or infinity (hypothesis over the API)."""

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Each test draws from pools of odd values (limits, non-numbers, unknown names), so that a
# hundred examples meet every pool's values in many combinations. The client fixture is shared
# by every example on purpose: the app holds no per-request state.
FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
numbers = st.one_of(
    st.integers(-(10**12), 10**12),
    st.sampled_from(["0", "-1", "1e309", "nan", "inf", "1.5", "", "x", "9" * 40]),
)
names = st.sampled_from(["a100", "h100", "tpu-v5e", "mi300x", "t4", "nope", "", "A100 "])
models = st.sampled_from(["llama-8b", "mixtral-8x7b", "deepseek-v3", "bert-base", "gpt2", "x"])
dtypes = st.sampled_from(["bf16", "fp16", "fp32", "fp8", "int8", "int4", "fp4", "fp64", "bad"])
phases = st.sampled_from(["decode", "prefill", "generate", "training", "serve"])

query = st.fixed_dictionaries(
    {"chip": names, "model": models},
    optional={
        "phase": phases,
        "batch": numbers,
        "seq_len": numbers,
        "gen_len": numbers,
        "dtype": dtypes,
        "weight_dtype": dtypes,
        "kv_dtype": dtypes,
        "tp": numbers,
        "reserve_fraction": st.sampled_from(["0", "0.5", "0.99", "1", "-0.1", "nan"]),
        "measured_ms": numbers,
        "measured_time_s": numbers,
    },
)


def assert_clean(response):
    assert response.status_code in (200, 404, 422), response.text
    body = json.loads(
        response.text,
        parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(f"non-finite {c} in JSON")),
    )

    def walk(node):
        if isinstance(node, float):
            assert math.isfinite(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(body)


@FUZZ
@given(
    path=st.sampled_from(["/expected-time", "/memory-fit", "/optimal-batch", "/check"]),
    params=query,
)
def test_odd_queries_never_break_the_service(client, path, params):
    assert_clean(client.get(path, params=params))


@FUZZ
@given(
    path=st.sampled_from(["/max-context", "/memory-fit"]),
    params=query,
    extra=st.fixed_dictionaries(
        {}, optional={"max_tpot_ms": numbers, "options": st.sampled_from(["true", "x"])}
    ),
)
def test_odd_limits_never_break_the_service(client, path, params, extra):
    assert_clean(client.get(path, params={**params, **extra}))


kernel = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.just("matmul"), "m": numbers, "n": numbers, "k": numbers, "dtype": dtypes}
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("elementwise"),
            "n": numbers,
            "ops": st.one_of(numbers, st.lists(st.sampled_from(["cos", "fma", "bad"]))),
            "fused": st.booleans(),
            "dtype": dtypes,
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("attention"),
            "heads": numbers,
            "q_len": numbers,
            "head_dim": numbers,
            "kv_heads": numbers,
            "causal": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("custom"),
            "flops": numbers,
            "bytes": numbers,
            "unit": st.sampled_from(["matrix", "vector", "x"]),
            "dtype": dtypes,
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("transformer"),
            "config": st.fixed_dictionaries(
                {
                    "hidden_size": numbers,
                    "num_hidden_layers": numbers,
                    "num_attention_heads": numbers,
                    "num_key_value_heads": numbers,
                    "intermediate_size": numbers,
                    "vocab_size": numbers,
                    "num_local_experts": st.sampled_from([0, 8, -1]),
                    "num_experts_per_tok": numbers,
                }
            ),
            "batch": numbers,
            "seq_len": numbers,
        }
    ),
)


@FUZZ
@given(
    path=st.sampled_from(["/expected-time", "/check", "/memory-fit", "/optimal-batch"]),
    workload=kernel,
    chip=names,
    measured=numbers,
)
def test_odd_bodies_never_break_the_service(client, path, workload, chip, measured):
    body = {"chip": chip, "workload": workload, "measured_ms": measured}
    assert_clean(client.post(path, json=body))


degrees = st.sampled_from(["1", "2", "3", "4", "8", "64", "1024", "1048576", "0", "-1", "x"])
training_query = st.fixed_dictionaries(
    {"chip": names, "model": models, "phase": st.just("training")},
    optional={
        "batch": st.one_of(numbers, degrees),
        "seq_len": st.one_of(numbers, degrees),
        "dtype": dtypes,
        "tp": degrees,
        "dp": degrees,
        "pp": degrees,
        "ep": degrees,
        "micro_batch": degrees,
        "zero": st.sampled_from(["0", "1", "2", "3", "4", "-1"]),
        "optimizer": st.sampled_from(["adamw", "adam_8bit", "adafactor", "sgd_momentum", "x"]),
        "lora_rank": degrees,
        "qlora": st.sampled_from(["true", "false", "x"]),
        "recompute": st.sampled_from(["true", "false"]),
        "mfu": st.sampled_from(["0", "0.4", "1", "1.5", "nan", "1e-300"]),
        "train_tokens": st.sampled_from(["1e12", "1", "0", "1e30", "inf"]),
        "chips_per_node": degrees,
        "network_bandwidth": st.sampled_from(["1", "5e10", "0", "1e300", "nan"]),
        "overlap": st.booleans(),
        "dp_algorithm": st.sampled_from(["ring", "parameter_server", "x"]),
        "chip_counts": st.sampled_from(["8,16,64", "1,2,3", "0", "64,8", "1048576", "x", ""]),
        "mode": st.sampled_from(["strong", "weak", "x"]),
        "serial_fraction": st.sampled_from(["0", "0.05", "1", "2", "nan"]),
        "measured_ms": numbers,
    },
)


@FUZZ
@given(
    path=st.sampled_from(["/expected-time", "/memory-fit", "/optimal-batch", "/check", "/scaling"]),
    params=training_query,
)
def test_odd_training_queries_never_break_the_service(client, path, params):
    assert_clean(client.get(path, params=params))
