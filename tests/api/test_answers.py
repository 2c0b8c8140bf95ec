"""The calculation endpoints: GET queries read by FastAPI from the query models and
documented in reading order, answers rendered once and served from the cache
(app/api/stored_answers.py)."""

import asyncio
import dataclasses
import json
import math
from typing import Annotated, Any

import pytest
from fastapi import FastAPI, Query
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.types import Message, Receive, Scope, Send

from app.api.stored_answers import ServeStoredAnswers, key_of
from app.engine import Bound
from app.main import create_app
from app.schemas.planning_answers import SweepRow
from app.schemas.queries import (
    CheckQuery,
    MaxContextQuery,
    MemoryFitQuery,
    OptimalBatchQuery,
    ScalingQuery,
    TransformerQuery,
)
from app.services.answer_cache import AnswerCache
from app.services.catalogs import Catalogs
from app.settings import Settings

MATMUL_CHECK = {
    "chip": "a100",
    "measured_ms": 0.6,
    "workload": {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
}


@pytest.fixture()
def fresh(tmp_path: Any) -> TestClient:
    """An app of its own, so that its answer cache starts empty."""
    return TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path}/answers.db")))


def _cache(client: TestClient) -> AnswerCache:
    catalogs: Catalogs = client.app.state.catalogs  # type: ignore[attr-defined]
    return catalogs.answers


# --- the OpenAPI schema is the one FastAPI writes for a query model ---------------------------


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/expected-time", TransformerQuery),
        ("/memory-fit", MemoryFitQuery),
        ("/max-context", MaxContextQuery),
        ("/optimal-batch", OptimalBatchQuery),
        ("/check", CheckQuery),
        ("/scaling", ScalingQuery),
    ],
)
def test_query_parameters_match_what_fastapi_documents(
    client: TestClient, path: str, model: type[BaseModel]
) -> None:
    reference = FastAPI()

    @reference.get("/q")
    async def endpoint(query: Annotated[model, Query()]) -> None:  # type: ignore[valid-type]
        """FastAPI's own handling of the query model, for its OpenAPI parameters."""

    expected = reference.openapi()["paths"]["/q"]["get"]["parameters"]
    documented = client.get("/openapi.json").json()["paths"][path]["get"]["parameters"]
    # the same parameters, listed in reading order (tests/api/test_openapi_docs.py)
    assert {p["name"]: p for p in documented} == {p["name"]: p for p in expected}
    assert [p["name"] for p in documented] == list(model.model_json_schema()["properties"])


def test_every_schema_reference_resolves(client: TestClient) -> None:
    """The GET parameters point at enum components that the POST bodies put there."""
    schema = client.get("/openapi.json").json()
    text = json.dumps(schema)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}
    assert refs, "no references at all"
    assert refs <= set(schema["components"]["schemas"])
    parameters = schema["paths"]["/optimal-batch"]["get"]["parameters"]
    assert {"chip", "model", "batch", "optimizer", "dp_algorithm"} <= {
        p["name"] for p in parameters
    }


# --- the query string as FastAPI reads a query model -----------------------------------------


def test_query_errors_name_the_query_field(client: TestClient) -> None:
    response = client.get("/optimal-batch", params={"chip": "a100", "model": "llama-8b", "tp": 0})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", "tp"]
    assert error["ctx"] == {"ge": 1}

    missing = client.get("/expected-time", params={"model": "llama-8b"}).json()["detail"]
    assert [(e["loc"], e["type"]) for e in missing] == [(["query", "chip"], "missing")]

    extra = client.get("/check?chip=a100&model=llama-8b&measured_ms=5&bacth=8").json()["detail"]
    assert [(e["loc"], e["type"]) for e in extra] == [(["query", "bacth"], "extra_forbidden")]


def test_a_repeated_parameter_counts_once_with_its_last_value(client: TestClient) -> None:
    """As FastAPI reads a scalar query parameter (Starlette's QueryParams.get)."""
    answer = client.get("/expected-time?chip=a100&model=llama-8b&batch=2&batch=8").json()
    assert answer["workload"]["batch"] == 8


