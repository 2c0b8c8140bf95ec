"""Alembic environment: the URL comes from the caller's config or from the settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from app.db.models import Base
from app.settings import get_settings

config = context.config
url = config.attributes.get("url") or get_settings().database_url
connection = config.attributes.get("connection")


def _run(conn: object) -> None:
    context.configure(
        connection=conn,  # type: ignore[arg-type]
        target_metadata=Base.metadata,
        render_as_batch=True,  # SQLite alters tables by copying them
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
elif connection is not None:
    _run(connection)
else:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        _run(conn)
