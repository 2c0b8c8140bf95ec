"""Migrations: empty to head, and from each earlier revision with data in it, keep every row."""

from collections.abc import Callable

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from app.db.base import Base
from app.db.session import alembic_config, make_engine, migrate


def _revisions(engine: sa.Engine) -> list[str]:
    script = ScriptDirectory.from_config(alembic_config(engine))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def _seed_0001(connection: sa.Connection) -> None:
    connection.execute(
        sa.text(
            "INSERT INTO catalog_versions (version, content_sha256, loaded_at, content) "
            "VALUES ('v-old', :hash, :at, :content)"
        ),
        {"hash": "a" * 64, "at": "2026-01-02 03:04:05+00:00", "content": '{"chips": []}'},
    )
    connection.execute(
        sa.text(
            "INSERT INTO measurements (created_at, catalog_version, chip_id, kind, model_id, "
            "phase, workload, workload_key, family_key, measured_values, measured_unit, "
            "measured_time_s, expected_time_s, ratio, verdict, expectation, label, git_commit, "
            "branch, hostname, software, notes) VALUES (:at, 'v-old', 'a100-sxm4-80gb', "
            "'matmul', NULL, NULL, :workload, :key, :key, '[1.5, 2.5]', 'ms', 0.002, 0.0004, "
            "5.0, 'room_to_improve', :expectation, 'label ü', 'abc123', 'main', 'host', "
            "'{\"torch\": \"2.5\"}', 'notes')"
        ),
        {
            "at": "2026-01-02 03:04:06+00:00",
            "workload": '{"kind": "matmul"}',
            "key": "k" * 64,
            "expectation": '{"tokens_per_s": 1234.5}',  # a transformer's, for 0002's column
        },
    )


def _seed_0003(connection: sa.Connection) -> None:
    _seed_0001(connection)
    connection.execute(
        sa.text("UPDATE measurements SET idempotency_key = 'ci:run-1', written_by = 'ci'")
    )


def _seed_0004(connection: sa.Connection) -> None:
    _seed_0001(connection)
    connection.execute(
        sa.text(
            "INSERT INTO empirical_profiles (created_at, chip_id, device, backend, measured_on, "
            "copy_bytes_per_s, matmul_flops_per_s, software, hostname) VALUES (:at, "
            "'a100-sxm4-80gb', 'NVIDIA A100-SXM4-80GB', 'torch', '2026-11-23', 1.7e12, "
            ":rates, '{}', NULL)"
        ),
        {"at": "2026-11-23 03:04:05+00:00", "rates": '{"bf16": 2.7e14}'},
    )


# One seeder per revision, writing rows in that revision's schema. A new migration must add
# its own, so that every upgrade path is tested with data in it.
SEEDERS: dict[str, Callable[[sa.Connection], None]] = {
    "0001": _seed_0001,
    "0002": _seed_0001,  # 0002 changes indexes only: the same columns take the same rows
    "0003": _seed_0003,
    "0004": _seed_0004,
    "0005": _seed_0004,  # 0005 adds columns with defaults: the same columns take the same rows
    "0006": _seed_0004,  # 0006 adds a table, empty: the rows before are those of 0005
}


def _snapshot(connection: sa.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {
        table: [
            tuple(row)
            for row in connection.execute(
                sa.text(f"SELECT version, content_sha256 FROM {table} ORDER BY id")
                if table == "catalog_versions"
                else sa.text(
                    f"SELECT chip_id, measured_values, measured_unit, measured_time_s, "
                    f"label, software, notes, expectation FROM {table} ORDER BY id"
                )
            )
        ]
        for table in ("catalog_versions", "measurements")
    }


def test_every_revision_has_a_seeder(empty_database):
    assert set(_revisions(make_engine(empty_database))) == set(SEEDERS)


def test_empty_to_head_matches_the_models(empty_database):
    engine = make_engine(empty_database)
    migrate(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_upgrading_from_each_revision_with_data_keeps_every_row(empty_database):
    engine = make_engine(empty_database)
    config = alembic_config(engine)
    for revision in _revisions(engine):
        command.downgrade(config, "base")
        migrate(engine, revision)
        with engine.begin() as connection:
            SEEDERS[revision](connection)
            before = _snapshot(connection)
        migrate(engine)
        with engine.connect() as connection:
            assert _snapshot(connection) == before
            if revision == "0001":  # 0002 copies expectation["tokens_per_s"] into its column
                tokens = sa.text("SELECT expected_tokens_per_s FROM measurements")
                assert connection.execute(tokens).scalars().all() == [1234.5]
    command.downgrade(config, "base")
    engine.dispose()
