"""The browser's routes: the check form and its result, the charts alone as SVG, the store
button, the filtered history and the catalog page."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, Field, ValidationError

from app.catalog.names import UnknownName
from app.columns import MAX_ID
from app.engine import AttentionKernel, Dtype, EngineError, Phase, Software, Unit
from app.engine.compare import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD, DEFAULT_WINDOW, MAX_WINDOW
from app.engine.training import Optimizer
from app.http.deps import CatalogsDep, SessionsDep
from app.security import same_origin
from app.services import planning, recording
from app.web import alarm_page, catalog_pages, compare_page, forms, pages, table_page, trace_page
from app.web.field_values import MAX_CONFIG_CHARS
from app.web.history_chart import Axis
from app.web.svg import Svg
from app.web.templating import render
from app.web.trends import scaling_svg, sweep_svg
from app.web.views import Result, batch_request, compute, roofline_for, scaling_for

router = APIRouter(include_in_schema=False)
router.include_router(trace_page.router)  # /trace: upload a profiler trace
router.include_router(table_page.router)  # /table: paste or upload a benchmark table
router.include_router(compare_page.router)  # /comparison: one workload on several chips
router.include_router(alarm_page.router)  # the workload page's false-alarm button

_ERRORS = (ValidationError, UnknownName, EngineError)
SVG = "image/svg+xml"
_UNITS = {Unit.MATRIX: "tensor cores", Unit.VECTOR: "vector ALUs"}
OPTIMIZER_NAMES = {
    Optimizer.ADAMW: "AdamW",
    Optimizer.ADAM: "Adam",
    Optimizer.SGD_MOMENTUM: "SGD with momentum",
    Optimizer.ADAM_8BIT: "8-bit Adam",
    Optimizer.ADAFACTOR: "Adafactor",
}
KIND_NAMES = {
    "transformer": "Transformer",
    "matmul": "Matmul",
    "elementwise": "Elementwise chain",
    "saxpy": "SAXPY (y = a x + y)",
    "softmax": "Softmax (rows)",
    "layernorm": "LayerNorm (rows)",
    "rmsnorm": "RMSNorm (rows)",
    "attention": "Attention layer",
    "custom": "Custom FLOPs + bytes",
    "copy": "Copy (host <-> device)",
    "input_pipeline": "Input pipeline",
}


def _choices(catalogs: CatalogsDep, values: dict[str, str]) -> dict[str, object]:
    chips = catalogs.chips()
    return {
        "chips": [r.entry for r in chips.chips.values()],
        "models": [r.entry for r in catalogs.models.models.values()],
        "phase_options": [(str(p), str(p)) for p in Phase],
        "dtype_options": [(str(d), str(d)) for d in Dtype],
        "unit_options": [(str(u), f"{u} ({_UNITS[u]})") for u in Unit],
        "optimizer_options": [(str(o), OPTIMIZER_NAMES[o]) for o in Optimizer],
        "stack_options": [(str(s), str(s)) for s in Software],
        "kernel_options": [(str(k), str(k)) for k in AttentionKernel],
        "kinds": [(kind, KIND_NAMES[kind]) for kind in forms.KINDS],
        "kinds_of": forms.KINDS_OF,
        "phases_of": forms.PHASES_OF,
        "covers": forms.COVERS,
        "covers_now": forms.covers(values["kind"], values["phase"]),
        "max_config_chars": MAX_CONFIG_CHARS,
    }


def _form_page(
    request: Request,
    catalogs: CatalogsDep,
    values: dict[str, str],
    errors: dict[str, str],
    result: Result | None = None,
    *,
    status: int | None = None,
    store_errors: dict[str, str] | None = None,
) -> HTMLResponse:
    context = {
        "values": values,
        "errors": errors,
        "result": result,
        "store_errors": store_errors or {},
        "store_labels": forms.STORE_LABELS,
        **_choices(catalogs, values),
    }
    failed = errors or store_errors
    return render(request, "index.html", context, status or (422 if failed else 200))


def _answer_page(request: Request, catalogs: CatalogsDep, values: dict[str, str]) -> HTMLResponse:
    """The form and its result, or the form with each error beside its field (422)."""
    try:
        calculation = forms.calculation(values)
        result = compute(catalogs, calculation, values, forms.latency_bounds(values))
    except _ERRORS as exc:
        return _form_page(request, catalogs, values, forms.errors_of(exc, values["kind"]))
    # a scaling field the curve could not use is reported beside it; the answer stands: 200.
    # Chip counts left as the form offers them are no mistake of the user's: why the curve is
    # not drawn is a note where it would be, not an error at the field
    untouched = all(values.get(n, "") == forms.DEFAULTS[n] for n in forms.SCALING_FIELDS)
    if untouched and result.scaling_errors:
        note = "; ".join(result.scaling_errors.values())
        result = replace(result, scaling_errors={}, scaling_note=note)
        return _form_page(request, catalogs, values, {}, result, status=200)
    return _form_page(request, catalogs, values, result.scaling_errors, result, status=200)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The check form; with query parameters, the form and its result."""
    values = forms.form_values(request.query_params, catalogs)
    if "chip" not in request.query_params:
        return _form_page(request, catalogs, values, {})
    return _answer_page(request, catalogs, values)


