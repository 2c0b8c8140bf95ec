"""NUL characters refused in every request, before any route reads it: a 422 naming where.

PostgreSQL cannot store a NUL in a text or JSON column (SQLite can), so a NUL in a label, a
list filter or a path once reached the database and answered 500 there, and 200 on SQLite.
One check here, for every field of every endpoint and page, answers both backends alike: the
path, each query parameter, and each string (or key) of a JSON or form body. Bodies are read
whole only when their bytes may hold a NUL (a raw 0x00, JSON's \\u0000, a form's %00).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NUL = "\x00"
MESSAGE = "NUL characters are not allowed"
_MAY_HOLD_NUL = (b"\x00", b"\\u0000", b"%00")


def _in(node: Any, loc: list[str | int]) -> Iterator[list[str | int]]:
    """Where in a parsed JSON value a string holds a NUL (a key holding one: its object, so
    that the NUL is not echoed)."""
    if isinstance(node, str):
        if NUL in node:
            yield loc
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from ([loc] if NUL in key else _in(value, [*loc, key]))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _in(value, [*loc, index])


def _in_pairs(encoded: bytes, where: str) -> list[str | int] | None:
    """The first name of url-encoded pairs whose value holds a NUL ([where] alone for a name
    that holds one)."""
    for name, value in parse_qsl(encoded.decode("latin-1"), keep_blank_values=True):
        if NUL in name:
            return [where]
        if NUL in value:
            return [where, name]
    return None


def _in_body(body: bytes, content_type: bytes) -> list[str | int] | None:
    if not any(marker in body for marker in _MAY_HOLD_NUL):
        return None
    if content_type.startswith(b"application/x-www-form-urlencoded"):
        return _in_pairs(body, "body")
    try:
        parsed = json.loads(body)
    except ValueError:  # not JSON: a raw NUL anywhere is refused, anything else left to routes
        return ["body"] if b"\x00" in body else None
    return next(_in(parsed, ["body"]), None)


def located_nul(scope: Scope, body: bytes) -> list[str | int] | None:
    """Where the request holds a NUL character, as a 422's `loc`; None when nowhere."""
    if NUL in scope["path"]:
        return ["path"]
    if b"%00" in scope["query_string"] and (found := _in_pairs(scope["query_string"], "query")):
        return found
    content_type = dict(scope["headers"]).get(b"content-type", b"")
    return _in_body(body, content_type) if body else None


class RefuseNul:
    """ASGI middleware: a request with a NUL character anywhere gets a 422 naming where."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: bytes | None = b""
        if scope["method"] in ("POST", "PUT", "PATCH"):
            body, receive = await read_body(receive)
        where = located_nul(scope, body or b"")
        if where is None:
            await self.app(scope, receive, send)
            return
        detail = [{"loc": where, "msg": MESSAGE, "type": "string_nul"}]
        content = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(content)),
        ]
        await send({"type": "http.response.start", "status": 422, "headers": headers})
        await send({"type": "http.response.body", "body": content})


async def read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None if the client went away first), and a `receive` that
    hands the app the same messages again."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            body = None
            break
        if not message.get("more_body", False):
            body = b"".join(m.get("body", b"") for m in messages)
            break

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay
