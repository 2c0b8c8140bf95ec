"""The workload page's false-alarm button: mark the alarm the gate raised on one of its runs
as false (as POST /measurements/{id}/false-alarm does), then back to the gate's record."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app.catalog.names import UnknownName
from app.columns import MAX_ID
from app.http.deps import SessionsDep
from app.security import same_origin
from app.services import alarms
from app.web.templating import render

router = APIRouter(include_in_schema=False)
NOTE_LENGTH = 2_000  # characters of a note kept, as the API's body allows


@router.post("/history/{workload_key}/false-alarm", response_model=None)
async def mark_false(
    request: Request,
    workload_key: Annotated[str, Path(max_length=64)],
    sessions: SessionsDep,
) -> Response:
    """Mark a run's alarm false, from this site's own workload page only (another site's page
    could make a visitor's browser post it) and only while writes are open (with write tokens
    a browser form has no token to send: the API takes it)."""
    if not same_origin(request):
        message = "The false-alarm form must be sent from this site's own page."
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    if request.app.state.write_tokens.owners:
        message = (
            "Marking a false alarm needs an API token here: POST "
            "/measurements/{id}/false-alarm with a bearer token."
        )
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    form = await request.form(max_fields=5)
    given, note = form.get("measurement_id"), form.get("note")
    if not (isinstance(given, str) and given.isdigit() and 1 <= int(given) <= MAX_ID):
        message = f"measurement_id: a stored run's id, 1 to {MAX_ID}."
        return render(request, "error.html", {"title": "Bad request", "message": message}, 422)
    text = note.strip()[:NOTE_LENGTH] if isinstance(note, str) and note.strip() else None
    try:
        # off the event loop, as every write (it waits for a commit)
        await run_in_threadpool(alarms.mark_false, sessions, int(given), None, text)
    except (UnknownName, alarms.NoAlarm) as error:
        message = getattr(error, "message", str(error))
        return render(request, "error.html", {"title": "Not marked", "message": message}, 409)
    return RedirectResponse(f"/history/{workload_key}#gate-record", status_code=303)
