"""Database fixtures: every test here runs on SQLite and on PostgreSQL, each on a database of
its own (a file in the test's folder; a database created for the test, tests/postgres.py):
empty (`empty_database`), or as the service leaves it on first start (`db_settings`, `db_app`,
`db_client`: a copy of one migrated once per worker).

PostgreSQL is not skipped when unreachable: the test fails and says so.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import make_url

from app.main import create_app
from app.settings import Settings
from tests.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each backend, for this test alone."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'roofcheck.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file the app migrated and recorded its catalogs in, once per session (per
    xdist worker): each test gets a copy of it."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    create_app(Settings(database_url=f"sqlite:///{path}")).state.database.engine.dispose()
    return path


@pytest.fixture(scope="session")
def migrated_postgres(postgres_server: str) -> Iterator[str]:
    """The name of a PostgreSQL database the app migrated and recorded its catalogs in, once
    per session (per xdist worker): each test gets a copy of it."""
    with fresh_database(postgres_server) as url:
        create_app(Settings(database_url=url)).state.database.engine.dispose()
        yield str(make_url(url).database)


@pytest.fixture(params=["sqlite", "postgresql"])
def migrated_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database of each backend as the service leaves it on first start (its
    schema migrated, its catalogs recorded), for this test alone: a copy of a template, so
    that each test pays a copy, not the migrations."""
    if request.param == "sqlite":
        path = tmp_path / "roofcheck.db"
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        return
    template: str = request.getfixturevalue("migrated_postgres")
    with fresh_database(request.getfixturevalue("postgres_server"), template) as url:
        yield url


@pytest.fixture
def db_settings(migrated_database: str) -> Settings:
    """The app's settings on the test's database, with the largest calculation budget: these
    tests check answers, not the machine's speed (a CI machine busy with the other worker
    once held a /check on measured ceilings past the default second, and its designed 503
    failed a test of which profile it read; the budget's own 503 is tested on apps of their
    own, tests/api/test_budget.py)."""
    return Settings(database_url=migrated_database, calculation_budget_s=60.0)


@pytest.fixture
def db_app(db_settings: Settings) -> FastAPI:
    return create_app(db_settings)


@pytest.fixture
def db_client(db_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(db_app) as client:
        yield client
    db_app.state.database.engine.dispose()
