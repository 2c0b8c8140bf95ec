"""Calculation requests that ServeStoredAnswers computes itself, without FastAPI's routing
(app/api/stored_answers.py): the same answers, errors and headers as the routes give."""

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.middleware import Middleware

from app.api.calculation_routes import DIRECT
from app.api.stored_answers import ServeStoredAnswers
from app.main import create_app
from app.services.catalogs import Catalogs
from app.settings import Settings
from tests.api import test_fuzz as fuzz

QUERIES = [
    # answers, one per path, and one that runs the engine's advice and what-if
    "/expected-time?chip=h100&model=llama-70b&tp=4&batch=16",
    "/check?chip=a100&model=llama-8b&measured_ms=5&what_if=true",
    "/memory-fit?chip=t4&model=llama-8b",
    "/optimal-batch?chip=a100&model=llama-8b&max_tpot_ms=30",
    "/scaling?chip=h100&model=llama-8b&batch=1024&chip_counts=8,16,64",
    # errors: unknown names (404 with suggestions), the query's own validation, the engine's
    "/check?chip=a1000&model=llama-8b&measured_ms=5",
    "/expected-time?chip=a100&model=lama-8b",
    "/expected-time?chip=a100&model=llama-8b&catalog_version=1999.01.01",
    "/expected-time?chip=a100&model=llama-8b&measured_ms=5",
    "/expected-time?chip=a100&model=llama-8b&batch=0",
    "/expected-time?chip=a100&model=llama-8b&phase=sideways",
    "/check?chip=a100&model=llama-8b",
    "/check?chip=a100&model=llama-8b&measured_ms=nan",
    "/memory-fit?chip=a100&model=bert-base&phase=decode",
    "/scaling?chip=h100&model=llama-8b&batch=1000&chip_counts=8,16,64&mode=weak",
    "/optimal-batch?chip=a100&model=llama-8b&phase=training&max_tpot_ms=30",
    "/expected-time?chip=a100&model=llama-8b&ceilings=empirical",
    # not computed directly: a trailing slash (FastAPI redirects), another path
    "/check/?chip=a100&model=llama-8b&measured_ms=5",
    "/health",
]


MATMUL = {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
LLAMA = {"kind": "transformer", "model": "llama-8b", "phase": "decode", "batch": 8}
JSON = {"content-type": "application/json"}
POSTS: list[tuple[str, bytes, dict[str, str]]] = [
    # answers
    ("/check", json.dumps({"chip": "a100", "measured_ms": 0.6, "workload": MATMUL}).encode(), JSON),
    (
        "/check",
        json.dumps({"chip": "h100", "measured_ms": 9, "workload": LLAMA, "what_if": True}).encode(),
        JSON,
    ),
    (
        "/expected-time",
        json.dumps({"chip": "a100", "workload": LLAMA}).encode(),
        {"content-type": "application/vnd.api+json"},
    ),
    ("/memory-fit", json.dumps({"chip": "t4", "workload": LLAMA}).encode(), JSON),
    (
        "/optimal-batch",
        json.dumps({"chip": "a100", "workload": LLAMA, "max_tpot_ms": 30}).encode(),
        JSON,
    ),
    (
        "/scaling",
        json.dumps(
            {
                "chip": "h100",
                "workload": {**LLAMA, "phase": "training", "batch": 1024},
                "chip_counts": [8, 16],
            }
        ).encode(),
        JSON,
    ),
    # refused by the body's model: FastAPI words the error
    ("/check", json.dumps({"chip": "a100", "workload": MATMUL}).encode(), JSON),
    ("/check", b'{"chip": "a100", "measured_ms": NaN, "workload": {"kind": "matmul"}}', JSON),
    ("/expected-time", b'{"chip": "a100", "workload": ', JSON),
    ("/expected-time", b"", JSON),
    ("/expected-time", b"[" * 5_000, JSON),
    ("/expected-time", b"\xff\xfe{", JSON),
    (
        "/expected-time",
        json.dumps({"chip": "a100", "workload": LLAMA}).encode(),
        {"content-type": "text/plain"},
    ),
    ("/expected-time", json.dumps({"chip": "a100", "workload": LLAMA}).encode(), {}),
    # taken by the model, refused by the engine or the catalogs
    ("/expected-time", json.dumps({"chip": "a1000", "workload": LLAMA}).encode(), JSON),
    (
        "/expected-time",
        json.dumps({"chip": "a100", "workload": {**LLAMA, "batch": 10**9}}).encode(),
        JSON,
    ),
    (
        "/check",
        json.dumps(
            {"chip": "tpu-v5e", "measured_ms": 1, "workload": {**MATMUL, "dtype": "fp32"}}
        ).encode(),
        JSON,
    ),
]


def _app(tmp_path: Any, *, direct: bool) -> TestClient:
    """An app with the direct GETs, or one whose calculation GETs all go through FastAPI."""
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/direct-{direct}.db"))
    if not direct:  # before the first request builds the middleware stack
        app.user_middleware = [
            Middleware(ServeStoredAnswers) if m.cls is ServeStoredAnswers else m  # type: ignore[comparison-overlap]
            for m in app.user_middleware
        ]
    return TestClient(app, base_url="http://localhost", follow_redirects=False)


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_direct_gets_answer_as_the_routes_do(tmp_path: Any, method: str) -> None:
    direct, routed = _app(tmp_path, direct=True), _app(tmp_path, direct=False)
    for query in QUERIES:
        for _ in range(2):  # computed, then (for an answer) served from the cache
            ours, theirs = direct.request(method, query), routed.request(method, query)
            assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), query
            assert ours.headers.items() == theirs.headers.items(), query
    statuses = {routed.get(query).status_code for query in QUERIES}
    assert statuses == {200, 307, 404, 422}


