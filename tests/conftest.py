"""Shared fixtures: the app on a fresh SQLite database with the real catalogs, and a client."""

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    database = Path(tmp_path_factory.mktemp("db")) / "roofcheck.db"
    return create_app(Settings(database_url=f"sqlite:///{database}"))


@pytest.fixture(scope="session")
def client(app: FastAPI) -> TestClient:
    return TestClient(app)
