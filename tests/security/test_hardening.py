"""Headers, body limits, write tokens and cross-site form posts (SECURITY.md)."""

import base64
import hashlib
import re
import socket
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import engine
from app.main import create_app
from app.security import WriteTokens
from app.settings import Settings
from tests.conftest import serve

DECODE = {"kind": "transformer", "model": "llama-8b", "batch": 8}
POST = {"chip": "a100", "workload": DECODE, "measured_ms": 10.0, "label": "sec"}
TOKEN = "ci-token-0123456789abcdef"


@pytest.mark.parametrize("path", ["/", "/history", "/catalog", "/chips", "/roofline.svg"])
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path, params={"chip": "a100", "model": "llama-8b"})
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'self';" in csp
    assert "unsafe-inline" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"


def test_the_csp_allows_the_charts_inline_stylesheet_and_no_other(client):
    page = client.get("/", params={"chip": "a100", "model": "llama-8b", "measured_ms": "30"})
    styles = set(re.findall(r"<style>(.*?)</style>", page.text))
    assert len(styles) == 1  # the charts' one stylesheet (app/web/svg.py)
    digest = hashlib.sha256(styles.pop().encode()).digest()
    hashes = re.findall(r"'sha256-([^']+)'", page.headers["content-security-policy"])
    assert hashes == [base64.b64encode(digest).decode()]


def test_oversized_body_is_refused_before_it_is_read(client):
    response = client.post("/measurements", json=POST | {"notes": "x" * 70_000})
    assert response.status_code == 413
    assert "65536 bytes" in response.json()["detail"]["message"]


def test_body_without_length_is_refused(client):
    response = client.post(
        "/measurements", content=iter([b"{}"]), headers={"content-type": "application/json"}
    )
    assert response.status_code == 411


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    database = Path(tmp_path_factory.mktemp("guarded")) / "roofcheck.db"
    settings = Settings(
        database_url=f"sqlite:///{database}",
        write_tokens=f"ci:{TOKEN}, alice:alice-token-0123456789",
    )
    return TestClient(create_app(settings))


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}", TOKEN]
)
def test_writes_need_a_valid_bearer_token(guarded, authorization):
    headers = {"authorization": authorization} if authorization else {}
    response = guarded.post("/measurements", json=POST, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert guarded.post("/measurements/1/rejudge", headers=headers).status_code == 401
    profile = {
        "device": "cpu",
        "backend": "numpy",
        "date": "2026-11-23",
        "copy_bytes_per_s": 3.6e10,
        "matmul_flops_per_s": {"fp32": 7e10},
    }
    refused = guarded.post("/chips/a100/empirical", json=profile, headers=headers)
    assert refused.status_code == 401
    assert guarded.get("/chips/a100").json()["empirical"] is None  # nothing was stored


def test_a_valid_token_writes_and_reads_stay_open(guarded):
    stored = guarded.post("/measurements", json=POST, headers={"authorization": f"Bearer {TOKEN}"})
    assert stored.status_code == 201
    number = stored.json()["id"]
    assert guarded.get(f"/measurements/{number}").status_code == 200
    assert guarded.get("/measurements").json()["total"] >= 1
    assert guarded.get("/expected-time", params={"chip": "a100", "model": "llama-8b"}).is_success


def test_the_form_cannot_store_when_writes_need_tokens(guarded):
    response = guarded.post("/save", data={}, headers={"origin": "http://testserver"})
    assert response.status_code == 403
    assert "bearer token" in response.text


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"origin": "https://evil.example"},
        {"origin": "null"},
        {"referer": "https://evil.example/page"},
        {"origin": "http://testserver", "sec-fetch-site": "cross-site"},
    ],
)
def test_cross_site_form_posts_are_refused(client, headers):
    form = {"chip": "a100", "kind": "transformer", "model": "llama-8b", "measured_ms": "9"}
    before = client.get("/measurements").json()["total"]
    response = client.post("/save", data=form, headers=headers, follow_redirects=False)
    assert response.status_code == 403
    assert client.get("/measurements").json()["total"] == before


def test_token_parsing():
    tokens = WriteTokens.parse(f" ci:{TOKEN} ,, bob:{'b' * 16}")
    assert tokens.owner(TOKEN) == "ci"
    assert tokens.owner("b" * 16) == "bob"
    assert tokens.owner("nope") is None
    assert WriteTokens.parse("").owners == {}
    for bad in ("ci", "ci:short", f":{TOKEN}", f"{'o' * 64}:{TOKEN}"):
        with pytest.raises(ValueError, match="entry 1") as caught:
            WriteTokens.parse(bad)
        assert TOKEN not in str(caught.value)


def test_an_owner_name_longer_than_the_columns_hold_stops_start_up():
    """written_by holds 64 characters, "owner:key" 264 with a key of up to 200: an owner of 64
    made every write a 500 on PostgreSQL."""
    with pytest.raises(ValueError, match="owner of 1 to 63 characters"):
        create_app(Settings(database_url="sqlite://", write_tokens=f"{'o' * 64}:{TOKEN}"))


def test_the_default_hosts_are_the_local_ones():
    assert Settings.model_fields["allowed_hosts"].default == "localhost,127.0.0.1"


