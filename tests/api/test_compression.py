"""Pages, JSON answers (computed or stored) and /docs' files are gzipped for a client that
accepts it, and sent as they are to one that does not; the security headers either way."""

import asyncio
import gzip
import zlib
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.catalogs import Catalogs
from app.settings import Settings

ANSWER = "/optimal-batch?chip=a100&model=llama-8b"
PAGES = ["/", "/docs", "/static/swagger/swagger-ui-bundle.js", "/chips", ANSWER]


@pytest.fixture()
def plain(tmp_path: Any) -> TestClient:
    """A client of an app of its own that sends no Accept-Encoding at all. Its calculation
    budget is 30 s: these tests check compression, and a busy CI machine under coverage can
    take longer than the default 2 s budget of a 2,000-row table to judge it."""
    client = TestClient(
        create_app(
            Settings(database_url=f"sqlite:///{tmp_path}/gzip.db", calculation_budget_s=30.0)
        ),
        base_url="http://localhost",
    )
    del client.headers["accept-encoding"]  # httpx's default asks for gzip
    return client


def _raw(client: TestClient, path: str, encodings: str) -> tuple[bytes, dict[str, str]]:
    """The bytes as sent (not decoded) and the headers of `path`."""
    with client.stream("GET", path, headers={"accept-encoding": encodings}) as answered:
        assert answered.status_code == 200, path
        return b"".join(answered.iter_raw()), dict(answered.headers)


def _secured(headers: dict[str, str]) -> bool:
    return headers["x-content-type-options"] == "nosniff" and "content-security-policy" in headers


@pytest.mark.parametrize("path", PAGES)
def test_gzip_to_a_client_that_accepts_it_plain_to_one_that_does_not(
    plain: TestClient, path: str
) -> None:
    sent = plain.get(path)
    assert "content-encoding" not in sent.headers and _secured(dict(sent.headers))
    zipped, headers = _raw(plain, path, "gzip, deflate")
    assert headers["content-encoding"] == "gzip" and _secured(headers)
    assert len(zipped) < len(sent.content)
    assert gzip.decompress(zipped) == sent.content


def test_a_stored_answer_is_gzipped_too(plain: TestClient) -> None:
    catalogs: Catalogs = plain.app.state.catalogs  # type: ignore[attr-defined]
    computed = [plain.get(ANSWER).content for _ in range(2)]  # stored at the second
    assert catalogs.answers.hits == 0
    zipped, headers = _raw(plain, ANSWER, "gzip")
    assert catalogs.answers.hits == 1
    assert headers["content-encoding"] == "gzip" and _secured(headers)
    assert gzip.decompress(zipped) == computed[0] == computed[1]
    stored = plain.get(ANSWER)
    assert (stored.content, catalogs.answers.hits) == (computed[0], 2)
    assert "content-encoding" not in stored.headers


def test_a_large_answer_is_gzipped_off_the_event_loop(
    plain: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2,000-row table's answer (about 1 MB of JSON) compresses in a worker thread, so the
    event loop goes on answering others meanwhile; a small answer compresses in place."""
    compressed: list[tuple[int, bool]] = []  # (bytes, on the event loop)
    opened = zlib.compressobj

    class Watched:
        def __init__(self, *args: Any) -> None:
            self.inner = opened(*args)

        def compress(self, data: bytes) -> bytes:
            compressed.append((len(data), _on_event_loop()))
            return self.inner.compress(data)

        def flush(self, *args: Any) -> bytes:
            return self.inner.flush(*args)

    monkeypatch.setattr(zlib, "compressobj", Watched)
    table = "label,M,N,K,dtype,ms\n" + "square,4096,4096,4096,bf16,0.5\n" * 2000
    answered = plain.post(
        "/check/table?chip=h100",
        content=table,
        headers={"content-type": "text/csv", "accept-encoding": "gzip"},
    )
    assert answered.status_code == 200 and answered.headers["content-encoding"] == "gzip"
    assert len(answered.json()["rows"]) == 2000
    ((size, on_loop),) = compressed
    assert size > 128 * 1024 and not on_loop
    compressed.clear()
    assert plain.get(ANSWER, headers={"accept-encoding": "gzip"}).status_code == 200
    ((size, on_loop),) = compressed
    assert size < 128 * 1024 and on_loop


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a worker thread runs no event loop
        return False
    return True
