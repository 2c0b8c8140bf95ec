"""Rendered answers of the calculation endpoints, kept while the catalogs they came from last.

An answer is a pure function of the request and of the catalogs, so each `Catalogs` owns one
cache (a catalog reload starts an empty one); the HTTP layer (app/api/stored_answers.py) decides
what a request's key is, stores answers and serves them. Losing the cache changes no answer.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

# at most 2048 answers of at most 16 KiB: 32 MiB per worker at worst (an optimal-batch
# answer is ~4.4 KB, a check ~2.6 KB)
MAX_ENTRIES = 2048
MAX_ANSWER_BYTES = 16 * 1024

Key = tuple[str, str, bytes]  # method, path, and the query string or content type + body


@dataclass(slots=True)
class AnswerCache:
    """A least-recently-used map from a request's key to its rendered JSON answer."""

    max_entries: int = MAX_ENTRIES
    hits: int = 0
    paths: set[str] = field(default_factory=set)  # where answers were stored
    _answers: OrderedDict[Key, bytes] = field(default_factory=OrderedDict, repr=False)

    def get(self, key: Key) -> bytes | None:
        """The stored answer to `key`, now the most recently used, or None."""
        body = self._answers.get(key)
        if body is not None:
            self.hits += 1
            self._answers.move_to_end(key)
        return body

    def put(self, key: Key, body: bytes) -> None:
        """Store `body` as the answer to `key` (unless it is over MAX_ANSWER_BYTES), dropping
        the least recently used answer when full."""
        if len(body) > MAX_ANSWER_BYTES:
            return
        self.paths.add(key[1])
        self._answers[key] = body
        self._answers.move_to_end(key)
        if len(self._answers) > self.max_entries:
            self._answers.popitem(last=False)

    def __len__(self) -> int:
        return len(self._answers)
