"""Where POST /check/trace and the /trace page judge a profiler trace: in a process of its own,
within the trace's budget of time and memory (app/http/isolated.py)."""

from __future__ import annotations

from app.engine.trace_events import SMALLER
from app.http.isolated import Isolated, Limits
from app.services import trace_checks


def analyses(budget_s: float, memory_bytes: int, slots: int) -> Isolated:
    """The app's trace analyses (app.state.traces), run by trace_checks.check:
    ROOFCHECK_TRACE_BUDGET_S, ROOFCHECK_TRACE_MEMORY_BYTES and ROOFCHECK_TRACE_SLOTS."""
    limits = Limits(budget_s=budget_s, memory_bytes=memory_bytes, slots=slots)
    return Isolated(limits, trace_checks.__name__, "the trace's analysis", SMALLER)
