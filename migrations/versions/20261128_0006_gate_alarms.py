"""The regression gate's alarms: raised on a stored run (regression or suspected), decided by
a confirming run, and marked false by a writer; the measurements themselves are unchanged.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # runs stored before raised no recorded alarm: the table starts empty
    op.create_table(
        "gate_alarms",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "measurement_id",
            sa.Integer(),
            sa.ForeignKey("measurements.id"),
            nullable=False,
            unique=True,
        ),
        sa.Column("workload_key", sa.String(length=64), nullable=False),
        sa.Column("raised", sa.String(length=12), nullable=False),
        sa.Column("repeats_needed", sa.Integer()),
        sa.Column("decided", sa.String(length=12)),
        sa.Column("decided_by", sa.Integer(), sa.ForeignKey("measurements.id")),
        sa.Column("marked_false_at", sa.DateTime(timezone=True)),
        sa.Column("marked_false_by", sa.String(length=64)),
        sa.Column("marked_false_note", sa.Text()),
    )
    op.create_index("ix_gate_alarms_workload_key_id", "gate_alarms", ["workload_key", "id"])


def downgrade() -> None:
    op.drop_index("ix_gate_alarms_workload_key_id", table_name="gate_alarms")
    op.drop_table("gate_alarms")