def test_direct_posts_answer_as_the_routes_do(tmp_path: Any) -> None:
    direct, routed = _app(tmp_path, direct=True), _app(tmp_path, direct=False)
    for path, body, headers in POSTS:
        for _ in range(2):  # computed, then (for an answer) served from the cache
            ours = direct.post(path, content=body, headers=headers)
            theirs = routed.post(path, content=body, headers=headers)
            assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), body
            assert ours.headers.items() == theirs.headers.items(), body
    statuses = {routed.post(p, content=b, headers=h).status_code for p, b, h in POSTS}
    assert statuses == {200, 404, 415, 422}


def test_a_calculation_is_answered_without_its_route(tmp_path: Any) -> None:
    """The routes stay for FastAPI's OpenAPI schema, other methods and a body FastAPI refuses:
    a GET or a valid POST never reaches them."""
    client = _app(tmp_path, direct=True)
    routes = client.app.router.routes  # type: ignore[attr-defined]
    client.app.router.routes = [  # type: ignore[attr-defined]
        r
        for r in routes
        if not any((m, getattr(r, "path", None)) in DIRECT for m in getattr(r, "methods", ()))
    ]
    answer = client.get("/expected-time?chip=a100&model=llama-8b")
    assert answer.status_code == 200
    assert answer.json()["chip"]["id"] == "a100-sxm4-80gb"
    path, body, headers = POSTS[0]
    assert client.post(path, content=body, headers=headers).json()["verdict"] == "near_roofline"
    # a body the model refuses goes to the route, which is gone here
    assert client.post("/expected-time", content=b"{", headers=JSON).status_code in (404, 405)


def test_an_error_no_handler_takes_is_a_server_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Catalogs, version: str | None) -> None:
        raise RuntimeError("a bug")

    answers = []
    for direct in (True, False):
        with _app(tmp_path, direct=direct) as client:  # started: its catalogs are patched
            monkeypatch.setattr(Catalogs, "chips", broken)
            answer = client.get("/expected-time?chip=a100&model=llama-8b")
            answers.append((answer.status_code, answer.content, answer.headers.items()))
            monkeypatch.undo()
    assert answers[0] == answers[1]
    assert answers[0][0] == 500


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, TestClient]:
    """The direct app and the routed one, shared by the examples (no per-request state)."""
    path = tmp_path_factory.mktemp("both")
    return _app(path, direct=True), _app(path, direct=False)


def _same(both: tuple[TestClient, TestClient], method: str, path: str, **sent: Any) -> None:
    ours, theirs = (client.request(method, path, **sent) for client in both)
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content), sent
    assert ours.headers.items() == theirs.headers.items(), sent


PARITY = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PARITY
@given(
    path=st.sampled_from(["/expected-time", "/memory-fit", "/optimal-batch", "/check", "/scaling"]),
    params=st.one_of(fuzz.query, fuzz.training_query),
)
def test_odd_queries_get_the_routes_answers(
    both: tuple[TestClient, TestClient], path: str, params: dict[str, Any]
) -> None:
    _same(both, "GET", path, params=params)


bodies = st.fixed_dictionaries(
    {"chip": fuzz.names, "workload": fuzz.kernel, "measured_ms": fuzz.numbers},
    optional={
        "what_if": st.booleans(),
        "stack": st.sampled_from(["eager", "x"]),
        "nope": st.none(),
    },
)


@PARITY
@given(
    path=st.sampled_from(["/expected-time", "/check", "/memory-fit", "/optimal-batch"]),
    body=bodies,
)
def test_odd_bodies_get_the_routes_answers(
    both: tuple[TestClient, TestClient], path: str, body: dict[str, Any]
) -> None:
    _same(both, "POST", path, json=body)
