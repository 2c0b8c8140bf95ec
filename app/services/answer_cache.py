"""Rendered answers of the calculation endpoints, kept while the catalogs they came from last.

An answer is a pure function of the request and of the catalogs, so each `Catalogs` owns one
cache (a catalog reload starts an empty one); the HTTP layer (app/api/stored_answers.py) decides
what a request's key is, stores answers and serves them. Losing the cache changes no answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

# at most 2048 answers of at most 16 KiB: 32 MiB per worker at worst (an optimal-batch
# answer is ~4.4 KB, a check ~2.6 KB)
MAX_ENTRIES = 2048
MAX_ANSWER_BYTES = 16 * 1024

Key = tuple[str, str, bytes]  # method, path, and the query string or content type + body


class AnswerCache:
    """A least-recently-used map of at most `max_entries` rendered JSON answers, by their
    request's key; safe to share between threads.

    With `second_sight` (the app's), an answer is stored only when its question is put a
    second time (known by its hash, in a bounded set of those seen once) and served from the
    third: a question asked once, as a CI job's new commit or the form's new batch asks it,
    leaves no answer to evict later."""

    def __init__(self, max_entries: int = MAX_ENTRIES, *, second_sight: bool = True) -> None:
        self.max_entries = max_entries
        self.hits = 0  # answers served from the cache
        self.paths: set[str] = set()  # where answers were put
        self._answers: OrderedDict[Key, bytes] = OrderedDict()
        self._seen: set[int] | None = set() if second_sight else None
        self._lock = threading.Lock()

    def get(self, key: Key) -> bytes | None:
        """The stored answer to `key`, now the most recently used, or None."""
        with self._lock:
            body = self._answers.get(key)
            if body is not None:
                self.hits += 1
                self._answers.move_to_end(key)
            return body

    def put(self, key: Key, body: bytes) -> None:
        """Store `body` as the answer to `key` (unless it is over MAX_ANSWER_BYTES, or, with
        second sight, its question is new), dropping the least recently used when full."""
        if len(body) > MAX_ANSWER_BYTES:
            return
        with self._lock:
            self.paths.add(key[1])
            if self._seen is not None and not self._seen_before(key):
                return
            self._answers[key] = body
            self._answers.move_to_end(key)
            while len(self._answers) > self.max_entries:
                self._answers.popitem(last=False)

    def _seen_before(self, key: Key) -> bool:
        """Whether `key` was put before (by its hash: a collision only stores an answer early),
        remembering it if not; the hashes are forgotten once there are 4x max_entries."""
        assert self._seen is not None
        digest = hash(key)
        if digest in self._seen:
            self._seen.discard(digest)
            return True
        if len(self._seen) >= 4 * self.max_entries:
            self._seen.clear()
        self._seen.add(digest)
        return False

    def clear(self) -> None:
        """Forget every answer, the questions seen once, and where answers were put (no path
        is looked up again until an answer on it is put)."""
        with self._lock:
            self._answers.clear()
            self.paths.clear()
            if self._seen is not None:
                self._seen.clear()

    def __len__(self) -> int:
        return len(self._answers)
