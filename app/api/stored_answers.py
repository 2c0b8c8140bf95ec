"""Rendered answers of the calculation endpoints, kept while the catalogs they came from last.

An answer is a pure function of the request (method, path, query string or body and its
content type) and of the catalogs: the same CI job asking the same question gets the same
bytes. A route renders an answer (`answer`) and stores it; `ServeStoredAnswers`, at the edge
of the app, sends the stored bytes to the next identical request, which then never reaches
FastAPI: what the app adds to its routes (a dependency, an exception handler) applies to
every request that computes an answer, not to one answered from the store. Each `Catalogs`
owns one cache, so a catalog reload starts an empty one; a request that fails (404, 422) is
never stored. Each worker process has its own cache, which only saves work: losing it
changes no answer.
"""

from __future__ import annotations

from fastapi import Request, Response
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.negotiation import wants_page
from app.http.request_text import read_body
from app.services.answer_cache import AnswerCache, Key


def key_of(scope: Scope, body: bytes) -> Key:
    """What an answer depends on besides the catalogs: a GET's query string, a POST's body
    as sent and its content type (which decides whether it is read as JSON at all)."""
    if scope["method"] == "GET":
        return ("GET", scope["path"], scope["query_string"])
    content_type = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
    return (scope["method"], scope["path"], content_type + b"\n" + body)


async def answer(request: Request, cache: AnswerCache | None, calculated: BaseModel) -> Response:
    """`calculated` as a JSON response, stored in `cache` (unless None: an answer that
    depends on more than the request and the catalogs) for the next identical request.

    The route declares its response model, so the OpenAPI schema is the one FastAPI writes;
    the answer, validated when it was built, is sent as pydantic serialises it. Answer models
    refuse NaN and infinity (allow_inf_nan=False), so the JSON is always valid."""
    body = calculated.model_dump_json().encode()
    if cache is not None:
        sent = await request.body() if request.method == "POST" else b""
        cache.put(key_of(request.scope, sent), body)
    return Response(body, media_type="application/json")


class ServeStoredAnswers:
    """ASGI middleware: answer a GET or POST from the current catalogs' AnswerCache when it
    holds the answer; any other request goes on to the app, a browser's GET among them (it
    gets a page: app/web/negotiated_routes.py).

    A POST's body is read here only on a path where answers were stored, and handed on to
    the app as it came."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cache: AnswerCache | None = None
        if scope["type"] == "http" and scope["method"] in ("GET", "POST"):
            browser = scope["method"] == "GET" and wants_page(
                Headers(scope=scope), scope["query_string"]
            )
            cache = None if browser else scope["app"].state.catalogs.answers
        if cache is None or scope["path"] not in cache.paths:
            await self.app(scope, receive, send)
            return
        body: bytes | None = b""
        if scope["method"] == "POST":
            body, receive = await read_body(receive)
        stored = None if body is None else cache.get(key_of(scope, body))
        if stored is None:  # not stored, or the client went away
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(stored))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": stored})
