"""Declarative base with a naming convention, so migrations name constraints predictably."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pydantic_core
from sqlalchemy import JSON, DateTime, MetaData, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Base of every table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite stores naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class EncodedJSON(TypeDecorator[str]):
    """A JSON column's value given as its JSON text (`json_text`), stored as it is: the
    column's JSON type (PostgreSQL casts the text to it) without encoding it again."""

    impl = JSON
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> None:
        return None


def json_text(value: Any) -> str:
    """`value` (JSON's types) as JSON text, by pydantic-core: the values `json.dumps` writes,
    compactly, in UTF-8 rather than escapes, and at a third to a quarter of its instructions
    (docs/performance.md, "Thirteenth pass"). Infinities and NaN as json.dumps writes them."""
    return pydantic_core.to_json(value, inf_nan_mode="constants").decode()
