"""Rendered answers of the calculation endpoints, kept while the catalogs they came from last.

An answer is a pure function of the request (method, path, query string or body and its
content type) and of the catalogs: the same CI job asking the same question gets the same
bytes, so they are rendered once (app/api/wire.py stores them) and later served by
`ServeStoredAnswers` before FastAPI routes the request at all. Each `Catalogs` owns one
cache, so a catalog reload starts an empty one; a request that fails (404, 422) is never
stored. Each worker process has its own cache, which only saves work: losing it changes no
answer.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.request_text import read_body
from app.services.answer_cache import AnswerCache, Key

SCOPE_KEY = "roofcheck.answer_key"  # where ServeStoredAnswers leaves a missed request's key


def key_of(scope: Scope, body: bytes) -> Key:
    """What an answer depends on besides the catalogs: a GET's query string, a POST's body
    as sent and its content type (which decides whether it is read as JSON at all)."""
    if scope["method"] == "GET":
        return ("GET", scope["path"], scope["query_string"])
    content_type = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
    return (scope["method"], scope["path"], content_type + b"\n" + body)


class ServeStoredAnswers:
    """ASGI middleware: answer a GET or POST from the current catalogs' AnswerCache when it
    holds the answer, skipping routing, dependencies and validation (which cost a repeated
    calculation request more than the calculation: docs/performance.md)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        cache: AnswerCache = scope["app"].state.catalogs.answers
        if scope["path"] not in cache.paths:
            await self.app(scope, receive, send)
            return
        body: bytes | None = b""
        if scope["method"] == "POST":
            body, receive = await read_body(receive)
        stored = None
        if body is not None:
            scope[SCOPE_KEY] = key = key_of(scope, body)  # for wire.answer, on a miss
            stored = cache.get(key)
        if stored is None:
            await self.app(scope, receive, send)
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(stored)),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": stored})