def test_a_list_field_takes_every_value_of_its_repeated_parameter(client: TestClient) -> None:
    """As FastAPI reads a query model's list field: LoRA on q and v only, by GET or POST."""
    query = "chip=h100&model=llama-8b&phase=training&batch=8&lora_rank=8"
    got = client.get(f"/expected-time?{query}&lora_targets=q&lora_targets=v")
    assert got.status_code == 200, got.text
    body = {"phase": "training", "batch": 8, "lora_rank": 8, "lora_targets": ["q", "v"]}
    posted = client.post(
        "/expected-time",
        json={"chip": "h100", "workload": {"kind": "transformer", "model": "llama-8b", **body}},
    )
    assert got.json()["workload"]["lora_targets"] == ["q", "v"]
    assert got.json()["training"] == posted.json()["training"]
    one = client.get(f"/expected-time?{query}&lora_targets=q").json()
    assert one["training"]["trained_params"] < got.json()["training"]["trained_params"]


# --- answers rendered once -------------------------------------------------------------------


def test_a_repeated_get_is_served_from_the_cache(fresh: TestClient) -> None:
    # stored when asked a second time (second sight), served from the third
    path = "/optimal-batch?chip=a100&model=llama-8b"
    first = fresh.get(path)
    cache = _cache(fresh)
    assert (first.status_code, cache.hits, len(cache)) == (200, 0, 0)
    assert (fresh.get(path).content, cache.hits, len(cache)) == (first.content, 0, 1)
    second = fresh.get(path, headers={"accept-encoding": "identity"})  # not gzipped
    assert (second.status_code, cache.hits) == (200, 1)
    assert second.content == first.content
    assert second.headers["content-type"] == "application/json"
    assert int(second.headers["content-length"]) == len(first.content)
    # the security headers (and gzip, tests/api/test_compression.py) are added outside the cache
    assert second.headers["content-security-policy"] == first.headers["content-security-policy"]
    assert second.headers["x-content-type-options"] == "nosniff"
    for _ in range(2):
        fresh.get("/optimal-batch?chip=a100&model=llama-8b&batch=2")  # another question, twice
    assert (cache.hits, len(cache)) == (1, 2)


def test_a_repeated_post_is_served_from_the_cache(fresh: TestClient) -> None:
    first, _, third = (fresh.post("/check", json=MATMUL_CHECK) for _ in range(3))
    assert first.status_code == third.status_code == 200
    assert third.content == first.content
    assert _cache(fresh).hits == 1
    # the same bytes sent as text are not JSON: a 415, never the stored answer
    body = json.dumps(MATMUL_CHECK).encode()
    as_text = fresh.post("/check", content=body, headers={"content-type": "text/plain"})
    assert as_text.status_code == 415
    assert _cache(fresh).hits == 1


def test_errors_are_never_stored(fresh: TestClient) -> None:
    for _ in range(2):
        assert fresh.get("/optimal-batch?chip=a1000&model=llama-8b").status_code == 404
        assert fresh.get("/optimal-batch?chip=a100&model=llama-8b&tp=0").status_code == 422
        assert fresh.post("/check", json={**MATMUL_CHECK, "measured_ms": -1}).status_code == 422
    assert (len(_cache(fresh)), _cache(fresh).hits) == (0, 0)


def test_a_catalog_reload_starts_an_empty_cache(fresh: TestClient) -> None:
    path = "/expected-time?chip=h100&model=llama-70b&tp=4"
    fresh.get(path)
    old: Catalogs = fresh.app.state.catalogs  # type: ignore[attr-defined]
    reloaded = Catalogs(old.chip_versions, old.current, old.models)
    fresh.app.state.catalogs = reloaded  # type: ignore[attr-defined]
    assert fresh.get(path).status_code == 200
    assert (reloaded.answers.hits, len(reloaded.answers), old.answers.hits) == (0, 0, 0)
    fresh.get(path)  # stored at its second time in the new catalogs' cache, not the old's
    assert (reloaded.answers.hits, len(reloaded.answers), len(old.answers)) == (0, 1, 0)


_VALID = st.fixed_dictionaries(
    {"chip": st.sampled_from(["a100", "h100", "mi300x", "tpu-v5e"])},
    optional={
        "model": st.sampled_from(["llama-8b", "llama-70b", "mixtral-8x7b"]),
        "batch": st.integers(1, 10**7),
        "seq_len": st.integers(1, 10**6),
        "tp": st.sampled_from([1, 2, 8]),
        "phase": st.sampled_from(["prefill", "decode", "generate"]),
    },
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=_VALID, path=st.sampled_from(["/expected-time", "/memory-fit", "/optimal-batch"]))
def test_a_stored_answer_is_the_answer_computed_afresh(
    client: TestClient, fresh: TestClient, query: dict[str, Any], path: str
) -> None:
    """Whatever the cache holds, a cold app computes the same bytes (or the same error)."""
    query.setdefault("model", "llama-8b")
    warm = [client.get(path, params=query) for _ in range(3)]  # stored at the second
    cold = fresh.get(path, params=query)
    _cache(fresh).clear()  # cold again for the next example
    assert warm[0].status_code == warm[2].status_code == cold.status_code
    assert warm[0].content == warm[1].content == warm[2].content == cold.content


