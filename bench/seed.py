"""Fill a database with many measurements, judged by the real engine:

    .venv/bin/python -m bench.seed DATABASE_URL [--rows 1000000]

A few hundred distinct workloads (chips x models x batches x context lengths) are judged once
each through the API's own code; the stored rows repeat them with varied measured times,
branches, labels, commits and dates spread over a year, oldest first (as a service fills up).
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from app.db.measurement_store import column_values
from app.db.models import MeasurementRow
from app.main import create_app
from app.schemas.measurement_bodies import MeasurementIn
from app.services.recording import judged_row
from app.settings import Settings

CHIPS = ("a100", "h100", "h200-sxm-141gb", "mi300x", "l4")
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mistral-7b-v0.1")
BATCHES = (1, 4, 16, 64)
SEQ_LENS = (2048, 8192)
BRANCHES = ("main", "main", "main", "release", "feature-a", "feature-b")
LABELS = ("nightly-decode", "pr-check", "sweep", None)
INSERT_CHUNK = 5_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def _templates(settings: Settings) -> list[dict[str, Any]]:
    """One judged row per workload the catalogs accept, as column values."""
    app = create_app(settings)  # migrates and records the catalog version
    catalogs = app.state.catalogs
    templates = []
    for chip, model, batch, seq_len in itertools.product(CHIPS, MODELS, BATCHES, SEQ_LENS):
        body = MeasurementIn.model_validate(
            {
                "chip": chip,
                "measured_ms": 1.0,
                "workload": {"kind": "transformer", "model": model, "batch": batch}
                | {"seq_len": seq_len},
            }
        )
        try:
            row = judged_row(catalogs, body)
        except LookupError:  # a chip or model this catalog lacks
            continue
        templates.append(column_values(row))
    app.state.database.engine.dispose()
    return templates


def _row(template: dict[str, Any], index: int, total: int, rng: random.Random) -> dict[str, Any]:
    """`template` measured once more: slower than its roofline by a random factor."""
    factor = rng.lognormvariate(0.3, 0.4) + 1.0
    measured = template["expected_time_s"] * factor
    return template | {
        "created_at": START + timedelta(seconds=365 * 86_400 * index / total),
        "measured_values": [measured * 1e3],
        "measured_unit": "ms",
        "measured_time_s": measured,
        "ratio": factor,
        "branch": rng.choice(BRANCHES),
        "label": rng.choice(LABELS),
        "git_commit": f"{rng.getrandbits(160):040x}",
        "hostname": f"runner-{rng.randrange(32)}",
    }


def seed(database_url: str, rows: int, *, rng_seed: int = 0) -> int:
    """Add `rows` measurements to the database at `database_url`; returns how many workloads."""
    settings = Settings(database_url=database_url)
    templates = _templates(settings)
    rng = random.Random(rng_seed)
    app = create_app(settings)
    engine = app.state.database.engine
    try:
        for start in range(0, rows, INSERT_CHUNK):
            chunk = [
                _row(rng.choice(templates), i, rows, rng)
                for i in range(start, min(start + INSERT_CHUNK, rows))
            ]
            with engine.begin() as connection:
                connection.execute(insert(MeasurementRow), chunk)
        # fresh statistics for the planner; VACUUM also lets PostgreSQL scan indexes alone
        analyse = "ANALYZE" if engine.dialect.name == "sqlite" else "VACUUM ANALYZE measurements"
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql(analyse)
    finally:
        engine.dispose()
    return len(templates)


def main(argv: list[str] | None = None) -> None:
    """Seed the database named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url")
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    workloads = seed(args.database_url, args.rows)
    elapsed = time.perf_counter() - began
    print(f"seeded {args.rows:,} measurements of {workloads} workloads in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
