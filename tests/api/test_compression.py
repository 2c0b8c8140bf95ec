"""Pages, JSON answers (computed or stored) and /docs' files are gzipped for a client that
accepts it, and sent as they are to one that does not; the security headers either way."""

import gzip
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
    """A client of an app of its own that sends no Accept-Encoding at all."""
    client = TestClient(
        create_app(Settings(database_url=f"sqlite:///{tmp_path}/gzip.db")),
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
