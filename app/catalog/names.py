"""Case-insensitive name lookup with suggestions for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UnknownName(LookupError):
    """A chip, model or catalog version that the catalog does not know."""

    def __init__(self, kind: str, name: str, suggestions: list[str]) -> None:
        super().__init__(f"unknown {kind} {name!r}")
        self.kind = kind
        self.name = name
        self.suggestions = suggestions


def normalise(name: str) -> str:
    """Lower case, with spaces and underscores read as hyphens."""
    return name.strip().lower().replace("_", "-").replace(" ", "-")


class NameIndex:
    """Maps ids and aliases to ids in O(1); suggests close names for unknown ones."""

    def __init__(self, kind: str, names: Iterable[tuple[str, str]]) -> None:
        self.kind = kind
        self._ids: dict[str, str] = {normalise(name): id_ for name, id_ in names}

    def resolve(self, name: str) -> str:
        """The id that `name` (an id or alias, any case) refers to."""
        found = self._ids.get(normalise(name))
        if found is None:
            raise UnknownName(self.kind, name, self.suggest(name))
        return found

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        """Ids whose names resemble `name`: close spellings first, then containing ones."""
        key = normalise(name)
        close = difflib.get_close_matches(key, self._ids, n=limit * 2, cutoff=0.5)
        containing = [n for n in self._ids if key and (key in n or n in key)]
        ids: list[str] = []
        for match in [*close, *sorted(containing, key=len)]:
            id_ = self._ids[match]
            if id_ not in ids:
                ids.append(id_)
        # nothing resembles it: list some of what exists, so the caller sees the choices
        return ids[:limit] or sorted(set(self._ids.values()))[:limit]
