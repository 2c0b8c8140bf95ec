"""Shared fixtures: the app with the real catalogs on an empty SQLite database for each test
(SharedApp), a client, the app served over loopback, and a PostgreSQL database per test
(tests/postgres.py).

Also the suite's own rules: Hypothesis draws reproducibly in CI, and the engine is held to a
coverage of its own (ENGINE_FAIL_UNDER), beside the total's (`fail_under` in pyproject.toml).
"""

import io
import os
import shutil
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from coverage.exceptions import NoDataError
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import settings

from app.main import create_app
from app.settings import Settings
from tests.postgres import ENV, check_reachable, embedded_server, fresh_database

# CI: the same examples on every run (derived from each test, not drawn at random) and no
# example database, so a failure is the code's, never a rare draw; it replays locally with
# HYPOTHESIS_PROFILE=ci. Local runs keep drawing new examples and remembering failing ones.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "default")
)

# The test client sends its requests to http://testserver: a host the service answers for in
# the tests, beside its defaults (ROOFCHECK_ALLOWED_HOSTS, app/settings.py).
os.environ.setdefault("ROOFCHECK_ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "app" / "engine"
ENGINE_FAIL_UNDER = 97.0
_ENGINE_REPORT = pytest.StashKey[str]()


def pytest_report_header() -> str:
    configured = os.environ.get(ENV)
    if configured:
        return f"postgresql: {ENV}={configured}"
    return "postgresql: a server started for this run (tests/postgres.py)"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """Fail the run when app/engine's coverage is under ENGINE_FAIL_UNDER (after pytest-cov
    has collected the data, with xdist that of every worker, and judged the total; nothing to
    do without --cov)."""
    result = yield
    plugin = session.config.pluginmanager.getplugin("_cov")
    if plugin is None or plugin.cov_controller is None or plugin.cov_total is None:
        return result
    if session.config.option.collectonly:
        return result
    try:
        engine = plugin.cov_controller.cov.report(include=[f"{ENGINE}/*"], file=io.StringIO())
    except NoDataError:
        engine = 0.0
    message = f"app/engine coverage: {engine:.2f}% (fail under {ENGINE_FAIL_UNDER:.0f}%)"
    session.config.stash[_ENGINE_REPORT] = message
    if engine < ENGINE_FAIL_UNDER:
        session.config.stash[_ENGINE_REPORT] = "ERROR: " + message
        session.testsfailed += 1
    return result


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    message = terminalreporter.config.stash.get(_ENGINE_REPORT, None)
    if message is not None:
        terminalreporter.write_line(message, red=message.startswith("ERROR"), bold=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the test PostgreSQL server: ROOFCHECK_TEST_POSTGRES_URL, or one started for
    this session. Unreachable or failing to start: the tests that need it fail, never skip."""
    configured = os.environ.get(ENV)
    if configured:
        try:
            check_reachable(configured)
        except ConnectionError as exc:
            pytest.fail(f"{exc} (unset {ENV} to start a server for the tests)", pytrace=False)
        yield configured
        return
    with embedded_server() as started:
        yield started


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for this test alone."""
    with fresh_database(postgres_server) as url:
        yield url


class SharedApp:
    """The app of the tests that ask for `app`, `client` or `url`: built once per session (per
    xdist worker), its SQLite file reset before each of those tests to a copy of a template
    migrated once, so that each test starts on a database of its own at the cost of a file
    copy, not of an app."""

    def __init__(self, folder: Path) -> None:
        self.template = folder / "template.db"
        self.database = folder / "roofcheck.db"
        create_app(_sqlite(self.template)).state.database.engine.dispose()
        shutil.copyfile(self.template, self.database)
        self.app = create_app(_sqlite(self.database))

    def reset(self) -> None:
        """Put the migrated, empty template back in place of the database."""
        self.app.state.database.engine.dispose()  # closes the connections to the file
        for sidecar in ("-wal", "-shm"):  # a write-ahead log left by the last test
            Path(f"{self.database}{sidecar}").unlink(missing_ok=True)
        shutil.copyfile(self.template, self.database)


def _sqlite(path: Path) -> Settings:
    """The shared app's settings: its calculation budget is the largest allowed, since its
    tests check answers, not the machine's speed; a CI machine busy with the other worker
    once held a one-row table past the default second, and its designed 503 failed a test of
    escaping. The budget's own 503 is tested on apps of their own (tests/api/test_budget.py,
    test_table_scale.py)."""
    return Settings(database_url=f"sqlite:///{path}", calculation_budget_s=60.0)


@pytest.fixture(scope="session")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> SharedApp:
    return SharedApp(tmp_path_factory.mktemp("db"))


@pytest.fixture(autouse=True)
def _fresh_database(request: pytest.FixtureRequest) -> None:
    """A test of the shared app starts on an empty database: no test sees another's rows.
    (Autouse: Hypothesis's tests share their fixtures across examples, and refuse
    function-scoped ones among their arguments.)"""
    if "shared_app" in request.fixturenames:
        shared: SharedApp = request.getfixturevalue("shared_app")
        shared.reset()


@pytest.fixture(scope="session")
def app(shared_app: SharedApp) -> FastAPI:
    return shared_app.app


@pytest.fixture(scope="session")
def client(app: FastAPI) -> TestClient:
    return TestClient(app)


@pytest.fixture(scope="session")
def url(app: FastAPI) -> Iterator[str]:
    """The app served by uvicorn on a free loopback port (for the CLI and the browser)."""
    with serve(app) as base:
        yield base


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """`app` served by uvicorn, in a thread, on a free loopback port: its base URL; its
    OpenAPI schema built first, as the service's start-up builds it (app.main)."""
    app.openapi()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