@router.post("/", response_model=None)
async def index_post(request: Request, catalogs: CatalogsDep) -> Response:
    """The form as sent (POST, so that a pasted config.json fits): a catalog model's answer
    is a shareable GET URL of the fields that apply (303 there); a pasted config's is
    answered here."""
    async with request.form() as form:  # closes what a multipart body spooled
        given = {k: v for k, v in form.items() if isinstance(v, str)}
    values = forms.form_values(given, catalogs)
    applicable = forms.applicable(values)
    if "config" not in applicable:
        if values.get("kind") == "transformer" and "model" not in applicable:
            applicable["model"] = ""  # cleared: the answer asks for one, never the default's
        return RedirectResponse(f"/?{urlencode(applicable)}", status_code=303)
    return await run_in_threadpool(_answer_page, request, catalogs, values)


def _svg_error(errors: dict[str, str]) -> Response:
    svg = Svg("Cannot draw the chart", height=120)
    for line, (name, message) in enumerate(errors.items()):
        svg.text(16, 30 + 20 * line, f"{name}: {message}", "note")
    return Response(svg.render(), status_code=422, media_type=SVG)


@router.get("/roofline.svg")
def roofline_chart(request: Request, catalogs: CatalogsDep) -> Response:
    """The roofline chart alone: GET /expected-time's query parameters, plus `measured_ms`
    (and `kind` with a kernel's sizes, as the form sends them)."""
    values = forms.form_values(request.query_params, catalogs)
    try:
        svg = roofline_for(catalogs, forms.calculation(values))
    except _ERRORS as exc:
        return _svg_error(forms.errors_of(exc, values["kind"]))
    return Response(svg, media_type=SVG)


@router.get("/batch-sweep.svg")
def batch_sweep_chart(request: Request, catalogs: CatalogsDep) -> Response:
    """The batch-sweep chart alone of a transformer workload (same parameters as /roofline.svg,
    and the latency bound: max_tpot_ms or max_ttft_ms)."""
    values = forms.form_values(request.query_params, catalogs) | {"measured_ms": ""}
    try:
        question = batch_request(forms.calculation(values), forms.latency_bounds(values))
        svg = sweep_svg(planning.optimal_batch(catalogs, question))
    except _ERRORS as exc:
        return _svg_error(forms.errors_of(exc, values["kind"]))
    return Response(svg, media_type=SVG)


@router.get("/scaling.svg")
def scaling_chart(request: Request, catalogs: CatalogsDep) -> Response:
    """The scaling chart alone of a training workload: the form's parameters plus
    `chip_counts` (comma-separated) and `serial_fraction`."""
    values = forms.form_values(request.query_params, catalogs) | {"measured_ms": ""}
    try:
        curve = scaling_for(catalogs, forms.calculation(values), *forms.scaling_of(values))
        svg = scaling_svg(curve)
    except _ERRORS as exc:
        return _svg_error(forms.errors_of(exc, values["kind"]))
    return Response(svg, media_type=SVG)


