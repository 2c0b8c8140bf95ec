"""A benchmark table judged row by row: each row's kernel placed on the chip's roofline and its
measured time judged as POST /check judges it (the same engine calls: `kernel_work`,
`place_kernel`, `mean_time`, and `stand`, the verdict of `judge` without its advice), ranked by
the time lost (docs/api.md, "Check a benchmark table").

A row is judged on its own: averaging times over shapes would hide the slow ones. Each row
computes what its line of the answer holds: the chip is resolved and the columns read once
for the table, and a row's repeats are averaged, not summarised (no spread is answered), and
judged without the prose of advice (a table's answer is its figures).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.engine import Chip, Roofline, Software, Verdict, place_kernel
from app.engine.compare import mean_time
from app.engine.errors import InvalidInput, Unsupported
from app.engine.units import TERA
from app.engine.verdict import stand
from app.schemas.answers import PeakUsed
from app.schemas.requests import KernelWorkload
from app.schemas.table_bodies import (
    ALIASES,
    COLUMNS,
    KIND,
    KINDS,
    LABEL,
    MAX_ROWS,
    SECONDS,
    TFLOPS,
    TFLOPS_VALUE,
    TIMES,
    WORKLOAD_FIELDS,
    RowError,
    TableCheck,
    TableRow,
    TableSummary,
    WorstRow,
)
from app.services.catalogs import Catalogs
from app.services.inputs import chip_ref, kernel_evaluations, kernel_work

WORST = 5
_SEPARATORS = re.compile(r"[;\s]+")  # between repeats in one cell, and op names
_KIND_HINT = (
    "give a kind column (" + ", ".join(KINDS) + "), or m, n and k (a matmul), heads (attention) "
    "or flops and bytes (custom)"
)


class TableError(Exception):
    """A body that is no table at all: 422 on the body."""


class TooManyRows(TableError):
    """A table of more rows than MAX_ROWS: 413."""


@dataclass(frozen=True, slots=True)
class Table:
    """The columns as the table names them, in order, and each row's cells by column."""

    columns: list[str]
    rows: list[Mapping[str, Any] | None]  # None: a JSON element that is not an object


