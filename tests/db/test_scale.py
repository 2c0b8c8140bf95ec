"""The seeding script behind bench.data_scale, at small scale, and the plans of the real
queries: every list, history and comparison query reads an index, never the whole table
(an index scan stops after the rows its LIMIT asks for).

(The timings at a million rows are in bench/, not here.)
"""

import sqlalchemy as sa

from app.db.session import make_engine
from app.settings import Settings
from bench.data_scale import busiest_workload, query_plans
from bench.seed import seed


def test_seeding_stores_judged_measurements_of_many_workloads(empty_database):
    workloads = seed(empty_database, 300)
    count, key = busiest_workload(empty_database)
    assert count == 300
    assert workloads >= 100  # chips x models x batches x lengths that the catalogs know
    engine = make_engine(Settings(database_url=empty_database).database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT ratio, measured_time_s / expected_time_s AS quotient, branch "
                    "FROM measurements WHERE workload_key = :key"
                ),
                {"key": key},
            ).all()
            dates = connection.execute(
                sa.text("SELECT min(created_at) < max(created_at) FROM measurements")
            ).scalar()
    finally:
        engine.dispose()
    assert len(rows) >= 2
    for ratio, quotient, _ in rows:  # each run is judged: ratio = measured / expected, >= 1
        assert ratio >= 1
        assert abs(ratio - quotient) <= 1e-9 * ratio
    assert dates  # spread in time, so that lists have an order to follow


def test_list_and_comparison_queries_read_indexes(empty_database):
    seed(empty_database, 300)
    _, key = busiest_workload(empty_database)
    plans = query_plans(empty_database, key, avoid_scans=True)
    # pages and counts of three lists; history, latest row, baseline, previous, family
    assert len(plans) >= 11
    for statement, plan in plans:
        if empty_database.startswith("sqlite"):
            assert "TEMP B-TREE" not in plan, (statement, plan)  # the index gives the order
            for line in plan.splitlines():
                if "measurements" in line and not line.startswith("SEARCH"):
                    # a scan in an index's order that stops after the LIMIT's rows
                    assert line.startswith("SCAN") and "INDEX" in line, (statement, plan)
                    assert "LIMIT" in statement, (statement, plan)
        else:
            assert "Seq Scan" not in plan, (statement, plan)
            assert "Index" in plan, (statement, plan)
