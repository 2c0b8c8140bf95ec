"""NUL characters refused in every request, before any route reads it: a 422 naming where.

PostgreSQL cannot store a NUL in a text or JSON column (SQLite can), so a NUL in a label, a
list filter or a path once reached the database and answered 500 there, and 200 on SQLite.
One check here answers both backends alike: the path and each query parameter of every
request, and each string (or key) of a JSON or form body, but the bodies that are never
stored (`unstored` paths: a profiler trace, up to 32 MiB, whose analysis keeps nothing). A
body is parsed only when its bytes may hold a NUL (a raw 0x00, JSON's \\u0000, a form's %00:
scans in C), and then in a worker thread, off the event loop.

Bodies are read here, first (they are capped at ROOFCHECK_MAX_BODY_BYTES before), at a
minimum rate: a body must have arrived, at each moment, at ROOFCHECK_BODY_MIN_RATE bytes per
second after a grace of ROOFCHECK_BODY_TIMEOUT_S. A client that sends too slowly, or sends
half a body and stalls, gets 408, and its connection is closed, rather than holding it for as
long as it likes; a big body on a slow but steady link arrives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qsl

import anyio
import anyio.to_thread
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
    """Where a body that may hold a NUL holds one (parsed: bounded by the body cap, but run
    in a worker thread all the same)."""
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


def located_nul(scope: Scope) -> list[str | int] | None:
    """Where the request's path or query holds a NUL character, as a 422's `loc`; None when
    nowhere."""
    if NUL in scope["path"]:
        return ["path"]
    if b"%00" in scope["query_string"] and (found := _in_pairs(scope["query_string"], "query")):
        return found
    return None


class TooSlow(Exception):
    """A request body arrived slower than its minimum rate; the message says how slowly."""


class RefuseBadText:
    """ASGI middleware: a request with a NUL character anywhere (but in the body of an
    `unstored` path) gets a 422 naming where; a body that arrives slower than `min_rate` bytes
    per second after a grace of `grace_s` (a slow or stalled client holding a connection),
    408."""

    def __init__(
        self, app: ASGIApp, grace_s: float, min_rate: float, unstored: Collection[str] = ()
    ) -> None:
        self.app = app
        self.grace_s, self.min_rate = grace_s, min_rate
        self.unstored = frozenset(unstored)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: bytes | None = None
        if scope["method"] in ("POST", "PUT", "PATCH"):
            try:
                messages = await receive_body(receive, self.grace_s, self.min_rate)
            except TooSlow as error:
                await _answer(send, 408, {"detail": {"message": str(error)}}, close=True)
                return
            receive = _replay(messages, receive)
            if scope["path"] not in self.unstored:
                body = b"".join(m.get("body", b"") for m in messages)
        where = located_nul(scope)
        if where is None and body and any(marker in body for marker in _MAY_HOLD_NUL):
            content_type = dict(scope["headers"]).get(b"content-type", b"")
            where = await anyio.to_thread.run_sync(_in_body, body, content_type)
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


async def receive_body(receive: Receive, grace_s: float, min_rate: float) -> list[Message]:
    """The request body's messages, up to the last (or to the client's going away); TooSlow
    when the next one is not there by `grace_s` plus one second per `min_rate` bytes received.
    """
    messages: list[Message] = []
    received = 0
    started = anyio.current_time()
    while True:
        with anyio.CancelScope(deadline=started + grace_s + received / min_rate) as waiting:
            message = await receive()
        if waiting.cancelled_caught:
            elapsed = anyio.current_time() - started
            raise TooSlow(
                f"the request body arrived too slowly: {received} bytes in {elapsed:.1f} s, "
                f"under {min_rate:g} bytes/s after a grace of {grace_s:g} s"
            )
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages
        received += len(message.get("body", b""))


async def read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None if the client went away first), and a `receive` that
    hands the app the same messages again (for a middleware inside this one's, which bounds
    the time the body takes)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, _replay(messages, receive)
        if not message.get("more_body", False):
            body = b"".join(m.get("body", b"") for m in messages)
            return body, _replay(messages, receive)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that hands the app `messages` again, then the client's own."""

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay
