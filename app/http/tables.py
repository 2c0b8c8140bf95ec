"""A benchmark table judged off the event loop, for the JSON route (POST /check/table) and the
page (/table) alike: read within the calculation budget, then judged (and its answer rendered,
as the caller does it) within the budget and each row's allowance (app/http/budget.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from fastapi import Request

from app.http.budget import table_budget, within_budget
from app.services import table

T = TypeVar("T")


async def judged_table(
    request: Request, body: bytes, media: str, judge: Callable[[table.Table], T]
) -> T:
    """`body` (`media` "csv" or "json") read, then handed to `judge`, in worker threads.
    table.TableError (TooManyRows among them) on a body that is no table, OverBudget past
    the wait, and what `judge` raises."""
    parsed = await within_budget(request, partial(table.read, body, media))
    return await within_budget(
        request, partial(judge, parsed), table_budget(request, len(parsed.rows))
    )
