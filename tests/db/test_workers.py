"""Several uvicorn workers on one PostgreSQL database: concurrent writes are each stored once.

The service keeps nothing in memory that matters between requests (catalogs are read-only,
measurements live in the database), so any worker may answer any request.
"""

import asyncio
from pathlib import Path

import httpx
import sqlalchemy as sa

from app.db.session import make_engine
from app.settings import Settings
from bench.server import free_port, uvicorn_server

WRITES = 120
CONCURRENCY = 24


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text(encoding="ascii")
    return [int(p) for p in text.split()]


async def _post_all(base: str) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def post(i: int) -> httpx.Response:
            async with gate:
                return await client.post(
                    "/measurements",
                    json={
                        "chip": "a100",
                        "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
                        "measured_ms": 9 + i / 100,
                        "branch": "main",
                        "notes": f"write-{i}",
                        "baseline_branch": "main",
                    },
                )

        return await asyncio.gather(*(post(i) for i in range(WRITES)))


def test_concurrent_writes_to_two_workers_are_stored_exactly_once(postgres_url: str) -> None:
    with uvicorn_server(postgres_url, free_port(), workers=2) as server:
        assert len(_children(server.pid)) >= 2  # the supervisor and its two worker processes
        responses = asyncio.run(_post_all(server.base))
        listed = httpx.get(f"{server.base}/measurements", params={"limit": 1}).json()

    assert [r.status_code for r in responses] == [201] * WRITES
    ids = [r.json()["id"] for r in responses]
    assert len(set(ids)) == WRITES  # every answer names its own row
    assert listed["total"] == WRITES  # the list, from either worker, sees all of them
    engine = make_engine(Settings(database_url=postgres_url).database_url)
    try:
        with engine.connect() as connection:
            stored = connection.execute(sa.text("SELECT id, notes FROM measurements")).all()
    finally:
        engine.dispose()
    by_id = {row.id: row.notes for row in stored}
    assert len(stored) == WRITES
    # each request's row holds that request's notes, under the id it was answered with
    assert {by_id[r.json()["id"]] for r in responses} == {f"write-{i}" for i in range(WRITES)}
    assert all(by_id[r.json()["id"]] == r.json()["notes"] for r in responses)
