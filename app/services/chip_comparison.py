"""One transformer workload over several chips: each chip's /expected-time answer, with energy
per token at full board power and, given a price, the cost per million tokens."""

from __future__ import annotations

from app.catalog.loader import ChipCatalogVersion, ChipRecord
from app.catalog.names import UnknownName
from app.engine import InvalidInput, Unsupported
from app.engine.units import HOUR
from app.schemas.answers import ChipRef, ExpectedTime
from app.schemas.comparison import ChipRow, CompareRequest, Comparison
from app.schemas.requests import CalculationRequest, TransformerWorkload
from app.services import expectations
from app.services.catalogs import Catalogs
from app.services.inputs import model_input

MILLION = 1e6

ASSUMPTIONS = [
    "ranked by realistic tokens/s: the chips the workload fits on first, then those it does "
    "not fit on (their figures are for a configuration that cannot run as given)",
    "energy per token = board power x chips / realistic tokens/s: every chip drawing its "
    "maximum board power (the vendor's TDP or TGP) throughout, an upper bound; host, network "
    "and cooling are not counted",
    "cost per million tokens = price per chip-hour / 3600 x chips / realistic tokens/s x 10^6",
]


def _chips(catalog: ChipCatalogVersion, names: list[str]) -> list[ChipRecord]:
    """The chips the names resolve to (UnknownName: 404 with suggestions), each once."""
    records = [catalog.resolve(name) for name in names]
    seen: dict[str, str] = {}
    for name, record in zip(names, records, strict=True):
        if record.entry.id in seen:
            raise InvalidInput(
                "chips", f"{seen[record.entry.id]!r} and {name!r} name the same chip"
            )
        seen[record.entry.id] = name
    return records


def _prices(
    catalog: ChipCatalogVersion, request: CompareRequest, records: list[ChipRecord]
) -> dict[str, float]:
    """USD per chip-hour by chip id: `prices` by any name of a compared chip, else the one
    `price_per_hour`."""
    ids = {record.entry.id for record in records}
    prices = dict.fromkeys(ids, request.price_per_hour) if request.price_per_hour else {}
    for name, price in (request.prices or {}).items():
        try:
            chip_id = catalog.names.resolve(name)
        except UnknownName:
            chip_id = None
        if chip_id not in ids:
            raise InvalidInput("prices", f"{name!r} is not one of the chips compared")
        prices[chip_id] = price
    return prices


def _row(answer: ExpectedTime, power: float | None, price: float | None) -> ChipRow:
    workload = answer.workload
    assert isinstance(workload, TransformerWorkload)
    chips = answer.training.chips if answer.training is not None else workload.tp
    rate = answer.realistic_tokens_per_s
    per_token = None if not rate else chips / rate  # chip-seconds per token
    return ChipRow(
        chip=answer.chip,
        rank=None,
        dtype=workload.dtype,
        chips=chips,
        expected_time_s=answer.expected_time_s,
        realistic_time_s=answer.realistic_time_s,
        realistic_tokens_per_s=rate,
        fits=answer.fits,
        memory_required_bytes=answer.memory_required_bytes,
        memory_available_bytes=answer.memory_available_bytes,
        bound=answer.bound,
        board_power_w=power,
        energy_per_token_j=None if power is None or per_token is None else power * per_token,
        price_per_hour=price,
        cost_per_million_tokens_usd=(
            None if price is None or per_token is None else price / HOUR * per_token * MILLION
        ),
        warnings=answer.warnings,
        notes=[note for note in answer.assumptions if " by default: " in note],
    )


def _ranked(rows: list[ChipRow]) -> list[ChipRow]:
    """Fitting chips first, each group by realistic tokens/s; rows with an error last."""
    scored = [r for r in rows if r.error is None]
    scored.sort(key=lambda r: (r.fits is False, -(r.realistic_tokens_per_s or 0.0)))
    ranked = [r.model_copy(update={"rank": i}) for i, r in enumerate(scored, start=1)]
    return ranked + [r for r in rows if r.error is not None]


def compare(catalogs: Catalogs, request: CompareRequest) -> Comparison:
    """The request's workload on each of its chips, ranked."""
    catalog = catalogs.chips(request.catalog_version)
    records = _chips(catalog, request.chips)
    prices = _prices(catalog, request, records)
    model = model_input(catalogs, request.workload, records[0].chip)
    rows = []
    for record in records:
        entry = record.entry
        try:
            answer = expectations.expected_time(
                catalogs,
                CalculationRequest(
                    chip=entry.id,
                    catalog_version=catalog.version,
                    stack=request.stack,
                    workload=request.workload,
                ),
            )
        except Unsupported as exc:
            ref = ChipRef(id=entry.id, name=entry.name)
            rows.append(ChipRow(chip=ref, rank=None, error=f"{exc.field}: {exc.message}"))
            continue
        power = entry.board_power_w.value if entry.board_power_w else None
        rows.append(_row(answer, power, prices.get(entry.id)))
    return Comparison(
        catalog_version=catalog.version,
        model=model.ref,
        workload=request.workload,
        stack=request.stack,
        rows=_ranked(rows),
        assumptions=ASSUMPTIONS,
    )
