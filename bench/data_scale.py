"""The data queries at scale: list, filters and one workload's comparison, through the app.

    .venv/bin/python -m bench.data_scale DATABASE_URL [--rows 1000000] [--repeats 40]

Seeds the database up to `--rows` measurements (bench.seed) if it holds fewer, starts the
service on it with uvicorn, times each request `--repeats` times one after another, and prints
p50/p95 in ms; then the query plans of the SQL those requests ran (EXPLAIN).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import Engine, event, func, select

from app.db.measurement_store import Filters
from app.db.models import MeasurementRow
from app.db.session import make_engine, session_factory
from app.services import history
from app.settings import Settings
from bench.seed import seed
from bench.server import free_port, uvicorn_server

HTML = {"accept": "text/html"}


def requests(workload_key: str) -> list[tuple[str, str, dict[str, str]]]:
    """(name, path, headers) of the requests to time."""
    return [
        ("list, newest 50", "/measurements?limit=50", {}),
        ("list, model + branch", "/measurements?model=llama-3.1-8b&branch=main&limit=20", {}),
        (
            "list, chip + label",
            "/measurements?chip=h100-sxm5-80gb&label=nightly-decode&limit=20",
            {},
        ),
        (
            "list, date range, page 3",
            "/measurements?since=2026-06-01T00:00:00Z&until=2026-06-08T00:00:00Z"
            "&limit=20&offset=40",
            {},
        ),
        ("list, HTML history page", "/measurements?model=llama-3.1-8b", HTML),
        ("workload comparison, JSON", f"/workloads/{workload_key}", {}),
        ("workload comparison, HTML page", f"/workloads/{workload_key}", HTML),
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
    calls: list[Callable[[], object]] = [
        lambda: history.listing(
            sessions,
            Filters(model_id="llama-3.1-8b", branch="main"),
            limit=20,
            offset=0,
            after=None,
        ),
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


def main(argv: list[str] | None = None) -> None:
    """Seed if needed, time the requests through uvicorn, print the table and the plans."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--no-plans", action="store_true")
    args = parser.parse_args(argv)
    count, _ = busiest_workload(args.database_url) if _has_table(args.database_url) else (0, "")
    if count < args.rows:
        seed(args.database_url, args.rows - count)
    count, key = busiest_workload(args.database_url)
    backend = make_engine(Settings(database_url=args.database_url).database_url).dialect.name
    print(f"{backend}: {count:,} measurements; the busiest workload {key[:12]}…")
    print("| request | p50 ms | p95 ms |\n|---|---:|---:|")
    with (
        uvicorn_server(args.database_url, free_port()) as server,
        httpx.Client(base_url=server.base, timeout=60) as client,
    ):
        for name, path, headers in requests(key):
            samples = []
            for _ in range(args.repeats + 2):  # the first two warm caches
                began = time.perf_counter()
                client.get(path, headers=headers).raise_for_status()
                samples.append((time.perf_counter() - began) * 1e3)
            p50, p95 = percentiles(samples[2:])
            print(f"| {name} | {p50:.1f} | {p95:.1f} |")
    if not args.no_plans:
        for statement, plan in query_plans(args.database_url, key):
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
