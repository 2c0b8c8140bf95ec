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
    """A least-recently-used map of at most `max_entries` results."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self._results: OrderedDict[Key, Value] = OrderedDict()
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
        """Store `value` under `key`, dropping the least recently used result when full."""
        with self._lock:
            self._results[key] = value
            self._results.move_to_end(key)
            while len(self._results) > self.max_entries:
                self._results.popitem(last=False)

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._results.clear()

    def __len__(self) -> int:
        return len(self._results)
