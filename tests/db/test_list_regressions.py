"""The regression marks of the history list, on SQLite and PostgreSQL: a page's windows are
read in one query (measurement_store.windows), each the very runs `window` reads for its row,
and the list marks exactly the runs that their own pages call regressions."""

import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from app.db import measurement_store as store
from app.db.models import MeasurementRow

MATMUL = {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
HTML = {"accept": "text/html"}
KEYS = ("one", "two", "three")


@pytest.fixture
def client(db_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(db_app, base_url="http://localhost") as client:
        yield client
    db_app.state.database.engine.dispose()


def post(client: TestClient, ms: float, **fields: object) -> int:
    body = {"chip": "a100", "workload": MATMUL, "measured_ms": [ms], **fields}
    response = client.post("/measurements", json=body)
    assert response.status_code == 201, response.text
    identifier: int = response.json()["id"]
    return identifier


def copies(db_app: FastAPI, rows: list[tuple[str, list[float]]]) -> list[int]:
    """Store `rows` (workload key, measured milliseconds) in place of every row, as copies of
    the one measurement stored: their ids, oldest first."""
    engine = db_app.state.database.engine
    columns = [c for c in MeasurementRow.__table__.columns if c.key != "id"]
    with engine.begin() as connection:
        template = connection.execute(sa.select(*columns).limit(1)).one()._asdict()
        connection.execute(sa.delete(MeasurementRow))
        values = [
            template | {"workload_key": key, "measured_values": ms, "measured_unit": "ms"}
            for key, ms in rows
        ]
        if values:
            connection.execute(sa.insert(MeasurementRow), values)
        return list(connection.scalars(sa.select(MeasurementRow.id).order_by(MeasurementRow.id)))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(KEYS), st.lists(st.floats(0.5, 2.0), min_size=1, max_size=3)),
        max_size=30,
    ),
    picks=st.lists(st.integers(0, 40), max_size=12),
    size=st.integers(1, 6),
)
def test_a_pages_windows_are_the_runs_the_gate_reads_for_each_row(
    db_app, client, rows, picks, size
):
    if not client.get("/measurements").json()["items"]:
        post(client, 1.0)  # the template of the copies
    stored = copies(db_app, rows)
    # listed: any of the stored runs, in any order, and an id never stored (40 past the end)
    listed = list(dict.fromkeys(stored[p] if p < len(stored) else 10_000 + p for p in picks))
    with Session(db_app.state.database.engine) as session:
        found = store.windows(session, listed, size=size)
        expected = {}
        for id_ in listed:
            run = store.baseline(session, id_)
            if run is not None:
                earlier = store.window(
                    session, run.workload_key, before_id=id_, size=size, branch=None
                )
                expected[id_] = (run, earlier)
    assert found == expected


def test_the_list_marks_the_runs_their_pages_call_regressions(db_app, client):
    # one repeat each, so against at most 10 runs no ordering reaches p <= 0.05 (the smallest
    # p of one value against n is 1 / (n + 1) >= 1/11): the test cannot decide, and a run over
    # the threshold (10%) of the window's median is a regression outright only when it is also
    # beyond the threshold of the window's slowest run; otherwise it is only suspected (not a
    # regression, not marked).
    #   runs 1-4: 1.00, 1.01, 0.99, 1.00 ms, then 5: 1.30 ms, +30.0% over the four's median
    #   (1.00 ms) and over 1.1 x their slowest (1.111 ms): a regression; 6: 1.12 ms, +12.0% over
    #   the five's median (1.00 ms) but under 1.1 x their slowest (1.43 ms): suspected; 7:
    #   1.50 ms, over 1.1 x the six's slowest (1.43 ms), +49.3% over their median (1.00 and
    #   1.01: 1.005 ms): a regression; 8, on another branch: 1.05 ms against the median of the
    #   seven, 1.01 ms: +4.0%, none.
    times = (1.00, 1.01, 0.99, 1.00, 1.30, 1.12, 1.50)
    ids = [post(client, ms, branch="main") for ms in times]
    ids.append(post(client, 1.05, branch="pr"))
    regressed = {
        i for i in ids if client.get(f"/measurements/{i}").json()["comparison"]["regression"]
    }
    suspected = client.get(f"/measurements/{ids[5]}").json()["comparison"]
    assert suspected["suspected"] and not suspected["regression"]
    assert regressed == {ids[4], ids[6]}
    engine = db_app.state.database.engine
    seen: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many):
        seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        page = client.get("/history", headers=HTML).text
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    marked = re.findall(
        r'<tr class="regressed">\s*<td data-label="#"><a href="/measurements/(\d+)"', page
    )
    assert {int(i) for i in marked} == regressed
    assert '<span aria-hidden="true">▲</span> regression +30.0%</strong>' in page
    assert '<span aria-hidden="true">▲</span> regression +49.3%</strong>' in page
    assert page.count("flag-regressed") == 2
    # a filtered page judges its rows against every run before them, listed or not: run 7
    # on its own is still +49.3% against the six before it
    alone = client.get("/history", params={"since": "2000-01-01", "branch": "main"}).text
    assert alone.count("flag-regressed") == 2
    # the windows of the whole page: one query (the one that reads the repeats), whose ranges
    # are read from the index on (workload_key, id)
    windows = [(s, p) for s, p in seen if "measured_values" in s]
    assert len(windows) == 1, [s for s, _ in windows]
    if engine.dialect.name == "sqlite":
        statement, parameters = windows[0]
        with engine.connect() as connection:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            details = " | ".join(str(row[-1]) for row in plan)
        assert "INDEX ix_measurements_workload_key_id (workload_key=? AND id>? AND id<?)" in (
            details
        ), details
        assert "SCAN" not in details, details  # no table read row by row
