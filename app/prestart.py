"""Prepare the database once before the workers start: `python -m app.prestart`.

Applies the migrations and records the chip-catalog version (what every worker's start-up
would do), so that a database that cannot be reached or migrated, or a catalog edited without
a new version, stops the deployment before any worker starts. Workers starting together
without it are safe too: they migrate one at a time (app/db/session.py, `migrate`).
DATABASE_URL comes from the environment, as for the service.
"""

from __future__ import annotations

from app.main import create_app


def main() -> None:
    """Migrate and record the catalogs, then release the connections; an unreachable
    database stops it with DatabaseUnavailable, which says so."""
    database = create_app().state.database
    database.sessions()
    database.engine.dispose()


if __name__ == "__main__":
    main()
