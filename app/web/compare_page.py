"""The comparison page: one transformer workload on several chips (the answer of GET /compare,
app/services/chip_comparison.py), as a ranked table and a bar chart of realistic tokens/s.

GET /compare itself answers JSON to everyone: its rendered answers are cached by query string
alone (app/api/stored_answers.py), so the page has an address of its own, as /history has
beside /measurements."""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from app.catalog.names import UnknownName
from app.engine import Dtype, EngineError, Phase, Software
from app.http.deps import CatalogsDep
from app.schemas.comparison import CompareQuery, CompareRequest, Comparison
from app.schemas.requests import CalculationRequest
from app.services import planning
from app.services.chip_comparison import compare
from app.web.bars import WIDE, comparison_svg
from app.web.svg import for_page
from app.web.templating import render
from app.web.words import in_words

router = APIRouter(include_in_schema=False)

PATH = "/comparison"
FIELDS = (
    "chips",
    "model",
    "phase",
    "batch",
    "seq_len",
    "dtype",
    "tp",
    "stack",
    "prices",
    "price_per_hour",
)
DEFAULTS = {"phase": str(Phase.DECODE), "stack": str(Software.TYPICAL)}  # the selects' own
EXAMPLE = {"chips": "a100,h100,mi300x", "model": "llama-8b", "batch": "8"}
GENERAL = "form"  # errors no field of the form shows


def _field_errors(exc: ValidationError | UnknownName | EngineError) -> dict[str, str]:
    """Form field -> message (the first for each field); what no field of the form shows is
    named under GENERAL."""
    if isinstance(exc, UnknownName):
        hint = f"; did you mean {', '.join(exc.suggestions)}?" if exc.suggestions else ""
        field = {"chip": "chips", "model": "model"}.get(exc.kind, GENERAL)
        return {field: f"unknown {exc.kind} {exc.name!r}{hint}"}
    if isinstance(exc, ValidationError):
        found = [(str(e["loc"][0]) if e["loc"] else GENERAL, in_words(e)) for e in exc.errors()]
    else:
        found = [(str(getattr(exc, "field", GENERAL)), str(getattr(exc, "message", exc)))]
    errors: dict[str, str] = {}
    for name, message in found:
        if name in FIELDS:
            errors.setdefault(name, message)
        else:
            errors.setdefault(GENERAL, f"{name}: {message}")
    return errors


def _fewest_chips(
    catalogs: CatalogsDep, body: CompareRequest, answer: Comparison
) -> dict[str, str]:
    """Chip id -> the fewest chips the workload needs to fit on it, with their layout, as
    GET /memory-fit answers `min_chips` for it alone ("no layout fits" where none does)."""
    fewest: dict[str, str] = {}
    for row in answer.rows:
        if row.error is not None:
            continue
        request = CalculationRequest(
            chip=row.chip.id,
            catalog_version=body.catalog_version,
            stack=body.stack,
            workload=body.workload,
        )
        fit = planning.memory_fit(catalogs, request)
        layout = ", ".join(f"{k} {v}" for k, v in (fit.min_chips_layout or {}).items())
        fewest[row.chip.id] = f"{fit.min_chips} ({layout})" if fit.min_chips else "no layout fits"
    return fewest


def _page(
    request: Request,
    catalogs: CatalogsDep,
    values: dict[str, str],
    errors: dict[str, str],
    *,
    status: int = 200,
    result: object = None,
    chart: str | None = None,
    fewest: dict[str, str] | None = None,
) -> HTMLResponse:
    context = {
        "fewest": fewest or {},
        "values": values,
        "errors": errors,
        "result": result,
        "chart": chart,
        "chips": [r.entry for r in catalogs.chips().chips.values()],
        "models": [r.entry for r in catalogs.models.models.values()],
        "phase_options": [(str(p), str(p)) for p in Phase],
        "dtype_options": [(str(d), str(d)) for d in Dtype],
        "stack_options": [(str(s), str(s)) for s in Software],
    }
    return render(request, "compare.html", context, status)


@router.get(PATH, response_class=HTMLResponse)
def comparison(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The comparison form; with `chips`, the workload on each chip, ranked, and its chart."""
    given = {k: request.query_params[k].strip() for k in FIELDS if k in request.query_params}
    given = {k: v for k, v in given.items() if v}
    if "chips" not in request.query_params:
        return _page(request, catalogs, DEFAULTS | EXAMPLE, {})
    values = {name: given.get(name, "") for name in FIELDS} | DEFAULTS | given
    try:
        body = CompareQuery.model_validate(given).to_body()
        answer = compare(catalogs, body)
        fewest = _fewest_chips(catalogs, body, answer)
    except UnknownName as exc:
        return _page(request, catalogs, values, _field_errors(exc), status=404)
    except (ValidationError, EngineError) as exc:
        return _page(request, catalogs, values, _field_errors(exc), status=422)
    chart = for_page(partial(comparison_svg, answer), WIDE)
    return _page(request, catalogs, values, {}, result=answer, chart=chart, fewest=fewest)
