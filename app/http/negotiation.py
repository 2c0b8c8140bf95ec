"""Content negotiation: the API's GET addresses answer JSON, or a page to a browser."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

# `?format=json` asks for the JSON whatever the Accept header says: a page's "JSON" link,
# which a browser follows with its own Accept header
FORMAT = "format"


def wants_html(headers: Mapping[str, str]) -> bool:
    """True when the Accept header prefers text/html over application/json (a browser).

    Ties (`*/*`, no header) answer JSON, the API's default.
    """
    ranks: list[tuple[str, float]] = []
    for part in headers.get("accept", "").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        ranks.append((media.lower(), q))

    def quality(media: str) -> float:
        kind = media.split("/", maxsplit=1)[0] + "/*"
        for candidate in (media, kind, "*/*"):
            found = [q for m, q in ranks if m == candidate]
            if found:
                return max(found)
        return 0.0

    return quality("text/html") > quality("application/json")


def json_asked(query_string: bytes | str) -> bool:
    """True when the query says `format=json` (a page's "JSON" link)."""
    query = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    return (FORMAT, "json") in parse_qsl(query)


def wants_page(headers: Mapping[str, str], query_string: bytes | str) -> bool:
    """True when the request is a browser's that did not ask for the JSON by its address."""
    return wants_html(headers) and not json_asked(query_string)