class _Bad(Exception):
    """A row that cannot be judged: the column (as the table names it) and why."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column, self.message = column, message


def read(body: bytes, media: str) -> Table:
    """The table in `body`: CSV with a header (`media` "csv") or a JSON list of objects."""
    if media == "json":
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise TableError(f"not JSON: {error}") from None
        if not isinstance(parsed, list):
            raise TableError("a JSON table is a list of rows, each an object of columns")
        _count(len(parsed))
        columns = list(dict.fromkeys(c for row in parsed if isinstance(row, dict) for c in row))
        return Table(columns, [row if isinstance(row, dict) else None for row in parsed])
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TableError("the table is not UTF-8 text") from None
    lines = (row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row))
    try:
        header = next(lines, None)
        if header is None:
            raise TableError("the table is empty: a CSV table starts with its header")
        if blank := [str(i + 1) for i, name in enumerate(header) if not name.strip()]:
            raise TableError(f"the header names no column {', '.join(blank)}")
        rows: list[Mapping[str, Any] | None] = []
        for cells in lines:
            _count(len(rows) + 1)
            if len(cells) > len(header):
                rows.append({"": f"{len(cells)} cells, the header has {len(header)}"})
            else:
                rows.append(dict(zip(header, cells, strict=False)))
    except csv.Error as error:
        raise TableError(f"not CSV: {error}") from None
    return Table(header, rows)


def _count(rows: int) -> None:
    if rows > MAX_ROWS:
        raise TooManyRows(f"more than {MAX_ROWS:,} rows: send the table in parts")


def _canonical(column: str) -> str | None:
    """The known column `column` names (without regard to case, spaces or hyphens)."""
    name = column.strip().lower().replace(" ", "_").replace("-", "_")
    name = ALIASES.get(name, name)
    return name if name in COLUMNS or name == KIND else None


def check_table(
    catalogs: Catalogs,
    table: Table,
    chip_name: str,
    stack: Software,
    catalog_version: str | None = None,
) -> TableCheck:
    """Each row of `table` judged against `chip_name`'s roofline, ranked by time lost."""
    if not table.rows:
        raise TableError("the table has no rows")
    catalog = catalogs.chips(catalog_version)
    chip = catalog.resolve(chip_name).chip
    mapping = {column: _canonical(column) for column in table.columns}
    known = [(column, name) for column, name in mapping.items() if name is not None]
    rows = [
        _row(
            number,
            cells,
            known,
            lambda w: place_kernel(kernel_work(w)[0], chip, stack, kernel_evaluations(w)),
            chip,
        )
        for number, cells in enumerate(table.rows, start=1)
    ]
    judged = sorted(
        (r for r in rows if r.time_lost_s is not None),
        key=lambda r: (-(r.time_lost_s or 0.0), r.row),
    )
    for rank, row in enumerate(judged, start=1):
        row.rank = rank
    return TableCheck(
        catalog_version=catalog.version,
        chip=chip_ref(chip),
        stack=stack,
        columns={column: name for column, name in mapping.items() if name is not None},
        ignored_columns=[column for column, name in mapping.items() if name is None],
        summary=_summary(rows, judged),
        rows=rows,
    )


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _row(
    number: int,
    cells: Mapping[str, Any] | None,
    known: list[tuple[str, str]],
    place: Callable[[KernelWorkload], Roofline],
    chip: Chip,
) -> TableRow:
    """Row `number` of the table, its `cells` read by the `known` (column, name) pairs, its
    kernel placed by `place` and judged on `chip` (whose cache can explain a fast run)."""
    if cells is None:
        error = RowError(column="row", message="a row of a JSON table is an object of columns")
        return TableRow(row=number, label=None, kind=None, error=error)
    fields: dict[str, tuple[str, Any]] = {}
    for column, name in known:
        if not _blank(value := cells.get(column)):
            if name in fields:
                message = f"columns {fields[name][0]!r} and {column!r} both give {name}"
                return TableRow(
                    row=number,
                    label=None,
                    kind=None,
                    error=RowError(column=column, message=message),
                )
            fields[name] = (column, value)
    label = fields.pop(LABEL, (None, None))[1]
    label = None if label is None else str(label)[:200]
    kind: str | None = None
    try:
        if "" in cells:  # a CSV row longer than its header
            raise _Bad("row", str(cells[""]))
        kind = _kind(fields)
        roof = place(_workload(kind, fields))
        times = _seconds(fields, roof)
        judgement = stand(roof, mean_time(times), chip=chip)
    except _Bad as bad:
        error = RowError(column=bad.column, message=bad.message)
        return TableRow(row=number, label=label, kind=kind, error=error)
    except (InvalidInput, Unsupported) as bad:
        column = fields.get(bad.field, (bad.field, None))[0]
        error = RowError(column=column, message=bad.message)
        return TableRow(row=number, label=label, kind=kind, error=error)
    return TableRow(
        row=number,
        label=label,
        kind=kind,
        measured_time_s=judgement.measured_time,
        repeats=len(times),
        flops=roof.flops,
        bytes=roof.bytes,
        arithmetic_intensity=roof.arithmetic_intensity,
        expected_time_s=roof.expected_time,
        realistic_time_s=roof.realistic_time,
        realistic_range_s=[roof.realistic_low, roof.realistic_high],
        ratio=judgement.ratio,
        efficiency=judgement.efficiency,
        achieved_flops_per_s=judgement.achieved_flops_per_s,
        achieved_bytes_per_s=judgement.achieved_bytes_per_s,
        peak=PeakUsed(
            flops_per_s=roof.peak.flops_per_s, dtype=roof.peak.dtype, unit=roof.peak.unit
        ),
        bound=roof.bound,
        verdict=judgement.verdict,
        against_published=judgement.against_published,
        time_lost_s=max(0.0, judgement.measured_time - roof.expected_time),
    )


def _kind(fields: Mapping[str, tuple[str, Any]]) -> str:
    """The row's kind: its kind column, else the one its columns name."""
    if KIND in fields:
        column, value = fields[KIND]
        kind = str(value).strip().lower()
        if kind not in KINDS:
            raise _Bad(column, f"unknown kind {str(value)[:50]!r}: one of {', '.join(KINDS)}")
        return kind
    if {"m", "n", "k"} <= fields.keys():
        return "matmul"
    if "heads" in fields:
        return "attention"
    if {"flops", "bytes"} <= fields.keys():
        return "custom"
    raise _Bad(KIND, f"which kernel is this row? {_KIND_HINT}")


