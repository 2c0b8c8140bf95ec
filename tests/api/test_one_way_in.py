"""Every request that the answer cache does not answer goes through FastAPI's routing, so what
is added to the app the usual FastAPI way (a dependency override, an exception handler)
applies to it; and the answers and errors of the calculation and write endpoints."""

import json
import sqlite3
from typing import Any

import pytest
from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from app.http.deps import get_catalogs
from app.main import create_app
from app.services.catalogs import Catalogs
from app.settings import Settings

JSON = {"content-type": "application/json"}
MATMUL = {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
LLAMA = {"kind": "transformer", "model": "llama-8b", "phase": "decode", "batch": 8}
CALCULATIONS = [
    ("GET", "/expected-time?chip=a100&model=llama-8b", None),
    ("POST", "/check", {"chip": "a100", "measured_ms": 0.6, "workload": MATMUL}),
    ("GET", "/compare?chips=a100,h100&model=llama-8b", None),
]


def _client(tmp_path: Any, name: str = "app", tokens: str = "") -> TestClient:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/{name}.db", write_tokens=tokens)
    return TestClient(create_app(settings), base_url="http://localhost")


class Teapot(Exception):
    """Raised by a dependency a test puts in place of the app's."""


@pytest.mark.parametrize(("method", "path", "body"), CALCULATIONS)
def test_a_dependency_override_and_an_exception_handler_reach_every_calculation(
    tmp_path: Any, method: str, path: str, body: dict[str, Any] | None
) -> None:
    client = _client(tmp_path)
    app = client.app
    asked: list[str] = []

    async def catalogs(request: Request) -> Catalogs:
        asked.append(request.url.path)
        raise Teapot

    async def teapot(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": "teapot"}, status_code=418)

    app.add_exception_handler(Teapot, teapot)  # type: ignore[attr-defined]
    assert client.request(method, path, json=body).status_code == 200
    assert len(app.state.catalogs.answers) == 0  # type: ignore[attr-defined]  # the next: a miss
    app.dependency_overrides[get_catalogs] = catalogs  # type: ignore[attr-defined]
    answered = client.request(method, path, json=body)
    assert (answered.status_code, answered.json()) == (418, {"detail": "teapot"})
    assert asked == [path.partition("?")[0]]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("/expected-time?chip=h100&model=llama-70b&tp=4&batch=16", 200),
        ("/check?chip=a100&model=llama-8b&measured_ms=5&what_if=true", 200),
        ("/memory-fit?chip=t4&model=llama-8b", 200),
        ("/optimal-batch?chip=a100&model=llama-8b&max_tpot_ms=30", 200),
        ("/scaling?chip=h100&model=llama-8b&batch=1024&chip_counts=8,16,64", 200),
        ("/check?chip=a1000&model=llama-8b&measured_ms=5", 404),
        ("/expected-time?chip=a100&model=lama-8b", 404),
        ("/expected-time?chip=a100&model=llama-8b&catalog_version=1999.01.01", 404),
        ("/expected-time?chip=a100&model=llama-8b&measured_ms=5", 422),  # not /check's
        ("/check?chip=a100&model=llama-8b", 422),  # no measured time
        ("/check?chip=a100&model=llama-8b&measured_ms=nan", 422),
        ("/memory-fit?chip=a100&model=bert-base&phase=decode", 422),  # an encoder
        ("/optimal-batch?chip=a100&model=llama-8b&phase=training&max_tpot_ms=30", 422),
        ("/expected-time?chip=a100&model=llama-8b&ceilings=empirical", 422),  # none measured
        ("/check/?chip=a100&model=llama-8b&measured_ms=5", 307),  # FastAPI's redirect
    ],
)
def test_calculation_gets_answer_or_refuse(client: TestClient, query: str, status: int) -> None:
    answered = client.get(query, follow_redirects=False)
    assert answered.status_code == status, answered.text
    assert client.head(query, follow_redirects=False).status_code == (405 if status != 307 else 307)


