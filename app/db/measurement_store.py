"""Queries of stored measurements: plain functions taking a Session."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Select, Table, and_, func, or_, select, tuple_
from sqlalchemy.orm import Session, aliased, defer

from app.columns import COUNT_CAP, Position, TotalKind
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


def column_values(row: MeasurementRow) -> dict[str, Any]:
    """`row`'s stored columns (all but the id) as an INSERT takes them."""
    return {name: getattr(row, name) for name in _STORED}


def add(session: Session, row: MeasurementRow) -> None:
    """Store a new measurement; its id and created_at are set on return."""
    session.add(row)
    session.flush()


def by_idempotency_key(session: Session, key: str) -> MeasurementRow | None:
    """The measurement stored under `key`, if any."""
    return session.scalars(select(MeasurementRow).filter_by(idempotency_key=key)).first()


def get(session: Session, measurement_id: int) -> MeasurementRow | None:
    """One measurement by id."""
    return session.get(MeasurementRow, measurement_id)


def _after(query: _Q, filters: Filters, position: Position | None) -> _Q:
    """`query` restricted to `filters` and to the rows listed after `position`; of the
    cursor and `until`, only the tighter is given to the database, so that its index range
    is the cursor's own (SQLite uses one bound of a column, not the lower of two)."""
    if position is None or (filters.until is not None and filters.until <= position.created_at):
        return _filtered(query, filters)
    key = tuple_(MeasurementRow.created_at, MeasurementRow.id)
    return _filtered(query, replace(filters, until=None)).where(
        key < (position.created_at, position.id)  # bound as the columns' types
    )