def _result_or_none(catalogs: CatalogsDep, values: dict[str, str]) -> Result | None:
    """The result of the form's values, or None when they do not make one."""
    try:
        return compute(catalogs, forms.calculation(values), values, forms.latency_bounds(values))
    except _ERRORS:
        return None


@router.post("/save", response_model=None)
async def save(request: Request, catalogs: CatalogsDep, sessions: SessionsDep) -> Response:
    """The store button: record the form's measurement (as POST /measurements does), then
    go to its page. Only from this site's own pages, and only while writes are open."""
    if not same_origin(request):
        message = "The store form must be sent from this site's own page."
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    if request.app.state.write_tokens.owners:
        message = "Storing needs an API token here: POST /measurements with a bearer token."
        return render(request, "error.html", {"title": "Refused", "message": message}, 403)
    form = await request.form()
    values = forms.form_values({k: v for k, v in form.items() if isinstance(v, str)}, catalogs)
    try:
        if not values.get("measured_ms", "").strip():  # the API's words name its two fields
            problems = {"measured_ms": forms.NO_TIME}
        else:
            # the database work runs off the event loop (POST /measurements runs it on
            # asyncio's executor): on the loop it would hold up every other request while it
            # waits for a commit
            stored = await run_in_threadpool(
                recording.record, catalogs, sessions, forms.measurement(values)
            )
            # the stored run, its comparison with the earlier runs first
            return RedirectResponse(f"/measurements/{stored.id}#comparison", status_code=303)
    except _ERRORS as exc:
        problems = forms.errors_of(exc, values["kind"])
    # the errors once, in the store form (at each field and at its top), which the page
    # opens at (/save#store); the check form above keeps what was typed
    # the answer, else that of the workload alone (a bad time is the store form's error)
    result = _result_or_none(catalogs, values) or _result_or_none(
        catalogs, values | {"measured_ms": ""}
    )
    if result is None:  # no answer, hence no store form: the errors at the check form's fields
        return _form_page(request, catalogs, values, problems)
    return _form_page(request, catalogs, values, {}, result, store_errors=problems)


@router.get("/history", response_class=HTMLResponse)
def history(request: Request, catalogs: CatalogsDep, sessions: SessionsDep) -> HTMLResponse:
    """Stored measurements with filters (empty filter fields are ignored)."""
    return pages.measurement_list(request, catalogs, sessions, request.query_params)


class _Compare(BaseModel):
    """The workload page's comparison settings (empty fields dropped)."""

    baseline_id: int | None = Field(None, ge=1, le=MAX_ID)
    baseline_branch: str | None = Field(None, min_length=1, max_length=200)
    threshold: float = Field(DEFAULT_THRESHOLD, gt=0, le=100)
    baseline_window: int = Field(DEFAULT_WINDOW, ge=1, le=MAX_WINDOW)
    confidence: float = Field(DEFAULT_CONFIDENCE, gt=0.5, lt=1)
    axis: Axis = "run"  # the chart's x axis: runs evenly spaced, or their times


@router.get("/history/{workload_key}", response_class=HTMLResponse)
def workload_history(
    request: Request, workload_key: Annotated[str, Path(max_length=64)], sessions: SessionsDep
) -> HTMLResponse:
    """One workload's history page (also GET /workloads/{key} from a browser), with an
    optional baseline (id or branch), window, regression threshold and confidence."""
    given = {k: v.strip() for k, v in request.query_params.items() if v.strip()}
    try:
        settings = _Compare.model_validate(
            {k: given[k] for k in _Compare.model_fields if k in given}
        )
    except ValidationError as exc:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
        return render(request, "error.html", {"title": "Bad comparison", "message": problems}, 422)
    return pages.workload_page(request, sessions, workload_key, **settings.model_dump())


@router.get("/catalog", response_class=HTMLResponse)
def catalog(request: Request, catalogs: CatalogsDep) -> HTMLResponse:
    """The chips side by side, each linking to its page (figures, sources, measured ceilings)."""
    return catalog_pages.chip_index(request, catalogs)
