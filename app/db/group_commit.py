"""Writes committed in groups: the writes that arrive while one transaction commits share
the next transaction, and its one commit (on SQLite, one fsync of the write-ahead log). SQLite
writes one transaction at a time and a write is answered only once it is on disk, so writes
that arrive together are made durable by one commit rather than each queueing for its own.

A write is a function of a Session. Each runs inside its own savepoint
(`Session.begin_nested`), so that one that fails is rolled back alone, and its caller learns
its outcome only after the group's commit: a write is answered once it is on disk, and a group
that fails to commit fails every write in it (nothing of it stored, nothing of it
acknowledged). The writes of a group run one after the other in the order they arrived, each
seeing those before it, as if committed one by one.

Leader and followers, without a thread of its own: the first caller to find no transaction
running runs the writes waiting (its own included); the others wait for its commit. The group
grows while a commit waits on the disk, which is when writers queue.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Generic, TypeVar

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from app.db import sqlite_file

T = TypeVar("T")


class _Write(Generic[T]):
    """One write waiting for its group: its function, then its outcome."""

    __slots__ = ("error", "finished", "value", "work")

    def __init__(self, work: Callable[[Session], T]) -> None:
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
        # SQLite's driver (sqlite3) begins a transaction only before the first INSERT, after
        # the first savepoint, whose release would then commit alone: the group begins its
        # own, as a writer (IMMEDIATE: it holds SQLite's write lock from the start).
        self._begin = text("BEGIN IMMEDIATE") if engine.dialect.name == "sqlite" else None
        self._state = threading.Condition()
        self._waiting: list[_Write[object]] = []
        self._running = False

    def run(self, work: Callable[[Session], T]) -> T:
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
            with self._lock, Session(engine) as session, session.begin():
                if self._begin is not None:
                    session.execute(self._begin)
                for write in group:
                    savepoint = session.begin_nested()
                    try:
                        value = write.work(session)
                        savepoint.commit()  # flushing what the write left pending
                    except Exception as error:  # this write alone is undone
                        savepoint.rollback()  # if this fails, the group does
                        outcomes.append((None, error))
                    else:
                        outcomes.append((value, None))
                written = sqlite_file.connection_file(session.connection().info)
            file = sqlite_file.watched(engine)
            if file is not None:  # committed into the file at the path, or not acknowledged
                file.check_written(written)
        except Exception as failed:  # nothing of the group is stored
            outcomes = [(None, failed)] * len(group)
        for write, (value, raised) in zip(group, outcomes, strict=True):
            write.value, write.error = value, raised
