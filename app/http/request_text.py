"""NUL characters refused in every request, before any route reads it: a 422 naming where.

PostgreSQL cannot store a NUL in a text or JSON column (SQLite can), so a NUL in a label, a
list filter or a path once reached the database and answered 500 there, and 200 on SQLite.
One check here, for every field of every endpoint and page, answers both backends alike: the
path, each query parameter, and each string (or key) of a JSON or form body. A body is parsed
only when its bytes may hold a NUL (a raw 0x00, JSON's \\u0000, a form's %00).

Bodies are read whole here, first (they are capped at ROOFCHECK_MAX_BODY_BYTES before), and
within ROOFCHECK_BODY_TIMEOUT_S: a client that sends half a body and stalls gets 408, and its
connection is closed, rather than holding it for as long as it likes.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NUL = "\x00"
MESSAGE = "NUL characters are not allowed"
_MAY_HOLD_NUL = (b"\x00", b"\\u0000", b"%00")
_JSON = re.compile(rb"application/([\w.-]+\+)?json\s*(;|$)", re.IGNORECASE)


def _in(parsed: Any) -> list[str | int] | None:
    """Where in a parsed JSON body a string holds a NUL (a key holding one: its object, so that
    the NUL is not echoed); walked without recursion, however deep the nesting."""
    stack: list[tuple[Any, list[str | int]]] = [(parsed, ["body"])]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, str) and NUL in node:
            return loc
        if isinstance(node, dict):
            if any(NUL in key for key in node):
                return loc
            stack.extend((value, [*loc, key]) for key, value in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((value, [*loc, i]) for i, value in reversed(list(enumerate(node))))
    return None


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
    except (ValueError, RecursionError):  # not JSON: a raw NUL is refused, the rest left to
        return ["body"] if b"\x00" in body else None  # the routes
    return _in(parsed)


def is_json(content_type: bytes) -> bool:
    """Whether a Content-Type names JSON: application/json, or a +json type."""
    return _JSON.match(content_type) is not None


def located_nul(scope: Scope, body: bytes) -> list[str | int] | None:
    """Where the request holds a NUL character, as a 422's `loc`; None when nowhere."""
    if NUL in scope["path"]:
        return ["path"]
    if b"%00" in scope["query_string"] and (found := _in_pairs(scope["query_string"], "query")):
        return found
    content_type = dict(scope["headers"]).get(b"content-type", b"")
    return _in_body(body, content_type) if body else None


class RefuseBadText:
    """ASGI middleware: a request with a NUL character anywhere gets a 422 naming where; a
    body that takes longer than `body_timeout_s` to arrive (a slow or stalled client holding a
    connection), 408."""

    def __init__(self, app: ASGIApp, body_timeout_s: float) -> None:
        self.app = app
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: bytes | None = b""
        if scope["method"] in ("POST", "PUT", "PATCH"):
            try:
                with anyio.fail_after(self.body_timeout_s):
                    body, receive = await read_body(receive)
            except TimeoutError:
                message = f"the request body took longer than {self.body_timeout_s:g} s to arrive"
                await _answer(send, 408, {"detail": {"message": message}}, close=True)
                return
        where = located_nul(scope, body or b"")
        if where is None:
            await self.app(scope, receive, send)
            return
        await _answer(send, 422, {"detail": [{"loc": where, "msg": MESSAGE, "type": "string_nul"}]})


async def _answer(send: Send, status: int, content: dict[str, Any], close: bool = False) -> None:
    body = json.dumps(content).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if close:  # the rest of the request may still come: it cannot be read as the next one
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
