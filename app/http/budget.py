"""CPU-heavy work off the event loop, within a time budget.

A calculation runs in a worker thread, so that the event loop goes on answering other requests
(`/health` among them) while it runs, and the wait for it is bounded: past the budget
(ROOFCHECK_CALCULATION_BUDGET_S) the request answers 503 with Retry-After instead of hanging;
a benchmark table is one calculation a row, so its wait is the budget and
ROOFCHECK_TABLE_ROW_BUDGET_S per row (`table_budget`).
A Python thread cannot be stopped, so the budget bounds the wait, not the work: the work is
bounded by the ranges of the inputs (app/schemas, app/engine/hf_config.py) and by closed forms
in the engine, which keep every calculation in milliseconds; the budget is the backstop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from app.http.responses import RETRY_AFTER_S, StrictJSONResponse

T = TypeVar("T")


class OverBudget(Exception):
    """A calculation ran longer than the time budget."""

    def __init__(self, budget_s: float) -> None:
        super().__init__(f"the calculation took longer than its {budget_s:g} s budget")
        self.budget_s = budget_s


def table_budget(request: Request, rows: int) -> float:
    """The wait for a benchmark table of `rows` rows: the app's budget and each row's
    allowance."""
    budget_s: float = request.app.state.calculation_budget_s
    row_s: float = request.app.state.table_row_budget_s
    return budget_s + rows * row_s


async def within_budget(
    request: Request, work: Callable[[], T], budget_s: float | None = None
) -> T:
    """`work()` run in a worker thread; OverBudget when it takes longer than `budget_s`
    (default: the app's budget; the thread is left to finish, its answer dropped)."""
    if budget_s is None:
        budget_s = request.app.state.calculation_budget_s
    try:
        with anyio.fail_after(budget_s):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise OverBudget(budget_s) from None


async def over_budget(request: Request, exc: Exception) -> StrictJSONResponse:
    """503 with Retry-After for a calculation past its budget."""
    assert isinstance(exc, OverBudget)
    body = {"detail": {"message": f"{exc}; retry later", "type": "over_budget"}}
    return StrictJSONResponse(
        status_code=503, content=body, headers={"Retry-After": str(RETRY_AFTER_S)}
    )
