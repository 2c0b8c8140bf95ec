"""The Jinja2 environment of the pages (templates/ at the project root) and its filters."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app import formatting as fmt
from app.schemas.requests import without_ignored_training
from app.web import words

ROOT = Path(__file__).resolve().parent.parent.parent
STATIC = Path(__file__).resolve().parent.parent / "static"


def _directory() -> Path:
    """templates/ beside the app package, else in the working directory (installed copies)."""
    for candidate in (ROOT / "templates", Path.cwd() / "templates"):
        if candidate.is_dir():
            return candidate
    return ROOT / "templates"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}" if abs(value) >= 0.1 else f"{value:.1%}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _workload(workload: dict[str, Any]) -> str:
    """A stored workload in one line, in words: its model and phase or kind, then its fields."""
    if workload.get("kind") == "transformer":
        workload = without_ignored_training(workload, workload.get("phase"))
    return words.workload(workload)


def _words(value: object) -> str:
    return str(value).replace("_", " ")


VERDICT_WORDS = {
    "does_not_fit": "Does not fit: this workload cannot run as described on this chip.",
    "cache_resident": "Cache-resident: faster than the memory roofline because the working set "
    "stays in the chip's cache between runs.",
    "faster_than_roofline": "Faster than the hardware allows: check the measurement.",
    "near_roofline": "Near the roofline: this runtime makes sense.",
    "overhead_bound": "Overhead-bound: fixed costs set this runtime, as they do for work this "
    "small.",
    "room_to_improve": "Slower than the roofline: there is room to improve.",
    "order_of_magnitude_slower": "An order of magnitude slower than the roofline.",
}


templates = Jinja2Templates(directory=_directory())
templates.env.filters.update(
    seconds=fmt.seconds,
    bytes=fmt.bytes_,
    flops=fmt.flops,
    rate=fmt.rate,
    percent=_percent,
    signed=_signed,
    when=_when,
    words=_words,
    workload=_workload,
    g3=fmt.number,
    count=words.number,
    plural=words.plural,
    query=lambda params: urlencode({k: v for k, v in params.items() if v not in ("", None)}),
)


templates.env.globals["verdict_words"] = VERDICT_WORDS


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """The template `name` rendered with `context` as an HTML response."""
    return templates.TemplateResponse(request, name, context, status_code=status)
