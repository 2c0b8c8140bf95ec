"""Who may write, and what every response carries: see SECURITY.md for the threat model.

- Write tokens: ROOFCHECK_WRITE_TOKENS="owner:token,owner2:token2" restricts the writing
  endpoints to `Authorization: Bearer <token>`; unset, writes are open (a single-user service).
  Only SHA-256 digests of the tokens are kept in memory, compared in constant time.
- Cross-site request forgery: a browser form post (POST /save) must come from this origin
  (Origin, else Referer, must match the Host; Sec-Fetch-Site must not be cross-site). The Host
  itself is one of ROOFCHECK_ALLOWED_HOSTS (Starlette's TrustedHostMiddleware, app/main.py),
  so a rebound DNS name cannot pose as this origin.
- Security headers on every response; a CSP without inline script; the inline SVG charts'
  one stylesheet is allowed by its hash.
- Request bodies larger than ROOFCHECK_MAX_BODY_BYTES (ROOFCHECK_MAX_TRACE_BYTES for a profiler
  trace, ROOFCHECK_MAX_TABLE_BYTES for a table, ROOFCHECK_MAX_OPS_BYTES for /check's and
  /expected-time's operator lists) get 413 before they are read (uvicorn holds a body to its
  Content-Length; a body without one gets 411).
- An unexpected error is a logged 500 with the same headers, and the connection stays open.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.columns import OWNER_LENGTH

log = logging.getLogger(__name__)


def content_security_policy(inline_styles: Iterable[str]) -> str:
    """The CSP of every response but /docs: no inline script, and of the inline stylesheets
    only `inline_styles`, each allowed by its SHA-256."""
    hashes = "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()}'"
        for style in inline_styles
    )
    return (
        "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
        f"style-src 'self'{hashes}; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'"
    )


# /docs starts Swagger UI (served from the app's own files) with an inline script
_DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self'; "
    "img-src 'self' data:; object-src 'none'; frame-ancestors 'none'"
)
_DOCS = ("/docs",)
HEADERS = {
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    b"referrer-policy": b"same-origin",
}


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True, slots=True)
class WriteTokens:
    """Owners by the SHA-256 digest of their token; empty means writes are open."""

    owners: dict[bytes, str]

    @classmethod
    def parse(cls, spec: str) -> WriteTokens:
        """From "owner:token,..." (ValueError names a malformed entry, never its token)."""
        owners: dict[bytes, str] = {}
        for number, entry in enumerate((e.strip() for e in spec.split(",")), start=1):
            if not entry:
                continue
            owner, _, token = entry.partition(":")
            owner = owner.strip()
            if not owner or len(owner) > OWNER_LENGTH or len(token) < 16:
                raise ValueError(
                    f"ROOFCHECK_WRITE_TOKENS entry {number}: expected owner:token with an "
                    f"owner of 1 to {OWNER_LENGTH} characters and a token of at least 16"
                )
            owners[_digest(token)] = owner
        return cls(owners)

    def owner(self, token: str) -> str | None:
        """The owner of `token`, or None (every digest is compared, in constant time)."""
        found = None
        wanted = _digest(token)
        for digest, owner in self.owners.items():
            if hmac.compare_digest(digest, wanted):
                found = owner
        return found


# declares the bearer token in the OpenAPI schema; a missing or non-bearer one reads as None
_BEARER = HTTPBearer(
    auto_error=False,
    description="A write token of ROOFCHECK_WRITE_TOKENS; needed only when tokens are set.",
)


async def require_writer(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
) -> str | None:
    """The owner of the request's bearer token; 401 without a valid one when tokens are set.

    None when writes are open. Async: it only hashes the token, so a plain `def` would cost a
    hop through the thread pool."""
    tokens: WriteTokens = request.app.state.write_tokens
    if not tokens.owners:
        return None
    owner = None if credentials is None else tokens.owner(credentials.credentials.strip())
    if owner is None:
        raise HTTPException(
            status_code=401,
            detail={"message": "writing needs a valid 'Authorization: Bearer <token>'"},
            headers={"WWW-Authenticate": "Bearer"},
        )
    return owner


WriterDep = Annotated[str | None, Depends(require_writer)]


UNAUTHORIZED: dict[int | str, dict[str, str]] = {  # the routes that take WriterDep document it
    401: {"description": "Writes are restricted and no valid bearer token was given."}
}


def same_origin(request: Request) -> bool:
    """Whether a browser request comes from this site (OWASP's origin verification)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        return False
    return urlsplit(source).netloc == request.headers.get("host")


class Hardening:
    """ASGI middleware: security headers on every response (500s included), their CSP allowing
    the `inline_styles` (the charts' stylesheet), and a cap on request bodies."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        large_bodies: Mapping[str, int] | None = None,
        inline_styles: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.large_bodies = dict(large_bodies or {})  # paths with a cap of their own
        self.csp = content_security_policy(inline_styles)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        csp = (_DOCS_CSP if path in _DOCS else self.csp).encode()
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        chunked = declared is None and b"transfer-encoding" in headers
        if chunked or (declared is not None and not declared.isdigit()):
            await _refuse(send, csp, 411, b"a request body needs a Content-Length")
            return
        cap = self.large_bodies.get(path, self.max_body_bytes)
        if declared is not None and int(declared) > cap:
            message = b"request body larger than %d bytes" % cap
            await _refuse(send, csp, 413, message)
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in HEADERS.items() if k not in names]
                extra.append((b"content-security-policy", csp))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if started:  # too late for a 500: the server drops the connection
                raise
            # answered here, not raised to the server, which would close the connection
            log.exception("unhandled error on %s %s", scope["method"], path)
            await _refuse(send, csp, 500, b"internal error; it has been logged")


async def _refuse(send: Send, csp: bytes, status: int, message: bytes) -> None:
    body = b'{"detail":{"message":"' + message + b'"}}'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"content-security-policy", csp),
        *HEADERS.items(),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
