"""Rendered answers of the calculation endpoints, kept while the catalogs they came from last.

An answer is a pure function of the request and of the catalogs, so each `Catalogs` owns one
cache (a catalog reload starts an empty one); the HTTP layer (app/api/stored_answers.py) decides
what a request's key is, stores answers and serves them. Losing the cache changes no answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.services.memo import Memo

# at most 2048 answers of at most 16 KiB: 32 MiB per worker at worst (an optimal-batch
# answer is ~4.4 KB, a check ~2.6 KB)
MAX_ENTRIES = 2048
MAX_ANSWER_BYTES = 16 * 1024

Key = tuple[str, str, bytes]  # method, path, and the query string or content type + body


@dataclass(slots=True)
class AnswerCache:
    """A least-recently-used map from a request's key to its rendered JSON answer.

    With `second_sight` (the app's), an answer is stored when its question is asked a second
    time (`Memo`'s second sight) and served from the third: a question asked once leaves no
    answer to evict later."""

    max_entries: int = MAX_ENTRIES
    second_sight: bool = True
    paths: set[str] = field(default_factory=set)  # where answers were put
    _answers: Memo[Key, bytes] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._answers = Memo(self.max_entries, second_sight=self.second_sight)

    @property
    def hits(self) -> int:
        """How many answers were served from the cache."""
        return self._answers.hits

    def get(self, key: Key) -> bytes | None:
        """The stored answer to `key`, now the most recently used, or None."""
        return self._answers.get(key)

    def put(self, key: Key, body: bytes) -> None:
        """Store `body` as the answer to `key` (unless it is over MAX_ANSWER_BYTES), dropping
        the least recently used answer when full."""
        if len(body) > MAX_ANSWER_BYTES:
            return
        self.paths.add(key[1])
        self._answers.put(key, body)

    def clear(self) -> None:
        """Forget every answer (and where they were stored: no path is looked up again until
        an answer on it is stored)."""
        self._answers.clear()
        self.paths.clear()

    def __len__(self) -> int:
        return len(self._answers)
