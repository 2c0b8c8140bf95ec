"""Empirical profiles: store one, and read the newest of a chip."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
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
    """The newest profile of every chip that has one."""
    with factory() as session:
        rows = session.scalars(
            select(EmpiricalProfileRow).order_by(
                EmpiricalProfileRow.created_at, EmpiricalProfileRow.id
            )
        )
        return {row.chip_id: row for row in rows}  # later rows replace earlier ones