@pytest.mark.parametrize("origin", ["http://rebind.example:8000", None])
def test_a_host_not_allowed_is_a_400_so_dns_rebinding_cannot_pass_the_form_check(client, origin):
    """A rebound name (rebind.example resolving to this service) sends a matching Host and
    Origin: the form's same-origin check alone would let it store a row."""
    headers = {"host": "rebind.example:8000", "sec-fetch-site": "same-origin"}
    if origin:
        headers["origin"] = origin
    form = {"chip": "a100", "kind": "matmul", "m": "64", "n": "64", "k": "64"}
    before = client.get("/measurements").json()["total"]
    form |= {"measured_ms": "1"}
    response = client.post("/save", data=form, headers=headers, follow_redirects=False)
    assert response.status_code == 400  # without the check: 303, a row stored
    assert response.headers["x-frame-options"] == "DENY"
    assert client.get("/health", headers={"host": "rebind.example"}).status_code == 400
    assert client.get("/measurements").json()["total"] == before


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "roofcheck.internal"])
def test_the_allowed_hosts_are_answered(tmp_path, host):
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'db'}",
        allowed_hosts="localhost, 127.0.0.1, roofcheck.internal",
    )
    client = TestClient(create_app(settings))
    assert client.get("/health", headers={"host": host}).status_code == 200
    assert client.get("/health").status_code == 400  # testserver is not among them


def test_allowed_hosts_must_name_one():
    with pytest.raises(ValueError, match="ROOFCHECK_ALLOWED_HOSTS"):
        create_app(Settings(database_url="sqlite://", allowed_hosts=" , "))


def _exchange(sock: socket.socket, path: str) -> bytes:
    """One GET on an open keep-alive connection: the response's head and body."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    declared = re.search(rb"(?i)content-length: (\d+)", head)
    assert declared
    length = int(declared.group(1))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        body += chunk
    return head.lower() + b"\r\n\r\n" + body


def test_a_500_carries_the_security_headers_and_keeps_the_connection(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(engine, "memory_fit", broken)  # /memory-fit's engine call
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'db'}"))
    with serve(app) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            failed = _exchange(sock, "/memory-fit?chip=a100&model=llama-8b")
            assert failed.startswith(b"http/1.1 500")
            assert b"x-content-type-options: nosniff" in failed
            assert b"content-security-policy: " in failed
            assert failed.endswith(b'{"detail":{"message":"internal error; it has been logged"}}')
            assert _exchange(sock, "/health").startswith(b"http/1.1 200")


@pytest.mark.parametrize("path", ["/check", "/measurements", "/chips/a100/empirical"])
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_sent_as_json_is_a_415(client, path, content_type):
    headers = {"content-type": content_type} if content_type else {}
    response = client.post(path, content=b'{"chip": "a100"}', headers=headers)
    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]["message"]


@pytest.mark.parametrize("content_type", ["application/json", "application/merge-patch+json"])
def test_json_that_is_not_utf_8_is_malformed_json_a_422(client, content_type):
    response = client.post(
        "/check", content=b'{"chip": "\xff"}', headers={"content-type": content_type}
    )
    assert response.status_code == 422  # FastAPI's own: a vague 400
    assert response.json()["detail"][0]["type"] == "json_invalid"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/check", "GET, POST"),
        ("PUT", "/measurements", "GET, POST"),
        ("PATCH", "/measurements/1/rejudge", "POST"),
        ("POST", "/health", "GET"),
    ],
)
def test_a_405_allows_every_method_of_the_path(client, method, path, allow):
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow


@pytest.mark.parametrize("query", ["until=0.5", "since=1700000000", "since=2026-13-45"])
def test_a_list_filter_takes_iso_dates_only(client, query):
    for accept in ("application/json", "text/html"):
        response = client.get(f"/measurements?{query}", headers={"accept": accept})
        assert response.status_code == 422, query


def test_an_empirical_date_must_be_a_calendar_day(client):
    profile = {
        "device": "cpu",
        "backend": "numpy",
        "date": "2026-13-45",
        "copy_bytes_per_s": 3.6e10,
        "matmul_flops_per_s": {"fp32": 7e10},
    }
    response = client.post("/chips/a100/empirical", json=profile)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "date"]


def test_the_bearer_token_is_declared_in_the_schema(client):
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    secured = {
        (path, method)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if operation.get("security") == [{"HTTPBearer": []}]
    }
    assert secured == {
        ("/measurements", "post"),
        ("/measurements/{measurement_id}/rejudge", "post"),
        ("/measurements/{measurement_id}/false-alarm", "post"),
        ("/chips/{chip}/empirical", "post"),
        ("/chips/{chip}/empirical/{profile_id}", "delete"),
    }


def test_a_body_that_stalls_is_a_408_and_the_connection_closes(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db'}", body_timeout_s=0.3)
    with serve(create_app(settings)) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            head = "POST /check HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            sock.sendall(f'{head}content-length: 100\r\n\r\n{{"chip": '.encode())
            started = time.monotonic()
            answer = b""
            while chunk := sock.recv(65536):  # until the server closes the connection
                answer += chunk
    assert time.monotonic() - started < 3
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"arrived too slowly: 9 bytes in 0.3 s" in answer


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 30_000 + b"]" * 30_000,  # deeper than Python's JSON parser goes
        b'{"notes": ' + b"[" * 30_000 + b'"\\u0000"' + b"]" * 30_000 + b"}",
    ],
)
def test_json_nested_too_deep_is_malformed_json_a_422(client, body):
    for path in ("/check", "/measurements"):
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert response.json()["detail"][0]["type"] in ("json_invalid", "string_nul")


def test_a_host_not_allowed_is_a_documented_400(client):
    """Schemathesis's negative cases send any Host: the 400 is in every operation's schema."""
    operations = client.get("/openapi.json").json()["paths"].values()
    assert all("400" in op["responses"] for ops in operations for op in ops.values())