def workloads(session: Session, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The stored workloads of the measurements `ids` by id (what a page of the list leaves
    out: one lookup by primary key for its rows alone)."""
    query = select(MeasurementRow.id, MeasurementRow.workload).where(MeasurementRow.id.in_(ids))
    return {row.id: row.workload for row in session.execute(query)}


def page(
    session: Session, filters: Filters, *, limit: int, offset: int, after: Position | None
) -> tuple[Sequence[MeasurementRow], Position | None]:
    """(newest first page of the measurements `filters` select, after `after` and `offset`,
    without their wide columns; the position of its last row if more follow, else None)."""
    rows = session.scalars(
        _after(select(MeasurementRow).options(*_WIDE), filters, after)
        .order_by(MeasurementRow.created_at.desc(), MeasurementRow.id.desc())
        .limit(limit + 1)
        .offset(offset)
    ).all()
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], Position(last.created_at, last.id)


def total(session: Session, filters: Filters) -> tuple[int, TotalKind]:
    """How many measurements `filters` select, and how that number is known. Exact up to
    COUNT_CAP, counted from at most COUNT_CAP + 1 index entries. Beyond: for the whole table,
    the span of its ids, an upper bound (ids are unique) read from two ends of the primary
    key, which is exact unless ids were skipped (rows deleted by hand; on PostgreSQL, ids
    taken by writes rolled back); for a filtered list, COUNT_CAP ("more than")."""
    if filters == Filters():
        span = session.scalar(
            select(
                select(func.max(MeasurementRow.id)).scalar_subquery()
                - select(func.min(MeasurementRow.id)).scalar_subquery()
                + 1
            )
        )
        if span is None:  # no rows
            return 0, "exact"
        if span > COUNT_CAP:
            return span, "estimate"
    limited = _filtered(select(MeasurementRow.id), filters).limit(COUNT_CAP + 1).subquery()
    counted = session.scalar(select(func.count()).select_from(limited)) or 0
    return (counted, "exact") if counted <= COUNT_CAP else (COUNT_CAP, "more_than")


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


def _columns(record: type[Any]) -> list[Any]:
    """The columns named by the fields of the dataclass `record`, in their order."""
    return [getattr(MeasurementRow, field.name) for field in fields(record)]


def history(session: Session, workload_key: str, *, limit: int) -> list[Run]:
    """The latest `limit` runs of one workload, oldest first (columns, not whole rows)."""
    newest = session.execute(
        select(*_columns(Run))
        .where(MeasurementRow.workload_key == workload_key)
        .order_by(MeasurementRow.created_at.desc(), MeasurementRow.id.desc())
        .limit(limit)
    ).all()
    return [Run(*row) for row in reversed(newest)]


def previous(session: Session, row: MeasurementRow) -> Row[int, float] | None:
    """The id and measured time of the measurement of the same workload stored just before
    `row` (one probe of the index on (workload_key, id))."""
    return session.execute(
        select(MeasurementRow.id, MeasurementRow.measured_time_s)
        .where(MeasurementRow.workload_key == row.workload_key, MeasurementRow.id < row.id)
        .order_by(MeasurementRow.id.desc())
        .limit(1)
    ).first()


@dataclass(frozen=True, slots=True)
class BaselineRun:
    """A run a new one is compared with: what the regression gate reads (the columns of the
    same names, read in this order)."""

    id: int
    workload_key: str
    measured_time_s: float
    expected_time_s: float
    measured_values: list[float]
    measured_unit: str


def window(
    session: Session, workload_key: str, *, before_id: int, size: int, branch: str | None
) -> list[BaselineRun]:
    """The latest `size` runs of a workload stored before `before_id` (on `branch`, when
    given), newest first: one range of the index on (workload_key, id), or on (workload_key,
    branch, id) for a branch's."""
    query = select(*_columns(BaselineRun)).where(
        MeasurementRow.workload_key == workload_key, MeasurementRow.id < before_id
    )
    if branch is not None:
        query = query.where(MeasurementRow.branch == branch)
    runs = session.execute(query.order_by(MeasurementRow.id.desc()).limit(size))
    return [BaselineRun(*row) for row in runs]


def windows(
    session: Session, ids: Sequence[int], *, size: int
) -> dict[int, tuple[BaselineRun, list[BaselineRun]]]:
    """Each of the measurements `ids` as the regression gate reads it, with its window: the
    same runs `window` reads for it on any branch (the latest `size` runs of its workload
    stored before it, newest first). One query for a whole page of the list: for each listed
    run, the id of the `size`-th run of its workload before it bounds one range of the index
    on (workload_key, id); the runs in those ranges and the listed runs themselves are read
    once each, however the windows overlap."""
    listed, earlier, nth = aliased(MeasurementRow), aliased(MeasurementRow), aliased(MeasurementRow)
    oldest = (  # the oldest run of the window; none when fewer than `size` came before
        select(nth.id)
        .where(nth.workload_key == listed.workload_key, nth.id < listed.id)
        .order_by(nth.id.desc())
        .limit(1)
        .offset(size - 1)
        .scalar_subquery()
    )
    in_windows = (
        select(earlier.id)
        .join(
            listed,
            and_(
                earlier.workload_key == listed.workload_key,
                earlier.id < listed.id,
                earlier.id >= func.coalesce(oldest, 0),  # ids count from 1: 0 bounds nothing
            ),
        )
        .where(listed.id.in_(ids))
    )
    query = select(*_columns(BaselineRun)).where(
        or_(MeasurementRow.id.in_(ids), MeasurementRow.id.in_(in_windows))
    )
    by_id = {run.id: run for run in (BaselineRun(*row) for row in session.execute(query))}
    by_workload: dict[str, list[BaselineRun]] = defaultdict(list)  # oldest first
    for run in sorted(by_id.values(), key=lambda run: run.id):
        by_workload[run.workload_key].append(run)
    ids_of = {key: [run.id for run in runs] for key, runs in by_workload.items()}
    found = {}
    for id_ in ids:
        listed_run = by_id.get(id_)
        if listed_run is not None:  # else not stored
            key = listed_run.workload_key
            at = bisect_left(ids_of[key], id_)
            found[id_] = (listed_run, by_workload[key][max(0, at - size) : at][::-1])
    return found


def baseline(session: Session, measurement_id: int) -> BaselineRun | None:
    """One run by id, as the regression gate reads it."""
    row = session.execute(
        select(*_columns(BaselineRun)).where(MeasurementRow.id == measurement_id)
    ).first()
    return None if row is None else BaselineRun(*row)


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