# --- the cache itself ------------------------------------------------------------------------


def test_the_least_recently_used_answer_goes_first() -> None:
    cache = AnswerCache(max_entries=2, second_sight=False)
    a, b, c = (("GET", "/x", q) for q in (b"a", b"b", b"c"))
    cache.put(a, b"1")
    cache.put(b, b"2")
    assert cache.get(a) == b"1"  # a is now more recent than b
    cache.put(c, b"3")
    assert (cache.get(a), cache.get(b), cache.get(c)) == (b"1", None, b"3")
    assert cache.paths == {"/x"}


def test_an_oversized_answer_is_not_stored() -> None:
    cache = AnswerCache(second_sight=False)
    cache.put(("GET", "/x", b""), b"x" * (16 * 1024 + 1))
    assert len(cache) == 0 and cache.paths == set()


def test_an_answer_is_stored_the_second_time_it_is_put() -> None:
    # second sight: a question asked once leaves nothing to evict; asked again, it is kept
    cache = AnswerCache()
    key = ("GET", "/x", b"a")
    cache.put(key, b"1")
    assert (cache.get(key), len(cache), cache.paths) == (None, 0, {"/x"})
    cache.put(key, b"1")
    assert (cache.get(key), len(cache), cache.hits) == (b"1", 1, 1)


def test_keys_hold_what_an_answer_depends_on() -> None:
    get: Scope = {"method": "GET", "path": "/check", "query_string": b"a=1", "headers": []}
    assert key_of(get, b"ignored") == ("GET", "/check", b"a=1")
    post = {**get, "method": "POST", "headers": [(b"content-type", b"application/json")]}
    assert key_of(post, b"{}") == ("POST", "/check", b"application/json\n{}")
    assert key_of({**post, "headers": []}, b"{}") == ("POST", "/check", b"\n{}")


def _app_state(cache: AnswerCache) -> Any:
    state = type("State", (), {"catalogs": type("C", (), {"answers": cache})()})()
    return type("App", (), {"state": state})()


def test_a_post_body_in_chunks_is_read_whole_and_replayed_on_a_miss() -> None:
    cache = AnswerCache(second_sight=False)
    cache.put(("POST", "/check", b"application/json\n{}"), b'{"stored":true}')  # the path's
    seen: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.extend([await receive(), await receive()])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"computed"})

    incoming: list[Message] = [
        {"type": "http.request", "body": b'{"a":', "more_body": True},
        {"type": "http.request", "body": b"1}", "more_body": False},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return incoming.pop(0)

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/check",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "app": _app_state(cache),
    }
    asyncio.run(ServeStoredAnswers(app)(scope, receive, send))
    assert [m.get("body") for m in seen] == [b'{"a":', b"1}"]  # replayed as they came
    assert sent[-1]["body"] == b"computed" and cache.hits == 0

    incoming[:] = [{"type": "http.request", "body": b"{}", "more_body": False}]
    sent.clear()
    asyncio.run(ServeStoredAnswers(app)(scope, receive, send))
    assert sent[-1]["body"] == b'{"stored":true}' and cache.hits == 1


def test_answer_models_refuse_nan_and_infinity() -> None:
    """So the JSON an answer renders to is always valid (a NaN would be a logged 500)."""
    row = {
        "batch": 1,
        "compute_time_s": 1.0,
        "memory_time_s": 1.0,
        "expected_time_s": 1.0,
        "realistic_time_s": 1.5,
        "memory_required_bytes": 1.0,
        "fits": True,
        "tokens_per_s": 1.0,
        "bound": Bound.MEMORY,
    }
    rows = TypeAdapter(SweepRow)
    rows.validate_python(row)
    for bad in (math.nan, math.inf):
        with pytest.raises(ValidationError, match="finite number"):
            rows.validate_python({**row, "tokens_per_s": bad})


def test_catalogs_compare_without_their_cache(client: TestClient) -> None:
    catalogs: Catalogs = client.app.state.catalogs  # type: ignore[attr-defined]
    copy = dataclasses.replace(catalogs)
    assert copy == catalogs and copy.answers is not catalogs.answers
