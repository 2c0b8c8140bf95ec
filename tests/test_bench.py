"""The load benchmark measures what its rows say: a repeated question is answered from the
cache, a distinct one never is (bench/load.py), with both load generators."""

import asyncio
import os
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings
from bench import instructions
from bench.load import (
    TARGETS,
    TRIVIAL_TARGET,
    Load,
    Target,
    drive,
    main,
    median_pair,
    table,
    wrk_drive,
)
from bench.server import Server
from tests.conftest import serve

DISTINCT = {t.name: t for t in TARGETS if t.distinct}
REPEATED = next(t for t in TARGETS if t.name == "GET /check")


def test_distinct_targets_ask_a_new_question_each_time() -> None:
    # every calculation endpoint has a distinct row, held to 0.4x of /health
    paths = {t.path.split("?")[0] for t in DISTINCT.values()}
    assert paths == {"/optimal-batch", "/expected-time", "/check", "/memory-fit", "/scaling"}
    for target in DISTINCT.values():
        assert target.target == 0.4
        assert target.request(1) != target.request(2)
    path, body = DISTINCT["POST /check (matmul), distinct"].request(7)
    assert path == "/check" and body is not None
    assert body["workload"] == {"kind": "matmul", "m": 7, "n": 4096, "k": 4096, "dtype": "bf16"}
    assert REPEATED.request(1) == REPEATED.request(2)
    # a CI job's check at each commit: the same workload, a new measured time
    path, _ = DISTINCT["GET /check, new measured time"].request(7)
    assert path == "/check?chip=a100&model=llama-8b&batch=8&measured_ms=7"


def test_rounds_go_over_every_row_in_turns_and_report_the_median_ratio() -> None:
    # a fake load generator: /health costs 100 µs of server CPU, the rows 200, 400, 250, 500
    # and 300 µs in turns; each measured right after a /health
    costs = iter([200.0, 400.0, 250.0, 500.0, 300.0, 1000.0])
    order: list[str] = []

    def run(target: Target, seconds: float) -> Load:
        order.append(target.name)
        cpu = 100.0 if target is TRIVIAL_TARGET or seconds == 1.0 else next(costs)
        return Load(1.0, 1.0, 1.0, cpu)

    first, second = TARGETS[0], TARGETS[1]
    rows = table(run, 3.0, (first, second), rounds=3)
    warm = [TRIVIAL_TARGET.name, first.name, second.name]
    health = TRIVIAL_TARGET.name
    assert order == warm + [health, first.name, health, second.name] * 3
    # first: 200, 250, 300 µs -> ratios 0.5, 0.4, 0.33: the median pair is 250 µs (0.4x);
    # second: 400, 500, 1000 -> 0.25, 0.2, 0.1: 500 µs. With two rounds, the lower middle
    (_, firsts), (_, seconds) = rows
    assert [load.server_cpu_us for load, _ in firsts] == [200.0, 250.0, 300.0]
    assert median_pair(firsts)[0].server_cpu_us == 250.0
    assert median_pair(seconds)[0].server_cpu_us == 500.0
    assert median_pair(firsts[:2])[0].server_cpu_us == 250.0


def test_rounds_below_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--rounds", "0", "--no-engine"])
    assert stopped.value.code == 2
    assert "--rounds must be at least 1, got 0" in capsys.readouterr().err


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    """An app of this module's own: the session's has answers cached by whichever tests ran
    before (a matmul of m=4096 is one of the distinct rows' questions too)."""
    database = tmp_path_factory.mktemp("bench") / "roofcheck.db"
    return create_app(Settings(database_url=f"sqlite:///{database}"))


@pytest.fixture(scope="module")
def url(app: FastAPI) -> Iterator[str]:
    with serve(app) as base:
        yield base


def _hits(app: FastAPI) -> int:
    hits: int = app.state.catalogs.answers.hits
    return hits


def _httpx(url: str, target: Target) -> None:
    async def run() -> None:
        async with httpx.AsyncClient(base_url=url) as client:
            await drive(client, target, 0.3, 4, os.getpid())

    asyncio.run(run())


@pytest.mark.parametrize("name", sorted(DISTINCT))
def test_a_distinct_row_never_hits_the_cache(app: FastAPI, url: str, name: str) -> None:
    server = Server(url, os.getpid())
    before = _hits(app)
    _httpx(url, DISTINCT[name])
    load = wrk_drive(server, DISTINCT[name], 1, 4)  # raises on any non-2xx answer
    assert load.requests_per_s > 0
    assert _hits(app) == before


def test_a_repeated_row_is_answered_from_the_cache(app: FastAPI, url: str) -> None:
    # asked twice, the answer is stored (the cache's second sight): each driver's requests are
    # then hits, however few a loaded machine lets it send in its time
    path, _ = REPEATED.request(0)
    for _ in range(2):
        httpx.get(url + path).raise_for_status()
    before = _hits(app)
    _httpx(url, REPEATED)
    after_httpx = _hits(app)
    wrk_drive(Server(url, os.getpid()), REPEATED, 1, 4)
    assert before < after_httpx < _hits(app)


def test_instruction_rows_count_only_the_requests_after_the_warm_up(tmp_path, monkeypatch):
    # bench/instructions.py: /health, every distinct calculation row and the stored
    # measurement, run in-process; the counting is turned on after the warm-up and off after
    # the counted requests, once
    monkeypatch.setenv("ROOFCHECK_DATABASE_URL", f"sqlite:///{tmp_path}/bench.db")
    assert instructions.ROWS[0] is TRIVIAL_TARGET
    assert {t.name for t in instructions.ROWS[1:]} == {*DISTINCT, "POST /measurements"}
    sent: list[int] = []
    counting: list[tuple[bool, int]] = []
    asked = instructions.ask

    async def ask(app, target, n):
        sent.append(n)
        return await asked(app, target, n)

    def count(on: bool) -> None:
        counting.append((on, len(sent)))

    monkeypatch.setattr(instructions, "ask", ask)
    for target in instructions.ROWS:
        sent.clear()
        counting.clear()
        asyncio.run(instructions.run_requests(target, 3, count, warm_up=2))
        assert sent == [1, 2, 3, 4, 5]  # a new question each time for a distinct row
        assert counting == [(True, 2), (False, 5)]


def test_instructions_refuse_a_request_that_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFCHECK_DATABASE_URL", f"sqlite:///{tmp_path}/bench.db")
    unknown = Target("unknown chip", "GET", "/expected-time?chip=nope&model=llama-8b")
    with pytest.raises(RuntimeError, match="HTTP 404"):
        asyncio.run(instructions.run_requests(unknown, 1, lambda on: None, warm_up=0))
