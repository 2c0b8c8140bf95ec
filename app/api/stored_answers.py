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

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.request_text import read_body
from app.services.answer_cache import AnswerCache, Key

# an endpoint computed without FastAPI's routing: given the request and its body, its
# response, or None for one it leaves to the route
Direct = Callable[[Request, bytes], Awaitable[Response | None]]

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
    calculation request more than the calculation: docs/performance.md).

    A request that is not stored is computed right here when `calculate` (method and path ->
    `Direct`, app/api/calculation_routes.py's and a stored measurement's,
    app/api/measurement_routes.py) holds its endpoint: a GET by its route's own endpoint,
    which parses the query itself and takes no dependency, a POST when its JSON body
    validates. FastAPI's routing would add its per-request exit stacks, dependency solving
    and exception wrapping (about 45 µs of a 400 µs /check, 150 µs of a POST, a third of a
    stored measurement's CPU under load).
    An error raised is answered by the app's exception handlers as FastAPI would answer it
    (`_handled`); anything else (HEAD, a POST whose body does not validate, other paths) goes
    through FastAPI."""

    def __init__(self, app: ASGIApp, calculate: Mapping[tuple[str, str], Direct] | None = None):
        self.app = app
        self.calculate = dict(calculate or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        cache: AnswerCache = scope["app"].state.catalogs.answers
        endpoint = self.calculate.get((scope["method"], scope["path"]))
        if endpoint is None and scope["path"] not in cache.paths:
            await self.app(scope, receive, send)
            return
        body: bytes | None = b""
        if scope["method"] == "POST":
            body, receive = await read_body(receive)
        if body is None:  # the client went away
            await self.app(scope, receive, send)
            return
        scope[SCOPE_KEY] = key = key_of(scope, body)  # for wire.answer, on a miss
        stored = cache.get(key) if scope["path"] in cache.paths else None
        if stored is not None:
            await _send_json(send, stored)
            return
        response = None
        if endpoint is not None:
            request = Request(scope, receive)
            try:
                response = await endpoint(request, body)
            except Exception as error:  # answered as FastAPI would, or raised again
                response = await _handled(request, error)
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)


async def _send_json(send: Send, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _handled(request: Request, error: Exception) -> Response:
    """The app's answer to `error`, found as Starlette's ExceptionMiddleware finds it: an
    HTTPException's status code first, then the error's classes from the most derived. An
    error no handler takes is raised again, for the server-error handler (a 500)."""
    handlers = request.app.exception_handlers
    handler = handlers.get(error.status_code) if isinstance(error, HTTPException) else None
    for cls in type(error).__mro__:
        if handler is not None or cls is Exception:
            break
        handler = handlers.get(cls)
    if handler is None:
        raise error
    response = handler(request, error)
    return cast(Response, await response if inspect.isawaitable(response) else response)
