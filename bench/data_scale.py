"""The data queries at scale: list, filters and one workload's comparison, through the app.

    .venv/bin/python -m bench.data_scale DATABASE_URL [--rows 1000000]
        [--small-url URL] [--small-rows 1000] [--repeats 40]

Seeds the database up to `--rows` measurements (bench.seed) if it holds fewer, and a small one
(`--small-url`; for SQLite, by default, a file beside the large one) up to `--small-rows`;
starts the service on each with uvicorn, times each request `--repeats` times on both, in
turns, and prints p50/p95 in ms and the large-to-small ratio of each list's p50; then the
query plans of the SQL those requests ran on the large database (EXPLAIN).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

import httpx
from sqlalchemy import Engine, event, func, select
from sqlalchemy.engine import make_url

from app.columns import Position
from app.db.measurement_store import Filters
from app.db.models import MeasurementRow
from app.db.session import make_engine, session_factory
from app.schemas.measurement_bodies import encode_cursor
from app.services import history
from app.settings import Settings
from bench.load import cpu_seconds
from bench.seed import seed
from bench.server import free_port, uvicorn_server

HTML = {"accept": "text/html"}
ROUNDS = 5  # each request is timed in this many blocks per server, in turns
MODEL_BRANCH = "model=llama-3.1-8b&branch=main"


class Request(NamedTuple):
    """A request to time; `bounded`: its cost should not grow with the table."""

    name: str
    path: str
    headers: dict[str, str]
    bounded: bool = True


@dataclass(frozen=True, slots=True)
class Database:
    """A seeded database: its row count, busiest workload and the cursor at its middle row."""

    url: str
    count: int
    busiest: str
    middle: str


def list_requests(middle: str, second: str) -> list[Request]:
    """The list requests to time: the cursors are the database's own."""
    return [
        Request("list, newest 50", "/measurements?limit=50", {}),
        Request("list, newest 50, page 2 (cursor)", f"/measurements?limit=50&cursor={second}", {}),
        Request("list, mid-table (cursor)", f"/measurements?limit=50&cursor={middle}", {}),
        Request("list, model + branch", f"/measurements?{MODEL_BRANCH}&limit=20", {}),
        Request(
            "list, chip + label",
            "/measurements?chip=h100-sxm5-80gb&label=nightly-decode&limit=20",
            {},
        ),
        Request(
            "list, date range, page 3 (offset)",
            "/measurements?since=2026-06-01T00:00:00Z&until=2026-06-08T00:00:00Z"
            "&limit=20&offset=40",
            {},
        ),
        Request("list, HTML history page", "/measurements?model=llama-3.1-8b", HTML),
        Request(
            "list, HTML history page, older (cursor)",
            f"/measurements?{urlencode({'model': 'llama-3.1-8b', 'cursor': middle})}",
            HTML,
        ),
    ]


def comparison_requests(workload_key: str) -> list[Request]:
    """One workload's comparison: its cost grows with the workload's runs (up to the 1,000
    shown), so its ratio is not the table's."""
    return [
        Request("workload comparison, JSON", f"/workloads/{workload_key}", {}, bounded=False),
        Request("workload comparison, HTML page", f"/workloads/{workload_key}", HTML, False),
    ]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p95) of `samples`."""
    cuts = statistics.quantiles(samples, n=20)
    return statistics.median(samples), cuts[18]


@contextmanager
def recording(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """Every (SQL, parameters) that `engine` sends while the block runs."""
    sent: list[tuple[str, Any]] = []

    def listener(*args: Any) -> None:
        sent.append((args[2], args[3]))  # (conn, cursor, statement, parameters, ...)

    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", listener)


def explain(engine: Engine, statement: str, parameters: Any, *, avoid_scans: bool) -> str:
    """The plan `engine`'s database chooses for `statement`; with `avoid_scans`, PostgreSQL
    is told to shun table scans (a small table is scanned whatever its indexes)."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.begin() as connection:
        if avoid_scans and not sqlite:
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
        prefix = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
        rows = connection.exec_driver_sql(prefix + statement, parameters).all()
    return "\n".join(" ".join(str(v) for v in row[-1:]) for row in rows)


def query_plans(
    database_url: str, workload_key: str, *, avoid_scans: bool = False
) -> list[tuple[str, str]]:
    """(SQL, plan) of each query the list and comparison run, captured from the real code."""
    engine = make_engine(Settings(database_url=database_url).database_url)
    sessions = session_factory(engine)
    filtered = Filters(model_id="llama-3.1-8b", branch="main")
    july = Position(datetime(2026, 7, 1, tzinfo=UTC), 1)  # a page after a cursor
    calls: list[Callable[[], object]] = [
        lambda: history.listing(sessions, Filters(), limit=50, offset=0, after=None),
        lambda: history.listing(sessions, filtered, limit=20, offset=0, after=None),
        lambda: history.listing(sessions, filtered, limit=20, offset=0, after=july),
        lambda: history.compare(
            sessions, workload_key, baseline_id=None, baseline_branch="main", threshold=0.1
        ),
    ]
    plans = []
    try:
        for call in calls:
            with recording(engine) as sent:
                call()
            for statement, parameters in sent:
                if statement.lstrip().upper().startswith("SELECT"):
                    plans.append(
                        (statement, explain(engine, statement, parameters, avoid_scans=avoid_scans))
                    )
    finally:
        engine.dispose()
    return plans


