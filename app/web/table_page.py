"""The benchmark-table page: paste a table or upload its file, and see the answer of POST
/check/table: the summary, one roofline chart with every row as a point (app/web/table_chart.py)
and the rows ranked by time lost, bad rows in place."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.datastructures import UploadFile

from app.catalog.names import UnknownName
from app.engine import Software
from app.http.budget import OverBudget
from app.http.deps import CatalogsDep
from app.http.responses import RETRY_AFTER_S
from app.http.tables import judged_table
from app.schemas.requests import STACK_DEFAULT
from app.schemas.table_bodies import TableCheck, TableRow
from app.security import same_origin
from app.services import table
from app.services.catalogs import Catalogs
from app.web.svg import for_page
from app.web.table_chart import drawn, table_svg
from app.web.templating import render

router = APIRouter(include_in_schema=False)
SHOWN = 500  # the ranked rows a page lists (and as many bad rows): the JSON has every row
EXAMPLE = (
    "label,M,N,K,dtype,ms\n"
    "square,4096,4096,4096,bf16,0.5\n"
    "skinny,16,4096,4096,bf16,0.05;0.052;0.049\n"
)


@dataclass(frozen=True, slots=True)
class Judged:
    """A table's answer as the page shows it: the answer, its chart (drawn for a desktop and a
    phone), its judged rows ranked (the first SHOWN) and its bad rows (the first SHOWN)."""

    answer: TableCheck
    chart: str
    ranked: list[TableRow]
    bad: list[TableRow]
    undrawn: int  # judged rows without FLOPs: no place on the chart's log axis


def _judged(answer: TableCheck, catalogs: Catalogs) -> Judged:
    chip = catalogs.chips(answer.catalog_version).resolve(answer.chip.id).chip
    ranked = sorted((r for r in answer.rows if r.rank is not None), key=lambda r: r.rank or 0)
    chart = for_page(lambda width: table_svg(answer.rows, chip.name, chip.memory_bandwidth, width))
    return Judged(
        answer,
        chart,
        ranked[:SHOWN],
        [r for r in answer.rows if r.error is not None][:SHOWN],
        undrawn=len(ranked) - len(drawn(ranked)),
    )


def _page(
    request: Request,
    catalogs: CatalogsDep,
    values: dict[str, str],
    *,
    error: str = "",
    status: int = 200,
    result: Judged | None = None,
) -> HTMLResponse:
    context = {
        "values": values,
        "error": error,
        "result": result,
        "shown": SHOWN,
        "example": EXAMPLE,
        "chips": [r.entry for r in catalogs.chips().chips.values()],
        "stack_options": [str(s) for s in Software],
    }
    return render(request, "table.html", context, status)


@router.get("/table", response_class=HTMLResponse)
def table_form(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The paste-or-upload form."""
    values = {"chip": "", "stack": str(STACK_DEFAULT), "text": ""}
    return _page(request, catalogs, values)


def _media(text: bytes, name: str) -> str:
    """ "json" for a .json file or a pasted JSON list, else "csv"."""
    if name.lower().endswith(".json") or text.lstrip().startswith(b"["):
        return "json"
    return "csv"


@router.post("/table", response_class=HTMLResponse)
async def table_result(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The table judged, or the form with what is wrong. Only from this site's own page:
    another site's page could make a visitor's browser post a table (CPU spent)."""
    if not same_origin(request):
        message = "The table form must be sent from this site's own page."
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    # the pasted text is a form field: allowed as large as an uploaded table
    cap = request.app.state.max_table_bytes
    async with request.form(max_files=1, max_fields=10, max_part_size=cap) as form:
        values = {
            name: value.strip()[:100] if isinstance(value := form.get(name), str) else ""
            for name in ("chip", "stack")
        }
        pasted = form.get("text")
        values["text"] = pasted if isinstance(pasted, str) else ""
        upload = form.get("file")
        uploaded = await upload.read() if isinstance(upload, UploadFile) else b""
        name = upload.filename or "" if isinstance(upload, UploadFile) else ""
    stack = next((s for s in Software if s == values["stack"]), None)
    if not values["chip"] or stack is None:
        return _page(request, catalogs, values, error="Give a chip and a stack.", status=422)
    if uploaded and values["text"].strip():
        error = "Paste the table or choose its file, not both."
        return _page(request, catalogs, values, error=error, status=422)
    body = uploaded or values["text"].encode()
    if not body.strip():
        error = "Paste a table (CSV with a header, or a JSON list) or choose its file."
        return _page(request, catalogs, values, error=error, status=422)

    def judge(parsed: table.Table) -> Judged:
        return _judged(table.check_table(catalogs, parsed, values["chip"], stack), catalogs)

    try:
        result = await judged_table(request, body, _media(body, name), judge)
    except UnknownName as error:
        hint = f" (did you mean {', '.join(error.suggestions)}?)" if error.suggestions else ""
        return _page(
            request, catalogs, values, error=f"Unknown chip {error.name!r}{hint}.", status=404
        )
    except table.TooManyRows as error:
        return _page(request, catalogs, values, error=str(error), status=413)
    except table.TableError as error:
        return _page(request, catalogs, values, error=f"Not a table: {error}.", status=422)
    except OverBudget as error:
        page = _page(request, catalogs, values, error=f"{error}; retry later.", status=503)
        page.headers["Retry-After"] = str(RETRY_AFTER_S)
        return page
    return _page(request, catalogs, values, result=result)
