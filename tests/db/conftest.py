"""Database fixtures: every test here runs on SQLite and on PostgreSQL, each on a database of
its own (a file in the test's folder; a database created for the test, tests/postgres.py).

PostgreSQL is not skipped when unreachable: the test fails and says so.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each backend, for this test alone."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'roofcheck.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


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
