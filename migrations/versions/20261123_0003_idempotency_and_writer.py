"""Measurements: the idempotency key a retried post is recognised by, and who wrote it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("measurements", sa.Column("idempotency_key", sa.String(length=264)))
    op.add_column("measurements", sa.Column("written_by", sa.String(length=64)))
    op.create_index(
        "ix_measurements_idempotency_key", "measurements", ["idempotency_key"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_measurements_idempotency_key", table_name="measurements")
    op.drop_column("measurements", "written_by")
    op.drop_column("measurements", "idempotency_key")
