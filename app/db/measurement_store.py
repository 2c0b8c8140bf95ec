"""Queries of stored measurements: plain functions taking a Session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, Select, Table, bindparam, func, insert, select
from sqlalchemy.orm import Session, defer

from app.db.base import utc_now
from app.db.models import MeasurementRow


@dataclass(frozen=True, slots=True)
class Filters:
    """What to list; None means any."""

    chip_id: str | None = None
    model_id: str | None = None
    phase: str | None = None
    label: str | None = None
    branch: str | None = None
    workload_key: str | None = None
    since: datetime | None = None
    until: datetime | None = None


# The wide JSON columns: left out of lists and histories, loaded on access (one row at a time).
_WIDE = tuple(
    defer(column)
    for column in (
        MeasurementRow.workload,
        MeasurementRow.expectation,
        MeasurementRow.measured_values,
        MeasurementRow.software,
        MeasurementRow.notes,
    )
)


_Q = TypeVar("_Q", bound=Select[Any])


def _filtered(query: _Q, filters: Filters) -> _Q:
    """`query` restricted to the measurements `filters` select."""
    for column, value in (
        (MeasurementRow.chip_id, filters.chip_id),
        (MeasurementRow.model_id, filters.model_id),
        (MeasurementRow.phase, filters.phase),
        (MeasurementRow.label, filters.label),
        (MeasurementRow.branch, filters.branch),
        (MeasurementRow.workload_key, filters.workload_key),
    ):
        if value is not None:
            query = query.where(column == value)
    if filters.since is not None:
        query = query.where(MeasurementRow.created_at >= filters.since)
    if filters.until is not None:
        query = query.where(MeasurementRow.created_at < filters.until)
    return query


_TABLE: Table = MeasurementRow.__table__  # type: ignore[assignment]
_STORED = tuple(column.key for column in _TABLE.columns if column.key != "id")
# built once (and compiled once, in the engine's cache), not per write
_INSERT = insert(_TABLE).returning(_TABLE.c.id)
_PREVIOUS: Select[int, float] = (
    select(_TABLE.c.id, _TABLE.c.measured_time_s)
    .where(_TABLE.c.workload_key == bindparam("workload_key"), _TABLE.c.id < bindparam("before"))
    .order_by(_TABLE.c.id.desc())
    .limit(1)
)


def column_values(row: MeasurementRow) -> dict[str, Any]:
    """`row`'s stored columns (all but the id) as an INSERT takes them."""
    return {name: getattr(row, name) for name in _STORED}


def add(connection: Connection, row: MeasurementRow) -> None:
    """Store a new measurement with one Core INSERT, not the ORM's unit of work (`row` stays
    outside any session); its created_at and id are set on return."""
    row.created_at = utc_now()
    row.id = connection.execute(_INSERT, column_values(row)).scalar_one()


def by_idempotency_key(session: Session, key: str) -> MeasurementRow | None:
    """The measurement stored under `key`, if any."""
    return session.scalars(select(MeasurementRow).filter_by(idempotency_key=key)).first()


def get(session: Session, measurement_id: int) -> MeasurementRow | None:
    """One measurement by id."""
    return session.get(MeasurementRow, measurement_id)


def page(
    session: Session, filters: Filters, *, limit: int, offset: int
) -> tuple[int, Sequence[MeasurementRow]]:
    """(total matching, newest first page of them, without their wide columns)."""
    total = session.scalar(_filtered(select(func.count(MeasurementRow.id)), filters)) or 0
    rows = session.scalars(
        _filtered(select(MeasurementRow).options(*_WIDE), filters)
        .order_by(MeasurementRow.created_at.desc(), MeasurementRow.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return total, rows


@dataclass(frozen=True, slots=True)
class Run:
    """One run in a workload's history: what its chart and table show (the columns of the
    same names, read in this order)."""

    id: int
    created_at: datetime
    measured_time_s: float
    expected_time_s: float
    ratio: float
    verdict: str
    label: str | None
    branch: str | None
    git_commit: str | None
    catalog_version: str
    expected_tokens_per_s: float | None  # transformers only


def history(session: Session, workload_key: str, *, limit: int) -> list[Run]:
    """The latest `limit` runs of one workload, oldest first (columns, not whole rows)."""
    newest = session.execute(
        select(*(getattr(MeasurementRow, f.name) for f in fields(Run)))
        .where(MeasurementRow.workload_key == workload_key)
        .order_by(MeasurementRow.created_at.desc(), MeasurementRow.id.desc())
        .limit(limit)
    ).all()
    return [Run(*row) for row in reversed(newest)]


def previous(db: Session | Connection, row: MeasurementRow) -> Row[int, float] | None:
    """The id and measured time of the measurement of the same workload stored just before
    `row` (one probe of the index on (workload_key, id))."""
    return db.execute(_PREVIOUS, {"workload_key": row.workload_key, "before": row.id}).first()


def latest_on_branch(
    session: Session, workload_key: str, branch: str, before_id: int
) -> MeasurementRow | None:
    """The newest measurement of a workload on `branch` stored before `before_id`."""
    return session.scalars(
        select(MeasurementRow)
        .options(*_WIDE)
        .where(
            MeasurementRow.workload_key == workload_key,
            MeasurementRow.branch == branch,
            MeasurementRow.id < before_id,
        )
        .order_by(MeasurementRow.id.desc())
        .limit(1)
    ).first()


def family(session: Session, family_key: str, *, limit: int) -> list[tuple[float, float]]:
    """(expected, measured) seconds of the latest runs of one workload at any size (batch,
    lengths, shapes)."""
    rows = session.execute(
        select(MeasurementRow.expected_time_s, MeasurementRow.measured_time_s)
        .where(MeasurementRow.family_key == family_key)
        .order_by(MeasurementRow.id.desc())
        .limit(limit)
    ).all()
    return [(expected, measured) for expected, measured in rows]
