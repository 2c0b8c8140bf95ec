"""A bounded, thread-safe memo of pure results, kept while the catalogs they came from last:
the rendered answers (app/services/answer_cache.py) and the expectations of checks.

The expectation of a workload on a chip (everything a `/check` says before it reads the
measured time) is a pure function of the request and of the catalogs; CI jobs ask it again
for every commit with only a new measured time, and every stored measurement asks it again.
`Catalogs` owns one memo (a catalog reload starts an empty one). The write path reads it
from worker threads, hence the lock. Losing an entry changes no answer.
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
    hash, in a bounded set of those seen once): a question asked once, the common case for
    the expectation of a new workload, then leaves no result to be evicted later. Under load
    that churn cost more than the result saves: the memory of evicted results, long out of
    the processor's caches, is what the next requests' objects are built in (a distinct
    `/check` at 817 µs of CPU with every result stored, 670 µs with none:
    docs/performance.md). A question asked again, a CI job's workload at its next commit, is
    stored then and reused from its third time on."""

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