def busiest_workload(database_url: str) -> tuple[int, str]:
    """(rows stored, the workload key with the most runs)."""
    engine = make_engine(Settings(database_url=database_url).database_url)
    try:
        with engine.connect() as connection:
            count = connection.scalar(select(func.count()).select_from(MeasurementRow)) or 0
            key = connection.scalar(
                select(MeasurementRow.workload_key)
                .group_by(MeasurementRow.workload_key)
                .order_by(func.count().desc())
                .limit(1)
            )
    finally:
        engine.dispose()
    return count, key or ""


def seeded(database_url: str, rows: int) -> Database:
    """The database at `database_url`, seeded up to `rows` measurements if it holds fewer."""
    count, _ = busiest_workload(database_url) if _has_table(database_url) else (0, "")
    if count < rows:
        seed(database_url, rows - count)
    count, key = busiest_workload(database_url)
    engine = make_engine(Settings(database_url=database_url).database_url)
    try:
        with engine.connect() as connection:
            created_at, row_id = connection.execute(
                select(MeasurementRow.created_at, MeasurementRow.id)
                .order_by(MeasurementRow.created_at.desc(), MeasurementRow.id.desc())
                .offset(count // 2)
                .limit(1)
            ).one()
    finally:
        engine.dispose()
    return Database(database_url, count, key, encode_cursor(Position(created_at, row_id)))


def small_url(database_url: str) -> str:
    """The small database beside a SQLite file: lists.db -> lists-small.db."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise ValueError("give --small-url for a database other than a SQLite file")
    path = Path(url.database)
    return str(url.set(database=str(path.with_stem(f"{path.stem}-small"))))


def _time(client: httpx.Client, path: str, headers: dict[str, str]) -> float:
    began = time.perf_counter()
    client.get(path, headers=headers).raise_for_status()
    return (time.perf_counter() - began) * 1e3


@dataclass(slots=True)
class Timing:
    """One request's latencies (ms) on one server, and the server's CPU time they took (s)."""

    samples: list[float]
    cpu_s: float = 0.0

    def run(self, client: httpx.Client, pid: int, request: Request, count: int) -> None:
        """Send `request` `count` times, one after another."""
        began = cpu_seconds(pid)
        self.samples += [_time(client, request.path, request.headers) for _ in range(count)]
        self.cpu_s += cpu_seconds(pid) - began

    def summary(self) -> tuple[float, float, float]:
        """(p50 ms, p95 ms, server CPU ms per request)."""
        return (*percentiles(self.samples), self.cpu_s * 1e3 / len(self.samples))


def main(argv: list[str] | None = None) -> None:
    """Seed if needed, time the requests through uvicorn on both databases, print the table
    and the plans."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small-url")
    parser.add_argument("--small-rows", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--no-plans", action="store_true")
    args = parser.parse_args(argv)
    try:
        small = seeded(args.small_url or small_url(args.database_url), args.small_rows)
    except ValueError as exc:
        parser.error(str(exc))
    large = seeded(args.database_url, args.rows)
    backend = make_engine(Settings(database_url=large.url).database_url).dialect.name
    print(
        f"{backend}: {large.count:,} and {small.count:,} measurements; the busiest workloads "
        f"have {large.busiest[:12]}… and {small.busiest[:12]}…"
    )
    print(
        f"| request | p50 ms, {small.count:,} rows | p50 ms, {large.count:,} rows "
        f"| p95 ms, {large.count:,} rows | server CPU ms, {small.count:,} rows "
        f"| server CPU ms, {large.count:,} rows | ratio of p50s | ratio of CPU |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    with ExitStack() as stack:
        servers = []
        for database in (small, large):
            server = stack.enter_context(uvicorn_server(database.url, free_port()))
            client = stack.enter_context(httpx.Client(base_url=server.base, timeout=60))
            second = client.get("/measurements?limit=50").json()["next"]
            timed = list_requests(database.middle, second) + comparison_requests(database.busiest)
            servers.append((client, server.pid, timed))
        for index, request in enumerate(servers[0][2]):
            timings = (Timing([]), Timing([]))
            for client, _, timed in servers * 2:  # warm caches
                _time(client, timed[index].path, request.headers)
            for _ in range(ROUNDS):  # in turns, so that a busy machine slows both alike
                for timing, (client, pid, timed) in zip(timings, servers, strict=True):
                    timing.run(client, pid, timed[index], args.repeats // ROUNDS)
            (small_p50, _, small_cpu), (large_p50, large_p95, large_cpu) = (
                t.summary() for t in timings
            )
            ratios = (
                f"{large_p50 / small_p50:.2f}x | {large_cpu / small_cpu:.2f}x"
                if request.bounded
                else "- | -"
            )
            print(
                f"| {request.name} | {small_p50:.1f} | {large_p50:.1f} | {large_p95:.1f} "
                f"| {small_cpu:.2f} | {large_cpu:.2f} | {ratios} |"
            )
    if not args.no_plans:
        for statement, plan in query_plans(large.url, large.busiest):
            print(f"\n```sql\n{' '.join(statement.split())}\n```\n```\n{plan}\n```")


def _has_table(database_url: str) -> bool:
    engine = make_engine(Settings(database_url=database_url).database_url)
    try:
        with engine.connect() as connection:
            return engine.dialect.has_table(connection, "measurements")
    finally:
        engine.dispose()


if __name__ == "__main__":
    main()
