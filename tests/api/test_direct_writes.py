"""POST /measurements computed by ServeStoredAnswers without FastAPI's routing
(app/api/measurement_routes.py's create_directly): the same rows and answers, the same errors
and headers as the route gives, whatever the body, token, gate or idempotency key."""

import json
import sqlite3
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.middleware import Middleware

from app.api import measurement_routes
from app.api.measurement_routes import DIRECT
from app.api.stored_answers import ServeStoredAnswers
from app.main import create_app
from app.settings import Settings

TOKEN = "ci-token-0123456789abcdef"
JSON = {"content-type": "application/json"}
BEARER = {**JSON, "authorization": f"Bearer {TOKEN}"}
MEASURED = {
    "chip": "a100",
    "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
    "measured_ms": [9.8, 10.1, 10.0],
    "branch": "main",
}
SLOW = {**MEASURED, "measured_ms": [99.0, 101.0]}


def _body(**changes: Any) -> bytes:
    return json.dumps({**MEASURED, **changes}).encode()


# (query string, body, headers), posted in this order to both apps; with write tokens set,
# JSON alone carries no token
POSTS: list[tuple[str, bytes, dict[str, str]]] = [
    ("", _body(), BEARER),  # near_roofline
    # a regression against the first: 412, stored all the same
    ("?fail_on=regression", json.dumps(SLOW).encode(), BEARER),
    ("", json.dumps(SLOW).encode(), BEARER),
    # the last fail_on given is the one read: near_roofline fails the gate (412)
    ("?fail_on=faster_than_roofline&fail_on=near_roofline", _body(), BEARER),
    ("?fail_on=sideways", _body(), BEARER),  # refused by the endpoint: 422 naming fail_on
    ("?fail_on=" + "r" * 501, _body(), BEARER),  # refused by FastAPI: too long
    ("?fail_on=", _body(), BEARER),
    ("", _body(label="retried"), {**BEARER, "idempotency-key": "run-1"}),
    ("", _body(label="retried"), {**BEARER, "idempotency-key": "run-1"}),  # the first's answer
    ("", _body(label="other"), {**BEARER, "idempotency-key": "run-1"}),  # key reused: 422
    ("", _body(), {**BEARER, "idempotency-key": ""}),
    ("", _body(), {**BEARER, "idempotency-key": "k" * 300}),
    ("", _body(chip="a1000"), BEARER),  # 404 with suggestions
    ("", _body(measured_ms=[0]), BEARER),
    ("", b'{"chip": "a100", ', BEARER),
    ("", b"[1, 2]", BEARER),
    ("", _body(), {"content-type": "text/plain", "authorization": BEARER["authorization"]}),
    ("", _body(), JSON),  # no token: 401 where tokens are set
    ("", _body(), {**JSON, "authorization": "Bearer not-a-token-of-ours"}),
    ("", _body(), {**JSON, "authorization": f"Basic {TOKEN}"}),
    ("?unknown=1", _body(workload={"kind": "matmul", "m": 64, "n": 64, "k": 64}), BEARER),
]


def _app(tmp_path: Any, *, direct: bool, tokens: bool) -> TestClient:
    """An app that stores measurements directly, or one whose POSTs all go through FastAPI."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/writes-{direct}-{tokens}.db",
        write_tokens=f"ci:{TOKEN}" if tokens else "",
    )
    app = create_app(settings)
    if not direct:  # before the first request builds the middleware stack
        app.user_middleware = [
            Middleware(ServeStoredAnswers) if m.cls is ServeStoredAnswers else m  # type: ignore[comparison-overlap]
            for m in app.user_middleware
        ]
    return TestClient(app, base_url="http://localhost")


def _without_times(value: Any) -> Any:
    """`value` without its `created_at` stamps, the one thing two apps store differently."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k != "created_at"}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _answered(client: TestClient, query: str, body: bytes, headers: dict[str, str]) -> Any:
    answer = client.post("/measurements" + query, content=body, headers=headers)
    try:
        content: Any = _without_times(answer.json())
    except ValueError:
        content = answer.text
    sent = {k: v for k, v in answer.headers.items() if k != "content-length"}
    return answer.status_code, content, sent


def test_direct_writes_answer_and_store_as_the_route_does(tmp_path: Any) -> None:
    for tokens in (True, False):
        direct = _app(tmp_path, direct=True, tokens=tokens)
        routed = _app(tmp_path, direct=False, tokens=tokens)
        statuses = set()
        for query, body, headers in POSTS:
            ours = _answered(direct, query, body, headers)
            assert ours == _answered(routed, query, body, headers), (query, body, headers)
            statuses.add(ours[0])
        # the same rows, in the same order, with the same judgement, writer and keys
        lists = [
            _without_times(client.get("/measurements?limit=100").json())
            for client in (direct, routed)
        ]
        assert lists[0] == lists[1]
        expected = {201, 412, 422, 404, 415, 401} if tokens else {201, 412, 422, 404, 415}
        assert statuses == expected
        assert len(lists[0]["items"]) == (6 if tokens else 9)  # the 201s and 412s
        # and what the answers do not show: who wrote each row, under which key
        written = [_writers(tmp_path, direct=d, tokens=tokens) for d in (True, False)]
        assert written[0] == written[1]
        assert {writer for _, writer, _ in written[0]} == ({"ci"} if tokens else {None})
        assert [key for *_, key in written[0] if key] == ["ci:run-1" if tokens else ":run-1"]


def _writers(tmp_path: Any, *, direct: bool, tokens: bool) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"{tmp_path}/writes-{direct}-{tokens}.db") as database:
        query = "SELECT id, written_by, idempotency_key FROM measurements ORDER BY id"
        return database.execute(query).fetchall()


def test_a_valid_write_is_stored_without_its_route(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route stays for FastAPI's OpenAPI schema and every POST that one of its
    dependencies or parameters refuses: a valid one never reaches it."""
    client = _app(tmp_path, direct=True, tokens=True)
    # the measurement routes' APIRouter is shared by every app: removed from it for this test
    kept = [
        r
        for r in measurement_routes.router.routes
        if not any((m, getattr(r, "path", None)) in DIRECT for m in getattr(r, "methods", ()))
    ]
    assert len(kept) == len(measurement_routes.router.routes) - 1
    monkeypatch.setattr(measurement_routes.router, "routes", kept)
    stored = client.post("/measurements?fail_on=regression", content=_body(), headers=BEARER)
    assert stored.status_code == 201
    assert _writers(tmp_path, direct=True, tokens=True) == [(1, "ci", None)]
    assert stored.json()["gate"] == {"fail_on": ["regression"], "failed": False, "reasons": []}
    # without a token, or with a body the model refuses: the route's, gone here
    for body, headers in ((_body(), JSON), (b"{", BEARER)):
        refused = client.post("/measurements", content=body, headers=headers)
        assert refused.status_code in (404, 405)
