"""Database fixtures: every test here runs on SQLite and on the local PostgreSQL server.

PostgreSQL: ROOFCHECK_TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/test.
It is not skipped when unreachable: the test fails and says so (.ci/run starts the server).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.db.session import make_engine
from app.main import create_app
from app.settings import Settings

POSTGRES_URL = os.environ.get(
    "ROOFCHECK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
OUR_TABLES = ("empirical_profiles", "measurements", "catalog_versions", "alembic_version")


def drop_our_tables(url: str) -> None:
    """Start from an empty schema (only this project's tables are touched)."""
    engine = make_engine(Settings(database_url=url).database_url)
    try:
        with engine.begin() as connection:
            for table in OUR_TABLES:
                connection.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
    except sa.exc.OperationalError as exc:
        pytest.fail(f"cannot reach the test database {url}: {exc}")
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'roofcheck.db'}"
    drop_our_tables(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture
def db_settings(empty_database: str) -> Settings:
    return Settings(database_url=empty_database)


@pytest.fixture
def db_app(db_settings: Settings) -> FastAPI:
    return create_app(db_settings)


@pytest.fixture
def db_client(db_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(db_app) as client:
        yield client
    db_app.state.database.engine.dispose()
