"""Empirical profiles: store one, and read the newest of a chip."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.models import EmpiricalProfileRow
from app.db.session import transaction


def add(factory: sessionmaker[Session], **fields: Any) -> EmpiricalProfileRow:
    """Store a profile; the row comes back with its id and creation time."""
    with transaction(factory, writes=True) as session:
        row = EmpiricalProfileRow(**fields)
        session.add(row)
        session.flush()
        session.refresh(row)
        session.expunge(row)
    return row


def latest(factory: sessionmaker[Session], chip_id: str) -> EmpiricalProfileRow | None:
    """The newest profile of `chip_id`, if any."""
    with factory() as session:
        return session.scalar(
            select(EmpiricalProfileRow)
            .where(EmpiricalProfileRow.chip_id == chip_id)
            .order_by(EmpiricalProfileRow.created_at.desc(), EmpiricalProfileRow.id.desc())
            .limit(1)
        )


def latest_by_chip(factory: sessionmaker[Session]) -> dict[str, EmpiricalProfileRow]:
    """The newest profile of every chip that has one (one row per chip read, not all)."""
    newest_first = func.row_number().over(
        partition_by=EmpiricalProfileRow.chip_id,
        order_by=(EmpiricalProfileRow.created_at.desc(), EmpiricalProfileRow.id.desc()),
    )
    ranked = select(EmpiricalProfileRow.id, newest_first.label("rank")).subquery()
    with factory() as session:
        rows = session.scalars(
            select(EmpiricalProfileRow)
            .join(ranked, ranked.c.id == EmpiricalProfileRow.id)
            .where(ranked.c.rank == 1)
        )
        return {row.chip_id: row for row in rows}
