"""Empirical profiles: whether one was stored for a chip its device did not match (forced), and
who wrote it (the owner of its write token, who may delete it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # profiles stored before: not forced (none could be), writer unknown
    op.add_column(
        "empirical_profiles",
        sa.Column("forced", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("empirical_profiles", sa.Column("written_by", sa.String(length=64)))


def downgrade() -> None:
    op.drop_column("empirical_profiles", "written_by")
    op.drop_column("empirical_profiles", "forced")
