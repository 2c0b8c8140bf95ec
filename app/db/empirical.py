"""Empirical profiles: store one, and read the newest of a chip."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.catalog.names import UnknownName
from app.db.models import EmpiricalProfileRow
from app.db.session import transaction


class NotTheWriter(Exception):
    """With writes restricted, a profile may be deleted only by the writer who stored it."""


def add(factory: sessionmaker[Session], **fields: Any) -> EmpiricalProfileRow:
    """Store a profile; the row comes back with its id and creation time."""
    with transaction(factory, writes=True) as session:
        row = EmpiricalProfileRow(**fields)
        session.add(row)
        session.flush()
        session.refresh(row)
        session.expunge(row)
    return row


def delete(
    factory: sessionmaker[Session], chip_id: str, profile_id: int, writer: str | None
) -> None:
    """Delete the profile `profile_id` of `chip_id` (UnknownName if it has none such). With
    writes restricted (`writer` set), only the profile's writer may (NotTheWriter), or any
    writer for a profile stored before writers were recorded."""
    with transaction(factory, writes=True) as session:
        row = session.get(EmpiricalProfileRow, profile_id)
        if row is None or row.chip_id != chip_id:
            raise UnknownName("empirical profile", str(profile_id), [])
        if writer is not None and row.written_by not in (None, writer):
            raise NotTheWriter
        session.delete(row)


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
