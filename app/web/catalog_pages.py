"""The catalog's pages: the chips side by side (an index), one page per chip (its figures,
their sources and the ceilings measured on it), the models side by side and one page per
model (its shape, parameter counts, memory per dtype, and links to ask about it)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session, sessionmaker

from app.catalog.names import UnknownName
from app.catalog.schema import ChipEntry, Figure
from app.engine import Dtype
from app.engine.architecture import param_counts
from app.engine.hardware import peak_from_parts
from app.engine.transformer import Precision, kv_bytes_per_token, weight_bytes
from app.services import catalog_views
from app.services.catalogs import Catalogs
from app.web.templating import render

# the dtypes a model's memory is shown in: training's fp32, serving's 16 bits, and the 8- and
# 4-bit weights of quantised serving (embeddings, norms and the head stay 16-bit: Precision)
MEMORY_DTYPES = (Dtype.FP32, Dtype.BF16, Dtype.FP8, Dtype.INT4)
# the chips a model's page offers to compare it on: a generation of each vendor's parts
COMPARE_ON = "a100,h100,h200,mi300x,l40s"
CHECK_ON = "h100"
CHECK_MODEL = "llama-3.1-8b"  # the form's default model, offered on a chip's page


def _missing(request: Request, exc: UnknownName) -> HTMLResponse:
    """A 404 page naming the unknown chip or model, with links to the close names."""
    base = "/chips" if exc.kind == "chip" else "/models"
    context = {
        "title": "Not found",
        "message": f"There is no {exc.kind} {exc.name!r} in the catalog.",
        "suggestions": [(f"{base}/{name}", name) for name in exc.suggestions],
    }
    return render(request, "error.html", context, 404)


def chip_index(request: Request, catalogs: Catalogs, version: str | None = None) -> HTMLResponse:
    """Every chip in one table, newest first, each linking to its page."""
    catalog = catalogs.chips(version)
    context = {
        "catalog": catalog.catalog,
        "version": catalog,
        "summaries": catalog_views.chip_summaries(catalog),
    }
    return render(request, "catalog.html", context)


# what a vendor's compute units are called, in a derivation's words
_UNITS = {"NVIDIA": "SMs", "AMD": "CUs"}


@dataclass(frozen=True, slots=True)
class Derivation:
    """A matrix peak as units x clock x FLOP per cycle, beside the peak the catalog lists."""

    dtype: Dtype
    units: Figure
    unit_name: str
    clock: Figure
    per_cycle: Figure  # dense FLOPs per unit per cycle
    product: float
    listed: Figure


def derivations(entry: ChipEntry) -> list[Derivation]:
    """Each matrix peak the catalog has the parts of, as their product (none without them)."""
    parts, units = entry.peak_derivation, entry.compute_units
    if parts is None or units is None:
        return []
    name = _UNITS.get(entry.vendor, "units")
    return [
        Derivation(
            dtype,
            units,
            name,
            parts.clock_hz,
            per_cycle,
            peak_from_parts(units.value, parts.clock_hz.value, per_cycle.value),
            entry.peak_flops_per_s.matrix[dtype],
        )
        for dtype, per_cycle in parts.matrix_flops_per_cycle_per_unit.items()
    ]


def chip_page(
    request: Request,
    catalogs: Catalogs,
    sessions: sessionmaker[Session] | None,
    name: str,
    version: str | None = None,
) -> HTMLResponse:
    """One chip: each figure with its source and check, the ceilings measured on it (none
    while the database is unreachable), and the sources it cites."""
    catalog = catalogs.chips(version)
    try:
        entry = catalog.resolve(name).entry
    except UnknownName as exc:
        return _missing(request, exc)
    cited = {figure.source for figure in entry.figures().values()}
    if entry.released is not None:
        cited.add(entry.released.source)
    sources = {k: s for k, s in catalog.catalog.sources.items() if k in cited}
    context = {
        "chip": entry,
        "version": catalog,
        "measured": catalog_views.measured_profiles(catalog, sessions).get(entry.id),
        "sources": sources,
        "model": CHECK_MODEL,
        "derivations": derivations(entry),
    }
    return render(request, "chip.html", context)


@dataclass(frozen=True, slots=True)
class Memory:
    """A model's memory in one dtype: all its weights, and what a token adds to the KV cache."""

    dtype: Dtype
    weights_bytes: float
    kv_bytes_per_token: float


def model_index(request: Request, catalogs: Catalogs) -> HTMLResponse:
    """Every model in one table, each linking to its page."""
    return render(request, "models.html", {"models": catalog_views.models(catalogs)})


def model_page(request: Request, catalogs: Catalogs, name: str) -> HTMLResponse:
    """One model: its shape, parameter counts, memory per dtype and links to ask about it."""
    try:
        record = catalogs.models.resolve(name)
    except UnknownName as exc:
        return _missing(request, exc)
    arch = record.arch
    memory = []
    for dtype in MEMORY_DTYPES:
        compute = dtype if dtype in (Dtype.FP32, Dtype.BF16) else Dtype.BF16
        precision = Precision(compute=compute, weights=dtype, kv=dtype)
        memory.append(Memory(dtype, weight_bytes(arch, precision), kv_bytes_per_token(arch, dtype)))
    model = catalog_views.model(catalogs, record.entry.id)
    context = {
        "model": model,
        "counts": param_counts(arch),
        "memory": memory,
        "check_on": CHECK_ON,
        "compare_on": COMPARE_ON,
    }
    return render(request, "model.html", context)
