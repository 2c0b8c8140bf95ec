"""The catalogs a running service answers from: chip catalog versions and the model catalog."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from app.catalog.loader import (
    ChipCatalogVersion,
    ModelCatalogVersion,
    load_chip_catalog,
    load_model_catalog,
)
from app.catalog.names import NameIndex
from app.db import catalog_versions
from app.db.models import EmpiricalProfileRow
from app.services.answer_cache import AnswerCache
from app.settings import Settings

# the newest ceilings measured on a chip (by catalog id), from the database
ProfileLookup = Callable[[str], EmpiricalProfileRow | None]


@dataclass(frozen=True, slots=True)
class Catalogs:
    """Every usable chip-catalog version (by version), the model catalog, and where the
    ceilings measured on each chip (`roofcheck probe`) are looked up, when a database is."""

    chip_versions: dict[str, ChipCatalogVersion]
    current: str
    models: ModelCatalogVersion
    profiles: ProfileLookup | None = field(default=None, repr=False, compare=False)
    _versions: NameIndex = field(init=False, repr=False, compare=False)
    # what the calculation endpoints rendered from these catalogs (app/services/answer_cache.py)
    answers: AnswerCache = field(default_factory=AnswerCache, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # built once, so that resolving a version per request is a dictionary look-up
        names = NameIndex("catalog version", [(v, v) for v in self.chip_versions])
        object.__setattr__(self, "_versions", names)

    def chips(self, version: str | None = None) -> ChipCatalogVersion:
        """The chip catalog of `version` (default: the current one)."""
        if version is None:
            return self.chip_versions[self.current]
        return self.chip_versions[self._versions.resolve(version)]


def load_catalog_files(settings: Settings) -> tuple[ChipCatalogVersion, ModelCatalogVersion]:
    """Load and validate both catalog files (CatalogError names the chip and field)."""
    return load_chip_catalog(settings.chip_catalog), load_model_catalog(settings.model_catalog)


def record_catalogs(
    sessions: sessionmaker[Session],
    current: ChipCatalogVersion,
    models: ModelCatalogVersion,
    profiles: ProfileLookup | None = None,
) -> Catalogs:
    """Record the chip catalog's version in the database (refusing an edited file under a
    known version) and load every stored version beside it."""
    catalog_versions.record(sessions, current)
    return Catalogs(catalog_versions.load_all(sessions, current), current.version, models, profiles)
