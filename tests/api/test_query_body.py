"""A GET's query string, read as parse_qsl reads it (`query_pairs`), and validated straight
into its POST body (`TransformerQuery.body_of`): the body the query model's `to_body` gives,
or the query left to it (None), never another body, and never a body for a query the query
model refuses."""

from typing import Any
from urllib.parse import parse_qsl

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from app.api.wire import query_pairs
from app.schemas.queries import CheckQuery, OptimalBatchQuery, ScalingQuery, TransformerQuery
from app.schemas.requests import ScalingRequest, TransformerWorkload

QUERIES = [TransformerQuery, CheckQuery, OptimalBatchQuery, ScalingQuery]


def mostly(valid: list[Any], odd: list[Any]) -> st.SearchStrategy[Any]:
    """A valid value nine times in ten, else an odd one."""
    return st.integers(0, 9).flatmap(lambda n: st.sampled_from(odd if n == 0 else valid))


counts = ["1", "8", "64", "1024", " 8", "+8"]
text = mostly(counts, ["0", "-1", "", "x", "1.5", "1e309", "nan", "9" * 40, "\u0663"])
times = mostly(["5", "0.5", "1e-3", "1e9"], ["0", "-1", "nan", "inf", "", "x"])
flags = mostly(["true", "false", "1", "off", "yes"], ["x", ""])
params = st.fixed_dictionaries(
    {
        "chip": mostly(["a100", "h100", "mi300x", "A100 "], ["nope", ""]),
        "model": mostly(["llama-8b", "mixtral-8x7b", "gpt2"], ["", "x" * 300]),
    },
    optional={
        "phase": mostly(["decode", "prefill", "generate", "training"], ["serve"]),
        "batch": text,
        "seq_len": text,
        "gen_len": text,
        "tp": text,
        "dtype": mostly(["bf16", "fp8", "int4"], ["bad"]),
        "kv_dtype": mostly(["bf16", "fp8"], ["bad"]),
        "reserve_fraction": mostly(["0", "-0.0", "0.5", "1e-320"], ["1", "nan", "-0.1"]),
        "stack": mostly(["typical", "eager", "vllm"], ["x"]),
        "ceilings": mostly(["datasheet", "empirical"], ["x"]),
        "catalog_version": mostly(["2026.11.27", "x"], ["", "x" * 300]),
        "breakdown": flags,
        "what_if": flags,
        "lora_targets": st.lists(mostly(["q", "v", "down"], ["x"]), max_size=3),
        "lora_rank": text,
        "zero": mostly(["0", "1", "3"], ["4", "-1"]),
        "optimizer": mostly(["adamw", "sgd_momentum"], ["x"]),
        "mfu": mostly(["0.4", "1"], ["0", "nan"]),
        "measured_ms": times,
        "max_tpot_ms": times,
        "max_ttft_ms": times,
        "chip_counts": mostly(
            ["8,16,64", " 8 , 16 ", "8,\t16", "8,16\n", "\uff18,16", "1,2,3", "64,8"],
            ["0", "", "1" * 8, "x", ",".join(["8"] * 65)],
        ),
        "mode": mostly(["strong", "weak"], ["x"]),
        "serial_fraction": mostly(["0", "0.05", "1"], ["2", "nan"]),
    },
)
# names no query takes, or only its body, in one query of three
odd = st.sampled_from(
    [{}, {}, {}, {}, {}, {}, {"kind": "transformer"}, {"config": "{}"}, {"workload": "x"}]
)


def asked(query: type[TransformerQuery]) -> st.SearchStrategy[dict[str, Any]]:
    """Parameters of `query` (mostly of its own fields), some with a name it does not take."""
    own = params.map(lambda given: {k: v for k, v in given.items() if k in query.model_fields})
    return st.builds(lambda a, b: {**a, **b}, own, odd)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(QUERIES).flatmap(lambda q: st.tuples(st.just(q), asked(q))))
def test_the_direct_body_is_the_query_models_body_or_none(
    case: tuple[type[TransformerQuery], dict[str, Any]],
) -> None:
    query, given_ = case
    direct = query.body_of(given_)
    event("straight into the body" if direct else "left to the query")
    try:
        expected = query.model_validate(given_).to_body()
    except ValidationError:
        assert direct is None
        return
    if direct is not None:
        assert type(direct) is type(expected)
        assert direct.model_dump() == expected.model_dump()
        assert direct.model_dump_json() == expected.model_dump_json()


@pytest.mark.parametrize("query", QUERIES)
def test_a_plain_query_goes_straight_into_the_body(query: type[TransformerQuery]) -> None:
    given_ = {"chip": "a100", "model": "llama-8b", "batch": "8", "measured_ms": "5"}
    if query is not CheckQuery:
        del given_["measured_ms"]
    body = query.body_of(given_)
    assert body is not None
    assert body == query.model_validate(given_).to_body()


def test_scaling_keeps_its_own_defaults_and_reads_its_counts() -> None:
    body = ScalingQuery.body_of({"chip": "h100", "model": "llama-8b", "chip_counts": " 8 , 16"})
    assert isinstance(body, ScalingRequest) and isinstance(body.workload, TransformerWorkload)
    assert body.workload.phase == "training"  # the query's default, not the body's (decode)
    assert body.chip_counts == [8, 16]
    default = ScalingQuery.body_of({"chip": "h100", "model": "llama-8b"})
    assert isinstance(default, ScalingRequest) and default.chip_counts == [8, 16, 32, 64, 128]


@pytest.mark.parametrize("counts", ["8,\t16", "\uff18,16", "8,16\n"])
def test_counts_the_ascii_reading_is_unsure_of_are_left_to_the_query(counts: str) -> None:
    """Tabs, full-width digits, a newline: the query's pattern decides them."""
    given_ = {"chip": "h100", "model": "llama-8b", "chip_counts": counts}
    assert ScalingQuery.body_of(given_) is None
    assert ScalingQuery.model_validate(given_).to_body().chip_counts == [8, 16]


@pytest.mark.parametrize("name", ["kind", "config", "workload", "foo"])
def test_a_name_the_query_does_not_take_is_left_to_it(name: str) -> None:
    given_ = {"chip": "a100", "model": "llama-8b", name: "transformer"}
    assert TransformerQuery.body_of(given_) is None
    with pytest.raises(ValidationError):
        TransformerQuery.model_validate(given_)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab=&;%+2F \x00é", max_size=20))
def test_query_pairs_are_parse_qsls(query: str) -> None:
    """Blanks kept, split at & and the first =, unquoted where a % or a + asks for it."""
    assert query_pairs(query) == parse_qsl(query, keep_blank_values=True)


def test_query_pairs_by_hand() -> None:
    assert query_pairs("a=1&b&&c=&=d&e=f=g") == [
        ("a", "1"),
        ("b", ""),
        ("c", ""),
        ("", "d"),
        ("e", "f=g"),
    ]
    assert query_pairs("a=x%2By+z") == [("a", "x+y z")]
