"""A SQLite database file watched for being removed or replaced under the running service.

SQLite reads and writes a file through the descriptor it opened. Removed while the service
runs (`rm roofcheck.db`), or replaced by another file (a backup moved into place), the file
stays open: connections go on writing into a file no path reaches, and every write they
commit is lost when they close. So each connection records the identity of the file at the
path when it opened (device and inode), and the path is looked up again (one `os.stat`) when
a connection is taken from the pool and after each write commits:

- a connection whose file is no longer the one at the path is closed, never used;
- a write committed into a file no longer at the path is refused (`file_gone`), not
  acknowledged;
- once the service has opened the file, it never creates another (SQLite's `mode=rw`): a
  missing file is unreachable, 503, until a file is put back at the path;
- a connection to a new file at the path opens only once every connection to the old one is
  closed, and the old file's write-ahead log and its index (`-wal`, `-shm`) are removed from
  beside the path first. SQLite leaves them there when the file they belong to was moved
  (it checkpoints and deletes them on the last close only for a file still at its path), and
  a connection to the new file would read the old file's pages from them as its own.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import Counter
from contextlib import suppress
from typing import Any
from urllib.parse import quote
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError, OperationalError

# (st_dev, st_ino): a file, whatever its name
Identity = tuple[int, int]
# where a pooled connection's record keeps the identity of the file it opened
_KEY = "roofcheck_sqlite_file"


class DatabaseFile:
    """The file of one SQLite engine: which one each of its connections opened."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        # whether the service has had the file open: from then on it never creates one
        self.opened = False
        self._open: Counter[Identity] = Counter()  # open connections per file
        self._last: Identity | None = None  # the file opened last
        self._log: Identity | None = None  # its write-ahead log
        self._lock = threading.Lock()

    def identity(self, suffix: str = "") -> Identity | None:
        """The file at the path now (or its `-wal` beside it), or None when there is none."""
        try:
            found = os.stat(self.path + suffix)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def removed(self) -> str:
        return (
            f"the database file {self.path} was removed while the service ran; put it back "
            "(a backup, or an empty file to start anew: it is migrated) or restart the service"
        )

    def _connect(
        self, dialect: Any, record: Any, cargs: list[Any], cparams: dict[str, Any]
    ) -> sqlite3.Connection:
        """Open a connection (the engine's do_connect), on the terms of the module's docstring;
        refused with sqlite3's OperationalError, which the engine reports as unreachable."""
        with self._lock:
            before = self.identity()
            if self.opened and before is None:
                raise sqlite3.OperationalError(self.removed())
            if any(identity != before for identity in +self._open):
                raise sqlite3.OperationalError(
                    f"the database file {self.path} was replaced; the connections to the old "
                    "one are still closing"
                )
            if self._last is not None and before != self._last:
                self._forget_old_log()
            if self.opened:  # open the file that is there, never create one
                cargs = [f"file:{quote(self.path)}?mode=rw"]
                cparams = {**cparams, "uri": True}
            connection: sqlite3.Connection = dialect.connect(*cargs, **cparams)
            after = self.identity()
            if after is None or (before is not None and after != before):
                connection.close()  # replaced while it opened: which file it has is unknown
                raise sqlite3.OperationalError(f"the database file {self.path} changed")
            self._open[after] += 1
            self.opened = True
            self._last = after
            record.info[_KEY] = after
            return connection

    def _forget_old_log(self) -> None:
        """Remove the write-ahead log of the file opened last, and its index, if they are still
        beside the path (see the module's docstring); a log that came with the new file (a
        backup restored with its -wal) stays."""
        if self._log is not None and self.identity("-wal") == self._log:
            for suffix in ("-wal", "-shm"):
                with suppress(FileNotFoundError):
                    os.unlink(self.path + suffix)
        self._log = None

    def _opened(self, connection: Any, _record: object) -> None:
        """After a connection's pragmas put the file in WAL mode: note which log it uses,
        which its first read opens (creating it if need be)."""
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").close()
        with self._lock:
            self._log = self.identity("-wal") or self._log

    def _closed(self, _connection: object, record: Any) -> None:
        identity = record.info.pop(_KEY, None)
        if identity is not None:
            with self._lock:
                self._open[identity] -= 1

    def _checkout(self, _connection: object, record: Any, _proxy: object) -> None:
        if record.info.get(_KEY) != self.identity():
            # the pool closes it and opens another (or reports the file unreachable)
            raise DisconnectionError(f"the database file {self.path} was removed or replaced")

    def check_written(self, identity: Identity | None) -> None:
        """After a commit on a connection to the file `identity`: `file_gone` unless it is
        still the file at the path."""
        if identity is not None and identity != self.identity():
            raise file_gone(
                f"the database file {self.path} was removed or replaced as a write committed: "
                "the write is in no file at the path, and was not stored"
            )


def file_gone(message: str) -> OperationalError:
    """The error the engine raises for a file it cannot open (so handled as unreachable)."""
    return OperationalError(None, None, sqlite3.OperationalError(message))


_FILES: WeakKeyDictionary[Engine, DatabaseFile] = WeakKeyDictionary()


def watch(engine: Engine) -> None:
    """Watch the file of the SQLite engine `engine`, if it has one (not `:memory:`)."""
    path = engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return
    watched = _FILES[engine] = DatabaseFile(path)
    event.listen(engine, "do_connect", watched._connect)
    event.listen(engine, "connect", watched._opened)  # after make_engine's pragmas
    event.listen(engine, "close", watched._closed)
    event.listen(engine, "checkout", watched._checkout)


def watched(engine: Engine) -> DatabaseFile | None:
    """The watched file of `engine`, or None (PostgreSQL; SQLite in memory)."""
    return _FILES.get(engine)


def connection_file(info: dict[Any, Any]) -> Identity | None:
    """The file a connection opened, from its `Connection.info` (None if not watched)."""
    identity: Identity | None = info.get(_KEY)
    return identity
