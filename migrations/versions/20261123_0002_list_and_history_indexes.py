"""Indexes for the list filters, a workload's history and its family, at a million rows;
expected tokens/s as a column (from each row's expectation), so histories need not parse it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = (
    ("ix_measurements_workload_key_created_at", ["workload_key", "created_at"]),
    ("ix_measurements_family_key", ["family_key"]),
    ("ix_measurements_created_at", ["created_at"]),
    ("ix_measurements_chip_id_created_at", ["chip_id", "created_at"]),
    ("ix_measurements_model_id_created_at", ["model_id", "created_at"]),
    ("ix_measurements_branch_created_at", ["branch", "created_at"]),
    ("ix_measurements_label", ["label"]),
)
FILTERS = ["chip_id", "model_id", "phase", "label", "branch"]
NEW = (
    ("ix_measurements_created_at_id", ["created_at", "id", *FILTERS]),
    *(
        (
            f"ix_measurements_{lead}_list",
            [lead, "created_at", "id"] + [c for c in FILTERS if c != lead],
        )
        for lead in ("chip_id", "model_id", "label", "branch")
    ),
    ("ix_measurements_workload_key_created_at_id", ["workload_key", "created_at", "id"]),
    ("ix_measurements_workload_key_id", ["workload_key", "id"]),
    ("ix_measurements_workload_key_branch_id", ["workload_key", "branch", "id"]),
    ("ix_measurements_family_key_id", ["family_key", "id"]),
)


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("expected_tokens_per_s", sa.Float(), nullable=True))
    rows = sa.table(
        "measurements", sa.column("expectation", sa.JSON()), sa.column("expected_tokens_per_s")
    )
    op.execute(
        rows.update().values(expected_tokens_per_s=rows.c.expectation["tokens_per_s"].as_float())
    )
    for name, _ in OLD:
        op.drop_index(name, table_name="measurements")
    for name, columns in NEW:
        op.create_index(name, "measurements", columns)


def downgrade() -> None:
    for name, _ in NEW:
        op.drop_index(name, table_name="measurements")
    for name, columns in OLD:
        op.create_index(name, "measurements", columns)
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("expected_tokens_per_s")
