"""A database of each backend behind a switch: PostgreSQL through a proxy, SQLite by path."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.db.conftest import (
    db_app,
    db_client,
    db_settings,
    empty_database,
    migrated_database,
    migrated_postgres,
    migrated_sqlite,
)
from tests.faults.proxy import Proxy


@dataclass
class Switchable:
    """A database URL, and how to make its database unreachable and reachable again."""

    url: str
    proxy: Proxy | None
    folder: Path

    def up(self) -> None:
        if self.proxy is None:
            self.folder.mkdir(exist_ok=True)  # SQLite cannot open a file in a missing folder
        else:
            self.proxy.up()

    def down(self) -> None:
        if self.proxy is not None:
            self.proxy.down()


@pytest.fixture(params=["sqlite", "postgresql"])
def switchable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Switchable]:
    folder = tmp_path / "db"
    if request.param == "sqlite":
        yield Switchable(f"sqlite:///{folder / 'roofcheck.db'}", None, folder)
        return
    target = make_url(request.getfixturevalue("postgres_url"))
    proxy = Proxy((target.host or "127.0.0.1", target.port or 5432))
    proxy.up()  # reserve the port, then leave it dead until the test brings it up
    proxy.down()
    url = target.set(port=proxy.port).render_as_string(hide_password=False)
    yield Switchable(url, proxy, folder)
    proxy.down()


# the two-backend fixtures of tests/db, shared with this folder
__all__ = [
    "db_app",
    "db_client",
    "db_settings",
    "empty_database",
    "migrated_database",
    "migrated_postgres",
    "migrated_sqlite",
]
