"""Writes committed in groups (app/db/group_commit.py), on SQLite and PostgreSQL: the writes
that queue behind a commit share the next one; a write that fails is undone alone; a commit
that fails stores and acknowledges nothing of its group; a write is answered after its commit.
"""

import gc
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.group_commit import GroupCommit
from app.db.session import make_engine, session_factory, write_together

METADATA = sa.MetaData()
PARENT = sa.Table("parent", METADATA, sa.Column("id", sa.Integer, primary_key=True))
ROW = sa.Table(
    "row",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(20), unique=True, nullable=False),
    # checked at COMMIT: a group whose commit fails
    sa.Column(
        "parent_id",
        sa.Integer,
        sa.ForeignKey("parent.id", deferrable=True, initially="DEFERRED"),
        nullable=True,
    ),
)


class Named:
    """A row of ROW as an ORM object, added to a write's session without being flushed."""

    def __init__(self, name: str) -> None:
        self.name = name


sa.orm.registry().map_imperatively(Named, ROW)


@pytest.fixture
def engine(empty_database: str) -> Iterator[Engine]:
    engine = make_engine(empty_database)
    METADATA.create_all(engine)
    yield engine
    engine.dispose()


def stored(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.scalars(sa.select(ROW.c.name)))


def insert(name: str, parent_id: int | None = None) -> Callable[[Session], str]:
    def work(session: Session) -> str:
        session.execute(ROW.insert().values(name=name, parent_id=parent_id))
        return name

    return work


def commits(engine: Engine) -> list[int]:
    """A list that counts the engine's commits from now on."""
    counted: list[int] = []
    sa.event.listen(engine, "commit", lambda _connection: counted.append(1))
    return counted


def queued_behind_a_held_write(
    engine: Engine, works: Sequence[Callable[[Session], object]]
) -> tuple[GroupCommit, list[Future[object]], threading.Event]:
    """`works` queued behind a first write that waits for the event returned: once all are
    waiting, they run in one group (the first write's group commits alone)."""
    group = GroupCommit(engine, threading.Lock())
    inside, release = threading.Event(), threading.Event()

    def held(session: Session) -> str:
        inside.set()
        release.wait(10)
        return insert("held")(session)

    pool = ThreadPoolExecutor(max_workers=len(works) + 1)
    futures: list[Future[object]] = [pool.submit(group.run, held)]
    inside.wait(10)
    for queued, work in enumerate(works, start=1):  # one at a time, so in this order
        futures.append(pool.submit(group.run, work))
        deadline = time.monotonic() + 10
        while len(group._waiting) < queued and time.monotonic() < deadline:
            time.sleep(0.001)
    pool.shutdown(wait=False)
    return group, futures, release


def test_writes_waiting_for_a_commit_share_the_next(engine: Engine) -> None:
    counted = commits(engine)
    _, futures, release = queued_behind_a_held_write(engine, [insert(f"w{i}") for i in range(5)])
    release.set()
    assert [f.result(10) for f in futures] == ["held", "w0", "w1", "w2", "w3", "w4"]
    assert stored(engine) == ["held", "w0", "w1", "w2", "w3", "w4"]
    assert len(counted) == 2  # the held write's transaction, then one for the five


def test_a_failing_write_is_undone_alone(engine: Engine) -> None:
    """The duplicate's INSERT fails (on PostgreSQL that aborts the transaction but for its
    savepoint); one that fails after writing is rolled back; the writes after them commit."""

    def fails_after_writing(session: Session) -> None:
        insert("undone")(session)
        raise ValueError("failed after its insert")

    works = [insert("a"), insert("a"), fails_after_writing, insert("b")]
    _, futures, release = queued_behind_a_held_write(engine, works)
    release.set()
    assert futures[1].result(10) == "a"
    with pytest.raises(IntegrityError):
        futures[2].result(10)
    with pytest.raises(ValueError, match="failed after its insert"):
        futures[3].result(10)
    assert futures[4].result(10) == "b"
    assert stored(engine) == ["a", "b", "held"]


def test_a_write_left_unflushed_is_flushed_and_undone_alone(engine: Engine) -> None:
    """An object a write adds to its session is flushed as its savepoint ends: a duplicate
    fails that write alone, and its object is not flushed again by the writes after it."""

    def added(name: str) -> Callable[[Session], str]:
        def work(session: Session) -> str:
            session.add(Named(name))
            return name

        return work

    _, futures, release = queued_behind_a_held_write(engine, [added("p"), added("p"), added("q")])
    release.set()
    assert futures[1].result(10) == "p"
    with pytest.raises(IntegrityError):
        futures[2].result(10)
    assert futures[3].result(10) == "q"
    assert stored(engine) == ["held", "p", "q"]


def test_a_group_that_fails_to_commit_stores_and_acknowledges_nothing(engine: Engine) -> None:
    """A foreign key checked at COMMIT fails the group's commit: every write of it gets the
    error, although each ran without one."""
    works = [insert("x"), insert("orphan", parent_id=42), insert("y")]
    _, futures, release = queued_behind_a_held_write(engine, works)
    release.set()
    assert futures[0].result(10) == "held"
    for future in futures[1:]:
        with pytest.raises(IntegrityError):
            future.result(10)
    assert stored(engine) == ["held"]
    with engine.begin() as connection:  # the next group commits
        connection.execute(PARENT.insert().values(id=42))
    assert GroupCommit(engine, threading.Lock()).run(insert("orphan", parent_id=42)) == "orphan"


def test_a_write_is_answered_only_after_its_group_commits(engine: Engine) -> None:
    """A follower whose write has run waits for the commit: what it is answered is stored."""
    group = GroupCommit(engine, threading.Lock())
    seen: dict[str, list[str]] = {}

    def answered(name: str) -> None:
        group.run(insert(name))
        seen[name] = stored(engine)  # read on another connection: committed rows only

    threads = [threading.Thread(target=answered, args=(f"n{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert sorted(seen) == stored(engine) == [f"n{i}" for i in range(8)]
    assert all(name in names for name, names in seen.items())


def test_write_together_commits_on_the_engine_of_its_sessions(tmp_path) -> None:
    """One group per engine, whichever sessionmaker of it the write comes through."""
    engines = [make_engine(f"sqlite:///{tmp_path / name}") for name in ("a.db", "b.db")]
    for engine in engines:
        METADATA.create_all(engine)
    try:
        first, second = (session_factory(engines[0]) for _ in range(2))
        assert write_together(first, insert("one")) == "one"
        assert write_together(second, insert("two")) == "two"
        assert write_together(session_factory(engines[1]), insert("three")) == "three"
        assert [stored(engine) for engine in engines] == [["one", "two"], ["three"]]
    finally:
        for engine in engines:
            engine.dispose()


def test_a_group_lets_its_engine_go(tmp_path) -> None:
    """The registry of groups is keyed by engine, weakly: a group holds its engine weakly
    too, and says so if asked to write once the engine is gone."""
    engine = make_engine(f"sqlite:///{tmp_path / 'gone.db'}")
    group = GroupCommit(engine, threading.Lock())
    alive = weakref.ref(engine)
    del engine
    gc.collect()
    assert alive() is None
    with pytest.raises(RuntimeError, match="disposed of"):
        group.run(insert("late"))
