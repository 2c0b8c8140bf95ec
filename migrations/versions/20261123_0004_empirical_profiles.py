"""Empirical profiles measured by `roofcheck probe`.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "empirical_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("chip_id", sa.String(length=100), nullable=False),
        sa.Column("device", sa.String(length=255), nullable=False),
        sa.Column("backend", sa.String(length=20), nullable=False),
        sa.Column("measured_on", sa.String(length=10), nullable=False),
        sa.Column("copy_bytes_per_s", sa.Float(), nullable=False),
        sa.Column("matmul_flops_per_s", sa.JSON(), nullable=False),
        sa.Column("software", sa.JSON(), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_empirical_profiles")),
    )
    op.create_index(
        "ix_empirical_profiles_chip_id_created_at", "empirical_profiles", ["chip_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_table("empirical_profiles")