@pytest.mark.parametrize(
    ("path", "body", "headers", "status"),
    [
        ("/expected-time", json.dumps({"chip": "a100", "workload": LLAMA}), JSON, 200),
        (
            "/expected-time",
            json.dumps({"chip": "a100", "workload": LLAMA}),
            {"content-type": "application/vnd.api+json"},
            200,
        ),
        ("/check", json.dumps({"chip": "a100", "workload": MATMUL}), JSON, 422),
        ("/check", '{"chip": "a100", "measured_ms": NaN, "workload": {}}', JSON, 422),
        ("/expected-time", '{"chip": "a100", "workload": ', JSON, 422),
        ("/expected-time", "", JSON, 422),
        ("/expected-time", "[" * 5_000, JSON, 422),
        ("/expected-time", json.dumps({"chip": "a1000", "workload": LLAMA}), JSON, 404),
        ("/expected-time", json.dumps({"chip": "a100", "workload": LLAMA}), {}, 415),
    ],
)
def test_calculation_posts_answer_or_refuse(
    client: TestClient, path: str, body: str, headers: dict[str, str], status: int
) -> None:
    answered = client.post(path, content=body.encode(), headers=headers)
    assert answered.status_code == status, answered.text


# --- POST /measurements ---------------------------------------------------------------------

TOKEN = "ci-token-0123456789abcdef"
BEARER = {**JSON, "authorization": f"Bearer {TOKEN}"}
MEASURED = {"chip": "a100", "workload": LLAMA, "measured_ms": [9.8, 10.1, 10.0], "branch": "main"}
SLOW = json.dumps({**MEASURED, "measured_ms": [99.0, 101.0]})


def _body(**changes: Any) -> str:
    return json.dumps({**MEASURED, **changes})


# (query string, body, headers, status where tokens are set, where they are not); posted in
# this order, each to a fresh database
WRITES: list[tuple[str, str, dict[str, str], int, int]] = [
    ("", _body(), BEARER, 201, 201),  # near_roofline
    ("?fail_on=regression", SLOW, BEARER, 412, 412),  # slower than the first: stored all the same
    ("", SLOW, BEARER, 201, 201),
    # the last fail_on given is the one read: near_roofline fails the gate
    ("?fail_on=faster_than_roofline&fail_on=near_roofline", _body(), BEARER, 412, 412),
    ("?fail_on=sideways", _body(), BEARER, 422, 422),
    ("?fail_on=" + "r" * 501, _body(), BEARER, 422, 422),  # over its length
    ("?fail_on=", _body(), BEARER, 422, 422),
    ("", _body(label="retried"), {**BEARER, "idempotency-key": "run-1"}, 201, 201),
    ("", _body(label="retried"), {**BEARER, "idempotency-key": "run-1"}, 201, 201),  # replayed
    ("", _body(label="other"), {**BEARER, "idempotency-key": "run-1"}, 422, 422),  # key reused
    ("", _body(), {**BEARER, "idempotency-key": ""}, 422, 422),
    ("", _body(), {**BEARER, "idempotency-key": "k" * 201}, 422, 422),
    ("", _body(chip="a1000"), BEARER, 404, 404),
    ("", _body(measured_ms=[0]), BEARER, 422, 422),
    ("", '{"chip": "a100", ', BEARER, 422, 422),
    ("", "[1, 2]", BEARER, 422, 422),
    ("", _body(), {**BEARER, "content-type": "text/plain"}, 415, 415),
    ("", _body(), JSON, 401, 201),  # no token
    ("", _body(), {**JSON, "authorization": "Bearer not-a-token-of-ours"}, 401, 201),
    ("", _body(), {**JSON, "authorization": f"Basic {TOKEN}"}, 401, 201),
    ("?unknown=1", _body(workload={"kind": "matmul", "m": 64, "n": 64, "k": 64}), BEARER, 201, 201),
]


@pytest.mark.parametrize("tokens", [True, False])
def test_writes_answer_refuse_and_store(tmp_path: Any, tokens: bool) -> None:
    client = _client(tmp_path, "writes", f"ci:{TOKEN}" if tokens else "")
    for query, body, headers, guarded, open_ in WRITES:
        answered = client.post("/measurements" + query, content=body.encode(), headers=headers)
        assert answered.status_code == (guarded if tokens else open_), (query, body, headers)
    if tokens:
        refused = client.post("/measurements", content=_body().encode(), headers=JSON)
        assert refused.headers["www-authenticate"] == "Bearer"
    with sqlite3.connect(f"{tmp_path}/writes.db") as database:
        rows = database.execute(
            "SELECT written_by, idempotency_key FROM measurements ORDER BY id"
        ).fetchall()
    stored = [guarded if tokens else open_ for *_, guarded, open_ in WRITES]
    assert len(rows) == stored.count(201) + stored.count(412) - 1  # less the one replayed
    assert {writer for writer, _ in rows} == ({"ci"} if tokens else {None})
    assert [key for _, key in rows if key] == ["ci:run-1" if tokens else ":run-1"]
