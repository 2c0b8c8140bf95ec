"""Writes committed in groups: the writes that arrive while one transaction commits share
the next transaction, and its one commit (on SQLite, one fsync of the write-ahead log).

A write is a function of a Connection. Each runs inside its own savepoint, so that one that
fails is rolled back alone, and its caller learns its outcome only after the group's commit:
a write is answered once it is on disk, and a group that fails to commit fails every write in
it (nothing of it stored, nothing of it acknowledged). The writes of a group run one after the
other in the order they arrived, each seeing those before it, as if committed one by one.

Leader and followers, without a thread of its own: the first caller to find no transaction
running runs the writes waiting (its own included); the others wait for its commit. The group
grows while a commit waits on the disk, which is when writers queue.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from typing import Generic, TypeVar

from sqlalchemy import Connection, Engine

T = TypeVar("T")
# each write's savepoint, in the SQL that SQLite and PostgreSQL share (written out: SQLAlchemy's
# nested transactions cost about as much again as the SAVEPOINT and RELEASE they send), sent
# on the driver's cursor: through SQLAlchemy (exec_driver_sql) each cost about 50k
# instructions, five times the driver's own (docs/performance.md, "Thirteenth pass")
_SAVEPOINT, _UNDO, _RELEASE = (
    "SAVEPOINT write",
    "ROLLBACK TO SAVEPOINT write",
    "RELEASE SAVEPOINT write",
)


class _Write(Generic[T]):
    """One write waiting for its group: its function, then its outcome."""

    __slots__ = ("error", "finished", "value", "work")

    def __init__(self, work: Callable[[Connection], T]) -> None:
        self.work = work
        self.value: T | None = None
        # until its group commits (or fails to), the outcome of a group that stopped short
        self.error: BaseException | None = RuntimeError("the write's group was interrupted")
        self.finished = False

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]  # set when no error was


class GroupCommit:
    """Writes of one engine committed together (see the module's docstring)."""

    def __init__(self, engine: Engine, lock: AbstractContextManager[object]) -> None:
        """`lock` is held while a group writes: on SQLite, the lock that queues this process's
        other writers (app/db/session.py). The engine is held weakly, so that a registry of
        groups keyed by engine lets engines go."""
        self._engine = weakref.ref(engine)
        self._lock = lock
        # SQLite's driver opens a transaction only before its first INSERT, after the first
        # savepoint, whose release would then commit alone: the group begins its own.
        self._begin = "BEGIN IMMEDIATE" if engine.dialect.name == "sqlite" else None
        self._state = threading.Condition()
        self._waiting: list[_Write[object]] = []
        self._running = False

    def run(self, work: Callable[[Connection], T]) -> T:
        """`work`'s value once the transaction it ran in has committed; its error (and
        nothing of it stored) if it raised, or if the transaction failed to commit."""
        write: _Write[T] = _Write(work)
        with self._state:
            self._waiting.append(write)  # type: ignore[arg-type]  # outcome read as T below
            while self._running and not write.finished:
                self._state.wait()
            if write.finished:  # another caller's group held it
                return write.outcome()
            self._running = True
            group, self._waiting = self._waiting, []
        try:
            self._commit(group)
        finally:
            with self._state:
                for each in group:
                    each.finished = True
                self._running = False
                self._state.notify_all()
        return write.outcome()

    def _commit(self, group: list[_Write[object]]) -> None:
        """Run `group`'s writes in one transaction, each in a savepoint, commit it, and then
        give each write its outcome."""
        outcomes: list[tuple[object, BaseException | None]] = []
        try:
            engine = self._engine()
            if engine is None:  # not while a caller holds it, as run's callers do
                raise RuntimeError("the engine of this group was disposed of")
            with (
                self._lock,
                engine.begin() as connection,
                closing(connection.connection.cursor()) as cursor,  # the driver's
            ):
                if self._begin is not None:
                    cursor.execute(self._begin)
                for write in group:
                    cursor.execute(_SAVEPOINT)
                    try:
                        outcomes.append((write.work(connection), None))
                    except Exception as error:  # this write alone is undone
                        cursor.execute(_UNDO)  # if this fails, the group does
                        outcomes.append((None, error))
                    cursor.execute(_RELEASE)
        except Exception as failed:  # nothing of the group is stored
            outcomes = [(None, failed)] * len(group)
        for write, (value, raised) in zip(group, outcomes, strict=True):
            write.value, write.error = value, raised
