"""Queries of the regression gate's alarms: plain functions taking a Session."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db.models import GateAlarmRow


def add(session: Session, alarm: GateAlarmRow) -> None:
    """Record an alarm raised on a run being stored, in its transaction."""
    session.add(alarm)
    session.flush()


def of_run(session: Session, measurement_id: int) -> GateAlarmRow | None:
    """The alarm raised on one run, if any."""
    return session.scalars(
        select(GateAlarmRow).where(GateAlarmRow.measurement_id == measurement_id)
    ).first()


@dataclass(frozen=True, slots=True)
class Counts:
    """A workload's alarms, counted by how they were raised, decided and marked."""

    raised: int
    regressions: int
    suspected: int
    confirmed: int
    cleared: int
    marked_false: int


def counts(session: Session, workload_key: str) -> Counts:
    """The alarms of one workload, counted in one pass of its index."""
    conditions = (
        GateAlarmRow.raised == "regression",
        GateAlarmRow.raised == "suspected",
        GateAlarmRow.decided == "confirmed",
        GateAlarmRow.decided == "cleared",
        GateAlarmRow.marked_false_at.is_not(None),
    )
    row = session.execute(
        select(func.count(), *(func.count().filter(c) for c in conditions)).where(
            GateAlarmRow.workload_key == workload_key
        )
    ).one()
    return Counts(*(int(value) for value in row))


def latest(session: Session, workload_key: str, *, limit: int) -> list[GateAlarmRow]:
    """The latest `limit` alarms of one workload, newest first."""
    return list(
        session.scalars(
            select(GateAlarmRow)
            .where(GateAlarmRow.workload_key == workload_key)
            .order_by(GateAlarmRow.id.desc())
            .limit(limit)
        )
    )
