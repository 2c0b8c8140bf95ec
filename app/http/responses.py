"""The JSON response of every endpoint."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

RETRY_AFTER_S = 5  # a 503's Retry-After: a database back, or a burst of calculations drained


class StrictJSONResponse(JSONResponse):
    """JSON that refuses NaN and infinity instead of emitting invalid JSON."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")
