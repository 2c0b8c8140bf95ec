"""Every chip-catalog version the service has loaded, frozen in the database."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.catalog.loader import CatalogError, ChipCatalogVersion, chip_catalog_from_data
from app.db.models import CatalogVersionRow
from app.db.session import transaction

log = logging.getLogger(__name__)


def _check_unchanged(row: CatalogVersionRow, current: ChipCatalogVersion) -> None:
    if row.content_sha256 != current.content_sha256:
        raise CatalogError(
            f"chip catalog version {current.version!r} was edited without bumping its version: "
            f"the database recorded it on {row.loaded_at:%Y-%m-%d} with content hash "
            f"{row.content_sha256[:12]}..., the file now hashes to "
            f"{current.content_sha256[:12]}.... Stored measurements were judged against the "
            'recorded content; give the edited file a new "version".'
        )


def record(factory: sessionmaker[Session], current: ChipCatalogVersion) -> None:
    """Store `current` if its version is new; refuse an edited file under a known version."""
    with transaction(factory) as session:
        row = session.scalar(
            select(CatalogVersionRow).where(CatalogVersionRow.version == current.version)
        )
        if row is not None:
            _check_unchanged(row, current)
            return
    try:
        with transaction(factory, writes=True) as session:
            session.add(
                CatalogVersionRow(
                    version=current.version,
                    content_sha256=current.content_sha256,
                    content=current.content,
                )
            )
    except IntegrityError:  # another worker recorded it first: it must be the same content
        with transaction(factory) as session:
            row = session.scalars(
                select(CatalogVersionRow).where(CatalogVersionRow.version == current.version)
            ).one()
            _check_unchanged(row, current)


def stored_versions(factory: sessionmaker[Session]) -> list[CatalogVersionRow]:
    """Every recorded version, oldest first."""
    with transaction(factory) as session:
        return list(session.scalars(select(CatalogVersionRow).order_by(CatalogVersionRow.id)))


def load_all(
    factory: sessionmaker[Session], current: ChipCatalogVersion
) -> dict[str, ChipCatalogVersion]:
    """Every recorded version that still validates, indexed; the current one from the file."""
    versions: dict[str, ChipCatalogVersion] = {}
    for row in stored_versions(factory):
        if row.version == current.version:
            versions[row.version] = current
            continue
        try:
            versions[row.version] = chip_catalog_from_data(row.content, f"stored {row.version}")
        except CatalogError as exc:  # kept in the database, but not usable for calculations
            log.warning("stored chip catalog %s no longer validates: %s", row.version, exc)
    return versions
