"""Content negotiation: the measurement endpoints answer JSON, or a page to a browser."""

from __future__ import annotations

from collections.abc import Mapping


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
