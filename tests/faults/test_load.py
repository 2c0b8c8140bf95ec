"""Hundreds of posts at a real service, CONCURRENCY at a time: every one stored exactly once.

Also a graceful stop: SIGTERM while posts are in flight loses none that got its 201.
"""

import asyncio
import signal

import httpx
import sqlalchemy as sa

from app.db.session import make_engine
from app.settings import Settings
from tests.faults.server import serve

# the concurrency is what meets the writes' groups and the retries: ten rounds of it (the
# forty this once sent added time, not cases)
POSTS = 500
CONCURRENCY = 50


def body(label: str) -> dict[str, object]:
    return {
        "chip": "a100",
        "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
        "measured_ms": 10.0,
        "label": label,
    }


async def fire(
    base: str, labels: list[str], *, retries: int = 0, on_stored=None
) -> tuple[dict[str, int], list[str]]:
    """POST one measurement per label, CONCURRENCY at a time, each with its label as its
    Idempotency-Key, retrying a lost answer as a CI client would; label -> last status
    (0: no answer), and every transport error met."""
    gate = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY)
    statuses: dict[str, int] = {}
    errors: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

        async def one(label: str) -> None:
            async with gate:
                for _ in range(retries + 1):
                    try:
                        response = await client.post(
                            "/measurements", json=body(label), headers={"idempotency-key": label}
                        )
                    except httpx.TransportError as exc:
                        statuses[label] = 0
                        errors.append(f"{label}: {type(exc).__name__} {exc}")
                        continue
                    statuses[label] = response.status_code
                    break
                if on_stored is not None and statuses[label] == 201:
                    on_stored(len([s for s in statuses.values() if s == 201]))

        await asyncio.gather(*(one(label) for label in labels))
    return statuses, errors


def stored_labels(url: str, prefix: str) -> dict[str, int]:
    engine = make_engine(Settings(database_url=url).database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT label, COUNT(*) FROM measurements WHERE label LIKE :prefix "
                    "GROUP BY label"
                ),
                {"prefix": prefix + "%"},
            )
            return {str(label): int(count) for label, count in rows}
    finally:
        engine.dispose()


def test_hundreds_of_concurrent_posts_are_each_stored_once(empty_database):
    labels = [f"load-{i}" for i in range(POSTS)]
    with serve(empty_database) as (base, _):
        statuses, errors = asyncio.run(fire(base, labels, retries=3))
    # a connection may rarely drop on a loaded machine: the retry must not store twice
    assert len(errors) <= POSTS // 100, errors
    assert sorted(set(statuses.values())) == [201]
    assert stored_labels(empty_database, "load-") == dict.fromkeys(labels, 1)


def stopped_while_posting(
    database: str, prefix: str, stop: signal.Signals
) -> tuple[dict[str, int], dict[str, int]]:
    """4 x CONCURRENCY posts at a service sent `stop` once CONCURRENCY of them are stored
    (as many more in flight): each label's last status (0: no answer) and how many times each
    label is stored. Every stored label is stored once, and every post answered 201 is
    stored."""
    labels = [f"{prefix}{i}" for i in range(4 * CONCURRENCY)]
    with serve(database) as (base, process):

        def stop_after_some(stored: int) -> None:
            if stored == CONCURRENCY:
                process.send_signal(stop)

        statuses, _ = asyncio.run(fire(base, labels, on_stored=stop_after_some))
        # uvicorn, on SIGTERM, finishes the requests in flight, then re-raises the signal
        assert process.wait(timeout=30) == -stop
    accepted = {label for label, status in statuses.items() if status == 201}
    assert len(accepted) >= CONCURRENCY
    stored = stored_labels(database, prefix)
    assert set(stored.values()) == {1}
    assert accepted <= set(stored)  # a 201 always means stored
    return statuses, stored


def test_graceful_stop_keeps_every_accepted_write(empty_database):
    statuses, _ = stopped_while_posting(empty_database, "stop-", signal.SIGTERM)
    assert set(statuses.values()) <= {0, 201, 503}


def test_a_killed_service_loses_no_acknowledged_write(empty_database):
    """SIGKILL while posts are in flight, in groups committing together: a 201 means the
    write's group committed, so every acknowledged write is there, once, and a service
    started again on the database (SQLite recovering its write-ahead log) serves them all."""
    _, stored = stopped_while_posting(empty_database, "kill-", signal.SIGKILL)
    with serve(empty_database) as (base, _):
        first = next(iter(stored))
        listed = httpx.get(f"{base}/measurements", params={"label": first}).json()
        assert listed["total"] == 1
        total = httpx.get(f"{base}/measurements", params={"limit": 1}).json()["total"]
        assert total == len(stored)