def _workload(kind: str, fields: Mapping[str, tuple[str, Any]]) -> KernelWorkload:
    data: dict[str, Any] = {"kind": kind}
    for name, (_, value) in fields.items():
        if name in WORKLOAD_FIELDS:
            data[name] = value
    ops = data.get("ops")
    if kind == "elementwise" and isinstance(ops, str) and not ops.strip().isdigit():
        data["ops"] = [op for op in _SEPARATORS.split(ops.strip()) if op]
    try:
        workload: KernelWorkload = KINDS[kind].model_validate(data)  # type: ignore[assignment]
    except ValidationError as invalid:
        first = invalid.errors(include_url=False)[0]
        name = str(first["loc"][0]) if first["loc"] else KIND
        column = fields.get(name, (name, None))[0]
        if first["type"] == "extra_forbidden":
            raise _Bad(column, f"not a column of a {kind} row") from None
        raise _Bad(column, first["msg"]) from None
    return workload


def _seconds(fields: Mapping[str, tuple[str, Any]], roof: Roofline) -> list[float]:
    """The row's measured times in seconds: its one time column's repeats, or its FLOPs at
    the achieved TFLOP/s."""
    given = [name for name in fields if name in TIMES or name == TFLOPS]
    if len(given) != 1:
        columns = ", ".join(fields[name][0] for name in given) or "none"
        raise _Bad("time", f"give one measured time (ms, us, s or tflops); the row gives {columns}")
    column, value = fields[given[0]]
    values = _numbers(column, value)
    if given[0] == TFLOPS:
        if len(values) != 1 or roof.flops == 0:
            raise _Bad(column, "one TFLOP/s figure, of a kernel that does FLOPs")
        values = [roof.flops / (_valid(TFLOPS_VALUE, column, values[0]) * TERA)]
        return [_valid(SECONDS, column, values[0])]
    unit = TIMES[given[0]]
    return [_valid(SECONDS, column, v * unit) for v in values]


def _numbers(column: str, value: Any) -> list[float]:
    """A cell's numbers: a number, a JSON list, or a CSV cell of repeats split by ';' or
    spaces."""
    items = value if isinstance(value, list) else _SEPARATORS.split(str(value).strip())
    try:
        numbers = [float(v) for v in items if not isinstance(v, bool)]
    except (TypeError, ValueError):
        raise _Bad(column, f"not a number, or numbers split by ';': {str(value)[:50]!r}") from None
    if not numbers or len(numbers) != len(items) or not all(map(math.isfinite, numbers)):
        raise _Bad(column, "give finite numbers")
    return numbers


def _valid(adapter: Any, column: str, value: float) -> float:
    try:
        checked: float = adapter.validate_python(value)
    except ValidationError as invalid:
        raise _Bad(column, invalid.errors(include_url=False)[0]["msg"]) from None
    return checked


def _summary(rows: list[TableRow], judged: list[TableRow]) -> TableSummary:
    efficiencies = [r.efficiency for r in judged if r.efficiency is not None]
    counts = dict.fromkeys((v.value for v in Verdict), 0)
    for row in judged:
        if row.verdict is not None:
            counts[row.verdict.value] += 1
    geomean = (
        math.exp(math.fsum(map(math.log, efficiencies)) / len(efficiencies))
        if efficiencies
        else None
    )
    return TableSummary(
        rows=len(rows),
        judged=len(judged),
        errors=len(rows) - len(judged),
        verdicts=counts,
        geomean_efficiency=geomean,
        measured_time_s=math.fsum(r.measured_time_s or 0.0 for r in judged),
        time_lost_s=math.fsum(r.time_lost_s or 0.0 for r in judged),
        worst=[
            WorstRow(
                row=r.row,
                label=r.label,
                verdict=r.verdict,
                efficiency=r.efficiency,
                time_lost_s=r.time_lost_s,
            )
            for r in judged[:WORST]
        ],
    )
