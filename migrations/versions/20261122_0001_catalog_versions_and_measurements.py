"""Catalog versions and measurements.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "catalog_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("content_sha256", sa.String(length=64), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_versions")),
        sa.UniqueConstraint("version", name=op.f("uq_catalog_versions_version")),
    )
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("catalog_version", sa.String(length=64), nullable=False),
        sa.Column("chip_id", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("model_id", sa.String(length=100), nullable=True),
        sa.Column("phase", sa.String(length=20), nullable=True),
        sa.Column("workload", sa.JSON(), nullable=False),
        sa.Column("workload_key", sa.String(length=64), nullable=False),
        sa.Column("family_key", sa.String(length=64), nullable=False),
        sa.Column("measured_values", sa.JSON(), nullable=False),
        sa.Column("measured_unit", sa.String(length=2), nullable=False),
        sa.Column("measured_time_s", sa.Float(), nullable=False),
        sa.Column("expected_time_s", sa.Float(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("verdict", sa.String(length=40), nullable=False),
        sa.Column("expectation", sa.JSON(), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("git_commit", sa.String(length=64), nullable=True),
        sa.Column("branch", sa.String(length=200), nullable=True),
        sa.Column("hostname", sa.String(length=255), nullable=True),
        sa.Column("software", sa.JSON(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["catalog_version"],
            ["catalog_versions.version"],
            name=op.f("fk_measurements_catalog_version_catalog_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measurements")),
    )
    for name, columns in (
        ("ix_measurements_workload_key_created_at", ["workload_key", "created_at"]),
        ("ix_measurements_family_key", ["family_key"]),
        ("ix_measurements_created_at", ["created_at"]),
        ("ix_measurements_chip_id_created_at", ["chip_id", "created_at"]),
        ("ix_measurements_model_id_created_at", ["model_id", "created_at"]),
        ("ix_measurements_branch_created_at", ["branch", "created_at"]),
        ("ix_measurements_label", ["label"]),
    ):
        op.create_index(name, "measurements", columns)


def downgrade() -> None:
    op.drop_table("measurements")
    op.drop_table("catalog_versions")
