"""The trace page: upload a torch.profiler trace (multipart) and see each operator beside its
roofline time, sorted by time lost, with the verdict per operator and for the whole, and for
a GPU trace the step's time in parts with the one to attack first (the answer of POST
/check/trace, app/services/trace_checks.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.datastructures import UploadFile

from app.catalog.names import UnknownName
from app.engine import Software
from app.engine.trace_breakdown import NAMES
from app.engine.trace_events import NotATrace, TooManyEvents
from app.http.deps import CatalogsDep
from app.http.isolated import Isolated, OverMemory, OverTime
from app.http.responses import RETRY_AFTER_S
from app.security import same_origin
from app.services import trace_checks
from app.services.trace_devices import DeviceMismatch
from app.web.templating import render

router = APIRouter(include_in_schema=False)
RECORD = (
    "from torch.profiler import ProfilerActivity, profile\n\n"
    "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],\n"
    "             record_shapes=True) as prof:\n"
    "    model(x)\n"
    'prof.export_chrome_trace("trace.json")'
)


def _page(
    request: Request,
    catalogs: CatalogsDep,
    values: dict[str, str],
    *,
    error: str = "",
    status: int = 200,
    result: object = None,
) -> HTMLResponse:
    context = {
        "values": values,
        "error": error,
        "result": result,
        "record": RECORD,
        "chips": [r.entry for r in catalogs.chips().chips.values()],
        "stack_options": [str(s) for s in Software],
        "part_names": {part: name.capitalize() for part, name in NAMES.items()},
    }
    return render(request, "trace.html", context, status)


@router.get("/trace", response_class=HTMLResponse)
def trace_form(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The upload form."""
    values = {"chip": "", "stack": str(Software.EAGER), "allow_device_mismatch": ""}
    return _page(request, catalogs, values)


@router.post("/trace", response_class=HTMLResponse)
async def trace_result(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The uploaded trace's table, or the form with what is wrong. Only from this site's own
    page: another site's page could make a visitor's browser post a trace (CPU spent)."""
    if not same_origin(request):
        message = "The trace form must be sent from this site's own page."
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    async with request.form(max_files=1, max_fields=10) as form:  # closes the upload
        values = {
            name: value.strip()[:100] if isinstance(value := form.get(name), str) else ""
            for name in ("chip", "stack")
        }
        values["allow_device_mismatch"] = "true" if form.get("allow_device_mismatch") else ""
        upload = form.get("trace")
        body = await upload.read() if isinstance(upload, UploadFile) else None
    stack = next((s for s in Software if s == values["stack"]), None)
    if not values["chip"] or stack is None:
        return _page(request, catalogs, values, error="Give a chip and a stack.", status=422)
    if body is None:
        return _page(request, catalogs, values, error="Choose a trace file to upload.", status=422)
    try:
        work = trace_checks.work(
            catalogs,
            values["chip"],
            stack,
            allow_device_mismatch=bool(values["allow_device_mismatch"]),
        )
        analyses: Isolated = request.app.state.traces
        result = await analyses.run(work, body)
    except UnknownName as error:
        hint = f" (did you mean {', '.join(error.suggestions)}?)" if error.suggestions else ""
        return _page(
            request, catalogs, values, error=f"Unknown chip {error.name!r}{hint}.", status=404
        )
    except (TooManyEvents, OverMemory) as error:
        return _page(request, catalogs, values, error=str(error), status=413)
    except OverTime as error:
        page = _page(request, catalogs, values, error=str(error), status=503)
        page.headers["Retry-After"] = str(RETRY_AFTER_S)
        return page
    except (NotATrace, DeviceMismatch) as error:
        return _page(request, catalogs, values, error=str(error), status=422)
    return _page(request, catalogs, values, result=result)
