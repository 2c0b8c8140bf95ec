"""A bounded, thread-safe memo of results that are pure functions of their key, kept while the
catalogs they came from last (`Catalogs` owns them: a catalog reload starts empty ones).
It may be used from worker threads, hence the lock. Losing an entry changes no answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

Key = TypeVar("Key")
Value = TypeVar("Value")


class Memo(Generic[Key, Value]):
    """A least-recently-used map of at most `max_entries` results.

    With `second_sight`, a result is stored only when its key is put a second time (by its
    hash, in a bounded set of those seen once): a question asked once, as a CI job's new
    commit or the form's new batch asks it, then leaves no result to evict later, whose
    memory would otherwise be what the next requests' objects are built in
    (docs/performance.md). A question asked again is stored then and reused from its third
    time on."""

    def __init__(self, max_entries: int, *, second_sight: bool = False) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self._results: OrderedDict[Key, Value] = OrderedDict()
        self._seen: set[int] | None = set() if second_sight else None
        self._lock = threading.Lock()

    def get(self, key: Key) -> Value | None:
        """The result stored under `key`, now the most recently used, or None."""
        with self._lock:
            value = self._results.get(key)
            if value is not None:
                self.hits += 1
                self._results.move_to_end(key)
            return value

    def put(self, key: Key, value: Value) -> None:
        """Store `value` under `key`, dropping the least recently used result when full (with
        `second_sight`, only from the second time `key` is put)."""
        with self._lock:
            if self._seen is not None and not _seen_before(self._seen, key, self.max_entries):
                return
            self._results[key] = value
            self._results.move_to_end(key)
            while len(self._results) > self.max_entries:
                self._results.popitem(last=False)

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._results.clear()
            if self._seen is not None:
                self._seen.clear()

    def __len__(self) -> int:
        return len(self._results)


def _seen_before(seen: set[int], key: object, max_entries: int) -> bool:
    """Whether `key` was put before (by its hash: a collision only stores a result early),
    remembering it if not; the hashes are forgotten once there are 4x max_entries of them."""
    digest = hash(key)
    if digest in seen:
        seen.discard(digest)
        return True
    if len(seen) >= 4 * max_entries:
        seen.clear()
    seen.add(digest)
    return False
