"""A benchmark table judged off the event loop, for the JSON route (POST /check/table) and the
page (/table) alike: read within the calculation budget, then judged, and its answer rendered
as the caller renders it, within the budget and each row's allowance (app/http/budget.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from fastapi import Request

from app.engine import Software
from app.http.budget import table_budget, within_budget
from app.schemas.table_bodies import TableCheck
from app.services import table
from app.services.catalogs import Catalogs

T = TypeVar("T")


async def judged_table(
    request: Request,
    catalogs: Catalogs,
    body: bytes,
    media: str,
    question: tuple[str, Software, str | None],
    *,
    render: Callable[[TableCheck], T],
) -> T:
    """`body` (`media` "csv" or "json") judged on the (chip, stack, catalog version) of
    `question` and handed to `render`, in worker threads. table.TableError (TooManyRows
    among them) on a body that is no table, UnknownName on an unknown chip, OverBudget past
    the wait."""
    parsed = await within_budget(request, partial(table.read, body, media))
    chip, stack, catalog_version = question

    def work() -> T:
        return render(table.check_table(catalogs, parsed, chip, stack, catalog_version))

    return await within_budget(request, work, table_budget(request, len(parsed.rows)))
